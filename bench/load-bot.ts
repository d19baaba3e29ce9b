import { loadConfig } from "../src/config.js";
import { startVmbot } from "../src/start.js";

/**
 * The bot for the load benchmark, in a process of its own as in production, so that its memory
 * is its own and it has a core to itself: configured from the environment like `npm start`,
 * with `BENCH_MAX_CONNECTIONS_PER_CLIENT` (a number, or `none`) as its per-client bound. Prints
 * `port <n>` once it listens; stops on SIGTERM.
 */
async function main(): Promise<void> {
  const bound = process.env.BENCH_MAX_CONNECTIONS_PER_CLIENT ?? "none";
  const bot = await startVmbot(loadConfig(process.env), {
    host: "127.0.0.1",
    httpLimits: {
      maxConnectionsPerClient: bound === "none" ? Number.POSITIVE_INFINITY : Number(bound),
    },
  });
  process.stdout.write(`port ${bot.port}\n`);
  process.on("SIGTERM", () => {
    void bot.stop(2_000).then(() => process.exit(0));
  });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
