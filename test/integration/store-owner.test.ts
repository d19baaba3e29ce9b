import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startFakeGitlab,
  VM_PIPELINE_INPUTS,
  type FakeGitlab,
} from "../../sandbox/simulators/gitlab/index.js";
import { createSlackSigner, stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { CHANNEL, fakeBotEnv, PROJECT_PATH, REQUESTER } from "../support/harness.js";
import { portOf, runBot, type BotProcess } from "../support/process.js";
import { TEST_SECRETS } from "../support/secrets.js";

// One bot per store, and a damaged file, are a SQLite store's (src/store/owner.ts): replicas share
// PostgreSQL by design (leader.test.ts). These bots are on SQLite files whichever engine the run
// uses.
let slack: FakeSlack;
let gitlab: FakeGitlab;
let dir: string;
const running: BotProcess[] = [];

beforeAll(async () => {
  slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, role: "maintainer", inputs: VM_PIPELINE_INPUTS }],
  });
  dir = mkdtempSync(join(tmpdir(), "vmbot-owner-"));
});

afterAll(async () => {
  for (const bot of running) {
    if (bot.child.exitCode === null && bot.child.signalCode === null) {
      bot.child.kill("SIGTERM");
      await bot.exited;
    }
  }
  await Promise.all([slack.close(), gitlab.close()]);
  rmSync(dir, { recursive: true, force: true });
});

const start = (db: string) => {
  const bot = runBot(fakeBotEnv({ slack, gitlab }, db, { LOG_LEVEL: "info" }), dir);
  running.push(bot);
  return bot;
};

const healthOf = async (port: number) => (await fetch(`http://127.0.0.1:${port}/healthz`)).status;

describe("two bot processes on one store", () => {
  it("refuses the second, naming the store and its lock; the first carries on; a SIGKILLed owner's lock never blocks", async () => {
    const db = join(dir, "vmbot.sqlite");
    const first = start(db);
    const port = await portOf(first);
    expect(await healthOf(port)).toBe(200);

    const slackCalls = slack.calls.length;
    const gitlabRequests = gitlab.requests.length;
    const second = start(db);
    expect(await second.exited).toBe(1);
    expect(second.stderr()).toContain(
      `vmbot cannot start: another vmbot process is using the store ${db} (it holds the lock on ${db}-owner).`,
    );
    // It stopped before asking Slack or GitLab anything.
    expect(slack.calls.length).toBe(slackCalls);
    expect(gitlab.requests.length).toBe(gitlabRequests);

    // The first one still serves: healthy, and a request goes through.
    expect(await healthOf(port)).toBe(200);
    const signer = createSlackSigner({
      eventsUrl: `http://127.0.0.1:${port}/slack/events`,
      signingSecret: TEST_SECRETS.signingSecret,
      slack,
    });
    await signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
    await slack.waitFor("views.open");
    const view = slack.views.at(-1)!;
    await signer.viewSubmission({
      view,
      values: stateValuesFor(view, { vm_ip: "192.168.1.50/24" }),
      userId: REQUESTER,
    });
    await slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes(`pipeline #${gitlab.pipelines[0]?.id ?? 0}`),
    );
    expect(gitlab.pipelines).toHaveLength(1);

    // The owner dies without a chance to clean up: the kernel drops its lock.
    first.child.kill("SIGKILL");
    await first.exited;
    const third = start(db);
    const thirdPort = await portOf(third);
    expect(await healthOf(thirdPort)).toBe(200);
    third.child.kill("SIGTERM");
    expect(await third.exited).toBe(0);
  }, 60_000);

  it("refuses to start on a damaged store, saying so and what to do", async () => {
    const db = join(dir, "damaged.sqlite");
    writeFileSync(db, "SQLite format 3\u0000".padEnd(4096, "\u00ff"));
    const bot = start(db);
    expect(await bot.exited).toBe(1);
    expect(bot.stderr()).toMatch(
      new RegExp(
        `vmbot cannot start: the store at VMBOT_DB \\(${db}\\) cannot be opened: .*damaged.*Restore it from a backup`,
      ),
    );
  }, 30_000);
});
