import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { startFakeGitlab, type FakeGitlab } from "../fakes/gitlab.js";
import { createSlackSigner, stateValuesFor } from "../fakes/slack-signer.js";
import { startFakeSlack, type FakeSlack } from "../fakes/slack.js";
import { CHANNEL, PLATFORM_INPUTS, PROJECT_PATH, REQUESTER } from "../support/harness.js";
import { runBot, type BotProcess } from "../support/process.js";
import { TEST_SECRETS } from "../support/secrets.js";

let slack: FakeSlack;
let gitlab: FakeGitlab;
let dir: string;

beforeAll(async () => {
  slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, inputs: PLATFORM_INPUTS }],
  });
  dir = mkdtempSync(join(tmpdir(), "vmbot-life-"));
});

afterAll(async () => {
  await Promise.all([slack.close(), gitlab.close()]);
  rmSync(dir, { recursive: true, force: true });
});

/** Reads the port from the bot's "vmbot is running" log line. */
async function portOf(bot: BotProcess): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < 15_000) {
    for (const line of bot.stdout().split("\n")) {
      if (!line.includes('"vmbot is running"')) continue;
      return (JSON.parse(line) as { port: number }).port;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the bot did not start:\n${bot.stdout()}\n${bot.stderr()}`);
}

describe("the bot as a process", () => {
  it("finishes in-flight work on SIGTERM, closes the store and exits 0 within 10 seconds", async () => {
    const db = join(dir, "vmbot.sqlite");
    const bot = runBot(
      {
        SLACK_BOT_TOKEN: TEST_SECRETS.botToken,
        SLACK_SIGNING_SECRET: TEST_SECRETS.signingSecret,
        SLACK_API_URL: slack.apiUrl,
        GITLAB_URL: gitlab.url,
        GITLAB_TOKEN: TEST_SECRETS.gitlabToken,
        GITLAB_PROJECT: PROJECT_PATH,
        APPROVERS: "U0APPROVER",
        ADMINS: "U0ADMIN",
        VMBOT_DB: db,
        PORT: "0",
        LOG_LEVEL: "debug",
      },
      dir,
    );
    const port = await portOf(bot);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);

    const signer = createSlackSigner({
      eventsUrl: `http://127.0.0.1:${port}/slack/events`,
      signingSecret: TEST_SECRETS.signingSecret,
      slack,
    });
    await signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
    await slack.waitFor("views.open");
    const view = slack.views.at(-1)!;
    // GitLab is slow: the pipeline is still being created when the signal arrives.
    gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, { delayMs: 1_500 });
    const submitted = await signer.viewSubmission({
      view,
      values: stateValuesFor(view, { vm_ip: "192.168.1.50/24" }),
      userId: REQUESTER,
    });
    expect(submitted.status).toBe(200);
    await slack.waitFor("chat.postMessage");

    const signalled = Date.now();
    bot.child.kill("SIGTERM");
    expect(await bot.exited).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(10_000);

    // The in-flight request was finished before the exit, not dropped.
    expect(gitlab.pipelines).toHaveLength(1);
    const update = slack.callsTo("chat.update").at(-1);
    expect(JSON.stringify(update?.args.blocks)).toContain(`pipeline #${gitlab.pipelines[0]!.id}`);
    const store = openSqliteStore(db);
    const [request] = store.listActive();
    expect(request).toMatchObject({ pipelineId: gitlab.pipelines[0]!.id, status: "queued" });
    store.close();
    expect(bot.stdout()).toContain('"msg":"stopped"');
  });
});
