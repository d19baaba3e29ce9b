import { pino, type DestinationStream, type Logger as PinoLogger } from "pino";
import type { Logger as BoltLogger, LogLevel } from "@slack/bolt";
import { LogLevel as BoltLogLevel } from "@slack/bolt";
import type { Redactor } from "./redact.js";

export type Logger = PinoLogger;

/** Paths whose values are secrets whatever they hold. */
const REDACT_PATHS = [
  "token",
  "*.token",
  "botToken",
  "appToken",
  "signingSecret",
  "secret",
  "*.secret",
  "password",
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  'headers["private-token"]',
  '*.headers["private-token"]',
  'headers["x-gitlab-token"]',
  'headers["x-vault-token"]',
  "config.slack.botToken",
  "config.slack.appToken",
  "config.slack.signingSecret",
  "config.gitlab.token",
  "config.gitlab.webhookSecret",
  "config.vault.auth.token",
  "config.vault.auth.secretId",
  "secretId",
  "*.secretId",
  "secret_id",
  "client_token",
  "*.client_token",
  "api_token",
  "*.api_token",
  "config.proxmox.token",
];

export interface LoggerOptions {
  level: string;
  redactor: Redactor;
  /** Where lines go; stdout by default. */
  destination?: DestinationStream;
  /** This replica's name, on every line, where several replicas share one store. */
  replica?: string | undefined;
}

/** JSON logs, secrets removed by path and then, on the final line, by value. */
export function createLogger({ level, redactor, destination, replica }: LoggerOptions): Logger {
  return pino(
    {
      level,
      base: { service: "vmbot", ...(replica === undefined ? {} : { replica }) },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      hooks: { streamWrite: (line) => redactor(line) },
    },
    destination ?? pino.destination({ sync: true }),
  );
}

const BOLT_TO_PINO: Record<LogLevel, string> = {
  [BoltLogLevel.DEBUG]: "debug",
  [BoltLogLevel.INFO]: "info",
  [BoltLogLevel.WARN]: "warn",
  [BoltLogLevel.ERROR]: "error",
};

/** Bolt's level for a pino level, so LOG_LEVEL governs Bolt's lines too. */
export function boltLevel(level: string): LogLevel {
  if (level === "trace" || level === "debug") return BoltLogLevel.DEBUG;
  if (level === "info") return BoltLogLevel.INFO;
  if (level === "warn") return BoltLogLevel.WARN;
  return BoltLogLevel.ERROR;
}

/** Lets Bolt (and its Web API client) log through pino. */
export function boltLogger(log: Logger): BoltLogger {
  let child = log.child({ component: "bolt" });
  const write =
    (level: "debug" | "info" | "warn" | "error") =>
    (...msg: unknown[]) => {
      const error = msg.find((m): m is Error => m instanceof Error);
      const text = msg
        .filter((m) => m !== error)
        .map((m) => (typeof m === "string" ? m : JSON.stringify(m)))
        .join(" ");
      if (error) child[level]({ err: error }, text || error.message);
      else child[level](text);
    };
  return {
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    setLevel: (level: LogLevel) => {
      child.level = BOLT_TO_PINO[level];
    },
    getLevel: () => {
      const level = Object.values(BoltLogLevel).find((l) => BOLT_TO_PINO[l] === child.level);
      return level ?? BoltLogLevel.INFO;
    },
    setName: (name: string) => {
      child = log.child({ component: name });
    },
  };
}
