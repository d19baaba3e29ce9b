/**
 * What the bot does with an error nothing caught (src/main.ts): a stray rejection is logged and
 * the bot keeps serving; an uncaught exception is logged and the bot stops cleanly with status 1,
 * for its supervisor to start it again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeGitlab, VM_PIPELINE_INPUTS } from "../../src/simulators/gitlab.js";
import { startFakeSlack } from "../../src/simulators/slack.js";
import { eventually, fakeBotEnv, PROJECT_PATH } from "../support/harness.js";
import { portOf, runBot } from "../support/process.js";
import { TEST_SECRETS } from "../support/secrets.js";

const TIMEOUT = 60_000;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startBot() {
  const slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  const gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, inputs: VM_PIPELINE_INPUTS }],
  });
  const dir = mkdtempSync(join(tmpdir(), "vmbot-last-resort-"));
  const bot = runBot(
    fakeBotEnv({ slack, gitlab }, join(dir, "vmbot.sqlite"), { POLL_INTERVAL_MS: "3600000" }),
    dir,
    { preload: ["test/support/stray-errors.ts"] },
  );
  cleanups.push(async () => {
    if (bot.child.exitCode === null && bot.child.signalCode === null) bot.child.kill("SIGKILL");
    await bot.exited;
    await Promise.all([slack.close(), gitlab.close()]);
    rmSync(dir, { recursive: true, force: true });
  });
  return { bot, port: await portOf(bot) };
}

describe("an error nothing caught", () => {
  it(
    "a rejection nobody waited for is logged and the bot keeps serving",
    async () => {
      const { bot, port } = await startBot();
      bot.child.kill("SIGUSR2");
      await eventually(
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
