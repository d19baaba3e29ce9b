/**
 * What the bot does with an error nothing caught (src/main.ts): a stray rejection is logged and
 * the bot keeps serving; an uncaught exception is logged and the bot stops cleanly with status 1,
 * for its supervisor to start it again.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startBotProcess } from "../support/bot-process.js";
import { waitFor } from "../support/wait.js";

const TIMEOUT = 60_000;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startBot() {
  const { bot, port, stop } = await startBotProcess({
    preload: ["test/support/stray-errors.ts"],
  });
  cleanups.push(stop);
  return { bot, port };
}

describe("an error nothing caught", () => {
  it(
    "a rejection nobody waited for is logged and the bot keeps serving",
    async () => {
      const { bot, port } = await startBot();
      bot.child.kill("SIGUSR2");
      await waitFor(
        () => (bot.stdout().includes("a failure nothing waited for") ? true : undefined),
        "the stray rejection's log line",
      );
      expect(bot.stdout()).toContain("a stray rejection for the last-resort test");
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      bot.child.kill("SIGTERM");
      expect(await bot.exited).toBe(0);
    },
    TIMEOUT,
  );

  it(
    "an uncaught exception is logged, and the bot stops cleanly and exits 1",
    async () => {
      const { bot } = await startBot();
      bot.child.kill("SIGWINCH");
      expect(await bot.exited).toBe(1);
      expect(bot.stdout()).toContain("an unexpected error left the bot in an unknown state");
      expect(bot.stdout()).toContain("a stray exception for the last-resort test");
      // It stopped as on SIGTERM: the store was closed after in-flight work.
      expect(bot.stdout()).toContain('"msg":"stopped"');
    },
    TIMEOUT,
  );
});
