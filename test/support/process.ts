import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { inject } from "vitest";
import { recordOutput } from "./logs.js";
import { waitFor } from "./wait.js";

const ROOT = resolve(import.meta.dirname, "../..");

export interface BotProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/**
 * The two entry points: the bot's own (`src/main.ts`, what the production image runs) and
 * `npm start`'s (`sandbox/main.ts`: the sandbox without Slack credentials, else the bot).
 */
const ENTRIES = {
  bot: { source: "src/main.ts", built: "dist/main.js" },
  start: { source: "sandbox/main.ts", built: "dist-sandbox/sandbox/main.js" },
  /** The bot with a crash point (the first of `args`): test/support/crash-entry.ts. */
  crash: { source: "test/support/crash-entry.ts", built: undefined },
} as const;

/** The bot's entry point and the preload modules, compiled once for the run (test/setup). */
function bundled(file: string, extension = ".js"): string {
  return resolve(inject("botBundle"), file.replace(/\.ts$/, extension));
}

/**
 * Runs an entry point (`src/main.ts` unless `entry: "start"`) in a child process with only the
 * given environment (plus PATH). Its output is recorded for the suite's secret scan.
 * `built: true` runs its compiled JavaScript (`npm run build`, or `npm run build:sandbox` for
 * `npm start`'s, first); `preload` modules (paths from the repository's root) are imported
 * before it. Otherwise the entry runs as compiled once for the test run (test/setup/bot-bundle.ts),
 * in plain Node, with the code V8 compiled for an earlier start (test/support/code-cache.ts).
 */
export function runBot(
  env: Record<string, string>,
  cwd = ROOT,
  options: {
    built?: boolean;
    preload?: string[];
    entry?: keyof typeof ENTRIES;
    /** Arguments after the entry point. */
    args?: string[];
  } = {},
): BotProcess {
  const entry = ENTRIES[options.entry ?? "bot"];
  if (options.built === true && entry.built === undefined) {
    throw new Error(`the ${options.entry ?? "bot"} entry point runs from source only`);
  }
  const preload = (options.preload ?? []).flatMap((file) => [
    "--import",
    pathToFileURL(bundled(file)).href,
  ]);
  const args =
    options.built === true
      ? [resolve(ROOT, entry.built ?? entry.source), ...(options.args ?? [])]
      : [
          ...preload,
          bundled("test/support/code-cache.ts"),
          bundled(entry.source, ".cjs"),
          ...(options.args ?? []),
        ];
  const child = spawn(process.execPath, args, {
    cwd,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<number | null>((resolveExit) => {
    child.on("exit", (code) => {
      recordOutput(out);
      recordOutput(err);
      resolveExit(code);
    });
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** The port a bot process listens on, once it logs that it is running. */
export function portOf(bot: BotProcess, timeoutMs = 20_000): Promise<number> {
  const failed = () => new Error(`the bot did not start:\n${bot.stdout()}\n${bot.stderr()}`);
  return waitFor(
    () => {
      for (const line of bot.stdout().split("\n")) {
        if (line.includes('"vmbot is running"')) return (JSON.parse(line) as { port: number }).port;
      }
      if (bot.child.exitCode !== null || bot.child.signalCode !== null) throw failed();
      return undefined;
    },
    "the bot to start",
    { timeoutMs, intervalMs: 25, detail: () => failed().message },
  );
}
