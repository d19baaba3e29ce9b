import { existsSync, readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { ConfigError, configSecrets, loadConfig, type Config } from "./config.js";
import { createRedactor } from "./redact.js";
import { startVmbot, StartupError } from "./start.js";

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

async function main(): Promise<void> {
  try {
    config = loadConfig(environment());
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
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
  let signals = 0;
  const shutdown = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) process.exit(1);
    running.log.info({ signal }, "received signal");
    // Ten seconds in all: eight for in-flight work, the rest to close.
    const hardStop = setTimeout(() => process.exit(1), 10_000);
    hardStop.unref();
    void running.stop(8_000).then(() => process.exit(0));
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}

main().catch((error: unknown) => {
  const redact = createRedactor(config ? configSecrets(config) : []);
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  fail(redact(`vmbot stopped on an unexpected error: ${detail}`));
});
