import { existsSync, readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { ConfigError, configSecrets, loadConfig, type Config } from "./config.js";
import { chooseMode, sandboxSettings } from "./mode.js";
import { createRedactor } from "./redact.js";
import { startVmbot, StartupError, type RunningVmbot } from "./start.js";

/** The environment, with a `.env` file in the working directory filling in what is unset. */
function environment(): Record<string, string | undefined> {
  const file = ".env";
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, "utf8")) : {};
  return { ...fromFile, ...process.env };
}

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

let config: Config | undefined;

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
function stopOnSignals(running: { log: RunningVmbot["log"]; stop(): Promise<void> }): void {
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

/** The sandbox: the real bot against a simulated Slack, GitLab, Proxmox and Vault, and a page. */
async function sandbox(env: Record<string, string | undefined>): Promise<void> {
  const settings = sandboxSettings(env);
  const { startSandbox } = await import("./sandbox/sandbox.js");
  const running = await startSandbox(settings);
  const rule = "─".repeat(76);
  process.stdout.write(
    [
      rule,
      `  vmbot sandbox: open ${running.url}`,
      "  Slack, GitLab, Proxmox and Vault are simulated on this machine; nothing real is touched.",
      "  To connect a real Slack workspace instead, set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET",
      "  (see .env.example and the README), or VMBOT_MODE=slack to require them.",
      rule,
      "",
    ].join("\n"),
  );
  stopOnSignals({ log: running.bot.log, stop: () => running.stop() });
}

async function main(): Promise<void> {
  const env = environment();
  try {
    if (chooseMode(env) === "sandbox") {
      await sandbox(env);
      return;
    }
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    if (error instanceof StartupError) fail(`vmbot cannot start: ${error.message}`);
    throw error;
  }
  let bot;
  const crashAt = config.crashAt;
  try {
    bot = await startVmbot(config, {
      ...(crashAt === undefined
        ? {}
        : {
            // Crash tests: die here as a power cut would, with nothing flushed or closed.
            onCrashPoint: (point: string) => {
              if (point === crashAt) process.kill(process.pid, "SIGKILL");
            },
          }),
    });
  } catch (error) {
    if (error instanceof StartupError) fail(`vmbot cannot start: ${error.message}`);
    throw error;
  }
  const running = bot;
  stopOnSignals({ log: running.log, stop: () => running.stop(8_000) });
}

main().catch((error: unknown) => {
  const redact = createRedactor(config ? configSecrets(config) : []);
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  fail(redact(`vmbot stopped on an unexpected error: ${detail}`));
});
