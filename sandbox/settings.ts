/**
 * The sandbox's few settings, from the environment. Its store is never the bot's own
 * (`VMBOT_DB`): the sandbox empties its store on every start.
 */
import { realpathSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { z } from "zod";
import { ConfigError } from "../src/config.js";
import { parseLeaseDuration } from "../src/vm/lease.js";

type RawEnv = Readonly<Record<string, string | undefined>>;

const blank = (value: string | undefined): boolean => value === undefined || value.trim() === "";

export interface SandboxSettings {
  port: number;
  dbPath: string;
  logLevel: string;
  paceMs: number;
  /**
   * How long a VM is lent in the sandbox (VMBOT_SANDBOX_LEASE, 3 minutes by default): its owner is
   * reminded when a third of it has passed, and its end opens a destroy request. Null: no lease.
   */
  leaseMs: number | null;
}

/** A whole number from `min` to `max` (of `unit`), `fallback` when unset. */
function wholeNumber(name: string, unit: string, min: number, max: number, fallback: number) {
  const error = `${name} must be ${unit} from ${min} to ${max}`;
  return z.coerce
    .number({ error })
    .int({ error })
    .min(min, { error })
    .max(max, { error })
    .default(fallback);
}

const sandboxSchema = z.object({
  PORT: wholeNumber("PORT", "a whole number", 0, 65535, 3000),
  VMBOT_SANDBOX_DB: z.string().trim().min(1).default("./data/sandbox.sqlite"),
  VMBOT_DB: z.string().trim().min(1).default("./data/vmbot.sqlite"),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
      error: "LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent",
    })
    .default("warn"),
  VMBOT_SANDBOX_PACE_MS: wholeNumber("VMBOT_SANDBOX_PACE_MS", "milliseconds", 50, 60_000, 1500),
  VMBOT_SANDBOX_LEASE: z
    .string()
    .default("3m")
    .transform((text, ctx) => {
      if (text.trim().toLowerCase() === "never") return null;
      const ms = parseLeaseDuration(text);
      if (ms === undefined || ms < 30_000) {
        ctx.addIssue({
          code: "custom",
          message: "VMBOT_SANDBOX_LEASE must be a duration of 30s or more (e.g. 3m, 1h) or never",
        });
        return z.NEVER;
      }
      return ms;
    }),
});

/** A store's path with its folder's symbolic links resolved, when the folder exists. */
function canonical(path: string): string {
  const absolute = resolve(path);
  try {
    return join(realpathSync(dirname(absolute)), basename(absolute));
  } catch {
    return absolute;
  }
}

/**
 * Whether two store paths may name one file: the same path once symbolic links are resolved, the
 * same path but for case where file names usually ignore it (macOS, Windows), or, when both
 * exist, the same file (a hard link).
 */
function sameFile(a: string, b: string): boolean {
  const [first, second] = [canonical(a), canonical(b)];
  if (first === second) return true;
  if (
    (process.platform === "darwin" || process.platform === "win32") &&
    first.toLowerCase() === second.toLowerCase()
  ) {
    return true;
  }
  const one = statSync(first, { throwIfNoEntry: false });
  const other = statSync(second, { throwIfNoEntry: false });
  if (one === undefined || other === undefined) return false;
  return one.dev === other.dev && one.ino === other.ino;
}

/** The sandbox's few settings; its store is never the bot's own (`VMBOT_DB`). */
export function sandboxSettings(env: RawEnv): SandboxSettings {
  const present = Object.fromEntries(
    Object.entries(env).filter(([, value]) => !blank(value)),
  ) as Record<string, string>;
  const parsed = sandboxSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError([...new Set(parsed.error.issues.map((issue) => issue.message))]);
  }
  const settings = parsed.data;
  if (sameFile(settings.VMBOT_SANDBOX_DB, settings.VMBOT_DB)) {
    throw new ConfigError([
      "VMBOT_SANDBOX_DB must not be the bot's own store (VMBOT_DB): the sandbox empties its store on every start",
    ]);
  }
  return {
    port: settings.PORT,
    dbPath: settings.VMBOT_SANDBOX_DB,
    logLevel: settings.LOG_LEVEL,
    paceMs: settings.VMBOT_SANDBOX_PACE_MS,
    leaseMs: settings.VMBOT_SANDBOX_LEASE,
  };
}
