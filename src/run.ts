import { existsSync, readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { ConfigError, configSecrets, loadConfig, type Config } from "./config.js";
import { createRedactor } from "./redact.js";
import { startVmbot, StartupError, type RunningVmbot, type StartOptions } from "./start.js";

export type RawEnv = Record<string, string | undefined>;

/** The environment, with a `.env` file in the working directory filling in what is unset. */
export function environment(): RawEnv {
  const file = ".env";
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, "utf8")) : {};
  return { ...fromFile, ...process.env };
}

export function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/**
 * Ends the process on an error met before the bot runs: a configuration or start-up problem with
 * its own words, anything else with its stack, every one of `secrets` hidden.
 */
export function failToStart(error: unknown, secrets: readonly string[] = []): never {
  if (error instanceof ConfigError) fail(error.message);
  if (error instanceof StartupError) fail(`vmbot cannot start: ${error.message}`);
  const redact = createRedactor([...secrets]);
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  fail(redact(`vmbot stopped on an unexpected error: ${detail}`));
}

/**
 * Stops on SIGTERM or SIGINT: in-flight work gets eight of the ten seconds.
 *
 * Last resort for an error nothing else caught, once the bot runs:
 * - a promise rejected with nobody waiting for it (`unhandledRejection`) is logged and the bot
 *   keeps serving: such a promise is work that already failed, and nothing was left half done by
 *   it (Node's default, since Node 15, would exit on it);
 * - an exception thrown out of a callback (`uncaughtException`) may have stopped any code
 *   half way, and Node's documentation says it is not safe to go on after one. It is logged,
 *   the bot stops as on SIGTERM and exits with status 1, for its supervisor (Docker's restart
 *   policy, Kubernetes, systemd) to start it again: every outside effect is in the store's
 *   journal, so a restart repeats nothing and loses nothing.
 */
export function stopOnSignals(running: { log: RunningVmbot["log"]; stop(): Promise<void> }): void {
  let stops = 0;
  const shutdown = (code: 0 | 1) => {
    stops += 1;
    if (stops > 1) process.exit(1);
    const hardStop = setTimeout(() => process.exit(1), 10_000);
    hardStop.unref();
    running.stop().then(
      () => process.exit(code),
      (error: unknown) => {
        running.log.error({ err: error }, "could not stop cleanly");
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    running.log.info({ signal }, "received signal");
    shutdown(0);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  process.on("unhandledRejection", (reason: unknown) => {
    running.log.error({ err: reason }, "a failure nothing waited for; carrying on");
  });
  process.on("uncaughtException", (error: Error) => {
    running.log.fatal(
      { err: error },
      "an unexpected error left the bot in an unknown state; stopping, to be started again",
    );
    shutdown(1);
  });
}

/**
 * The bot for a real Slack workspace: reads its configuration from `env`, starts, and runs until
 * a signal stops it. A configuration or start-up problem ends the process with status 1.
 * `options` are the start's own (tests start the bot through their entry with hooks of theirs).
 */
export async function runVmbot(env: RawEnv, options: StartOptions = {}): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    failToStart(error);
  }
  let running: RunningVmbot;
  try {
    running = await startVmbot(config, options);
  } catch (error) {
    failToStart(error, configSecrets(config));
  }
  stopOnSignals({ log: running.log, stop: () => running.stop(8_000) });
}
