import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeGitlab, type FakeGitlab } from "../../sandbox/simulators/gitlab/index.js";
import { createSlackSigner, stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import {
  CHANNEL,
  fakeBotEnv,
  PLATFORM_INPUTS,
  PROJECT_PATH,
  REQUESTER,
} from "../support/harness.js";
import { portOf, runBot } from "../support/process.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { storeLocation, withStoreAt, type StoreLocation } from "../support/store-at.js";
import { waitFor } from "../support/wait.js";

let slack: FakeSlack;
let gitlab: FakeGitlab;
let dir: string;
const stores: StoreLocation[] = [];

beforeAll(async () => {
  slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, inputs: PLATFORM_INPUTS }],
  });
  dir = mkdtempSync(join(tmpdir(), "vmbot-life-"));
});

afterAll(async () => {
  await Promise.all([slack.close(), gitlab.close(), ...stores.map((store) => store.drop())]);
  rmSync(dir, { recursive: true, force: true });
});

/** The bot's store on the run's engine (test/support/store-at.ts), dropped after the file. */
async function newStore(file: string): Promise<StoreLocation> {
  const store = await storeLocation(dir, file);
  stores.push(store);
  return store;
}

function botEnv(db: string, extra: Record<string, string> = {}): Record<string, string> {
  return fakeBotEnv({ slack, gitlab }, db, extra);
}

describe("the bot as a process", () => {
  it("finishes in-flight work on SIGTERM, closes the store and exits 0 within 10 seconds", async () => {
    const { db } = await newStore("vmbot.sqlite");
    const bot = runBot(botEnv(db), dir);
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
    const [request] = await withStoreAt(db, (store) => store.listActive());
    expect(request).toMatchObject({ pipelineId: gitlab.pipelines[0]!.id, status: "queued" });
    expect(bot.stdout()).toContain('"msg":"stopped"');
  });

  it("loses nothing and posts the plan once when killed while the plan runs and started again", async () => {
    const { db, restartEnv } = await newStore("killed.sqlite");
    const env = botEnv(db, { POLL_INTERVAL_MS: "500", ...restartEnv });
    const first = runBot(env, dir);
    const signer = createSlackSigner({
      eventsUrl: `http://127.0.0.1:${await portOf(first)}/slack/events`,
      signingSecret: TEST_SECRETS.signingSecret,
      slack,
    });
    await signer.slashCommand({ text: "create db-01", userId: REQUESTER, channelId: CHANNEL });
    await slack.waitFor("views.open", (call) => JSON.stringify(call.args.view).includes("db-01"));
    const view = slack.views.at(-1)!;
    const pipelinesBefore = gitlab.pipelines.length;
    await signer.viewSubmission({
      view,
      values: stateValuesFor(view, { vm_name: "db-01", vm_ip: "192.168.1.60/24" }),
      userId: REQUESTER,
    });
    const pipeline = await waitFor(() => gitlab.pipelines[pipelinesBefore], "the pipeline");
    // The plan starts; the bot notices it is planning, then dies without any cleanup.
    gitlab.advance(pipeline.id);
    gitlab.advance(pipeline.id);
    await slack.waitFor("chat.update", (call) => call.args.text === "VM db-01 — Planning");
    first.child.kill("SIGKILL");
    await first.exited;

    // The plan finishes while no bot is running.
    for (let i = 0; i < 10 && gitlab.job(pipeline.id, "tf:plan").status !== "success"; i += 1) {
      gitlab.advance(pipeline.id);
    }
    const uploadsBefore = slack.uploads.length;
    const second = runBot(env, dir);
    await portOf(second);
    await slack.waitFor(
      "chat.update",
      (call) => call.args.text === "VM db-01 — Awaiting approval",
      10_000,
    );
    // A few more passes (each lists the project's pipelines while the request waits): the plan
    // had its chances to be posted twice.
    const listed = () => gitlab.requestsTo("GET", /\/pipelines$/).length;
    const listedBefore = listed();
    await waitFor(() => (listed() >= listedBefore + 3 ? true : undefined), "three more passes", {
      timeoutMs: 10_000,
    });
    second.child.kill("SIGTERM");
    await second.exited;

    expect(gitlab.pipelines.length).toBe(pipelinesBefore + 1);
    expect(slack.uploads.length - uploadsBefore).toBe(1);
    const planUpdates = slack
      .callsTo("chat.update")
      .filter((call) => call.args.text === "VM db-01 — Awaiting approval");
    expect(planUpdates).toHaveLength(1);
    const [request, audit] = await withStoreAt(db, async (store) => {
      const [active] = await store.listActive();
      return [active, await store.listAudit(active?.id)] as const;
    });
    expect(request).toMatchObject({ status: "awaiting_approval", pipelineId: pipeline.id });
    expect(audit.map((a) => a.action)).toEqual([
      "requested",
      "pipeline_created",
      "planning",
      "plan_uploaded",
      "awaiting_approval",
    ]);
  });
});
