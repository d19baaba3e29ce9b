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

/** Stops on SIGTERM or SIGINT: in-flight work gets eight of the ten seconds. */
function stopOnSignals(running: { log: RunningVmbot["log"]; stop(): Promise<void> }): void {
  let signals = 0;
  const shutdown = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) process.exit(1);
    running.log.info({ signal }, "received signal");
    const hardStop = setTimeout(() => process.exit(1), 10_000);
    hardStop.unref();
    running.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        running.log.error({ err: error }, "could not stop cleanly");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
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
