import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  startFakeGitlab,
  VM_PIPELINE_INPUTS,
  type FakeGitlab,
} from "../../sandbox/simulators/gitlab/index.js";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { fakeBotEnv, PROJECT_PATH } from "./harness.js";
import { portOf, runBot, type BotProcess } from "./process.js";
import { TEST_SECRETS } from "./secrets.js";
import { storeLocation } from "./store-at.js";

export interface SimulatedBot {
  slack: FakeSlack;
  gitlab: FakeGitlab;
  bot: BotProcess;
  /** The bot's HTTP port, once it says it is running. */
  port: number;
  /** Kills the bot if it still runs, closes the simulators and removes its folder. */
  stop: () => Promise<void>;
}

/**
 * The bot in a process of its own (as `npm start` runs it) against the simulated Slack and
 * GitLab, with its own store on the run's engine (store-at.ts); the tracker left to the test (`POLL_INTERVAL_MS` an hour).
 */
export async function startBotProcess(
  options: { env?: Record<string, string>; preload?: string[] } = {},
): Promise<SimulatedBot> {
  const slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  const gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, inputs: VM_PIPELINE_INPUTS }],
  });
  const dir = mkdtempSync(join(tmpdir(), "vmbot-process-"));
  const store = await storeLocation(dir);
  const bot = runBot(
    fakeBotEnv({ slack, gitlab }, store.db, {
      POLL_INTERVAL_MS: "3600000",
      ...options.env,
    }),
    dir,
    options.preload === undefined ? {} : { preload: options.preload },
  );
  const stop = async () => {
    if (bot.child.exitCode === null && bot.child.signalCode === null) bot.child.kill("SIGKILL");
    await bot.exited;
    await Promise.all([slack.close(), gitlab.close(), store.drop()]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    return { slack, gitlab, bot, port: await portOf(bot), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
