import { REQUEST_STATUSES } from "../../src/store/store.js";
import { describe, expect, it } from "vitest";
import {
  askForVm,
  CHANNEL,
  harnessPerTest,
  REQUESTER,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";

/**
 * The fault matrix: GitLab and Slack misbehaving in the ways they do. Each case ends in the
 * documented outcome and a clear message; none hangs the bot or leaves a request stuck. (Vault
 * sealed then unsealed, and Proxmox timing out, are in vault.test.ts and capacity.test.ts.)
 */

const start = harnessPerTest();

/** Submits the form; returns when the request message shows how it ended (or its pipeline). */
async function submitForm(h: Harness, name = "web-01") {
  await h.signer.slashCommand({ text: `create ${name}`, userId: REQUESTER, channelId: CHANNEL });
  await h.slack.waitFor("views.open", (call) => JSON.stringify(call.args.view).includes(name));
  const view = h.slack.views.at(-1)!;
  await h.signer.viewSubmission({
    view,
    values: stateValuesFor(view, {
      vm_name: name,
      vm_ip: `192.168.1.${50 + (await h.bot.store.listByStatus(REQUEST_STATUSES)).length}/24`,
    }),
    userId: REQUESTER,
  });
  return waitFor(
    async () =>
      (await h.bot.store.listAudit()).find((e) =>
        ["pipeline_created", "failed"].includes(e.action),
      ),
    "the request to start or fail",
    20_000,
  );
}

const messageOf = (h: Harness) =>
  h.slack.messages.find((m) => m.channel === CHANNEL && m.thread_ts === undefined);

describe("GitLab faults", () => {
  it("429 with Retry-After on creating the pipeline: waits, then creates exactly one", async () => {
    const h = await start();
    h.gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, { status: 429, retryAfter: 1 });
    const started = Date.now();
    expect((await submitForm(h)).action).toBe("pipeline_created");
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(h.gitlab.pipelines).toHaveLength(1);
    expect(h.gitlab.requestsTo("POST", /\/pipeline$/)).toHaveLength(2);
  });

  it("500 on creating the pipeline: not retried blindly, looked up, then a clear failure", async () => {
    const h = await start();
    h.gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, { status: 500 });
    expect((await submitForm(h)).action).toBe("failed");
    expect(h.gitlab.pipelines).toHaveLength(0);
    expect(h.gitlab.requestsTo("POST", /\/pipeline$/)).toHaveLength(1);
    const request = (await h.bot.store.getRequest((await h.bot.store.listAudit())[0]!.requestId!))!;
    expect(request.status).toBe("failed");
    expect(request.error).toBe(
      "GitLab answered with an error (500) when the bot tried to create the pipeline. GitLab may be down or upgrading; try again later.",
    );
    await h.slack.waitFor("chat.update", (call) => call.args.text === "VM web-01 — Failed");
  });

  it("a dropped connection on creating the pipeline: looked up by request ID first, then a clear failure", async () => {
    const h = await start();
    h.gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, "reset");
    expect((await submitForm(h)).action).toBe("failed");
    // Not created again blindly: the bot looked for a pipeline carrying its request ID.
    expect(h.gitlab.requestsTo("POST", /\/pipeline$/)).toHaveLength(1);
    expect(h.gitlab.requestsTo("GET", /\/pipelines$/)).toHaveLength(1);
    const requestId = (await h.bot.store.listAudit())[0]!.requestId!;
    // The failure is audited first, then the request moves to failed with its words.
    const failed = await waitFor(async () => {
      const request = await h.bot.store.getRequest(requestId);
      return request?.status === "failed" ? request : undefined;
    }, "the request to fail");
    expect(failed.error).toMatch(
      /^GitLab at http:\/\/127\.0\.0\.1:\d+ could not be reached \(.+\), so the bot could not create the pipeline\./,
    );
  });

  it.each([
    ["in step with the bot's", 0],
    ["five minutes behind the bot's", 5 * 60_000],
  ])(
    "a create whose answer is lost after GitLab made the pipeline, GitLab's clock %s: found by its request ID, and not made again",
    async (_, behindMs) => {
      const h = await start({ gitlab: { now: () => new Date(Date.now() - behindMs) } });
      h.gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, { afterEffect: "reset" });
      expect((await submitForm(h)).action).toBe("pipeline_created");
      expect(h.gitlab.requestsTo("POST", /\/pipeline$/)).toHaveLength(1);
      expect(h.gitlab.pipelines).toHaveLength(1);
      const requestId = (await h.bot.store.listAudit())[0]!.requestId!;
      const request = (await h.bot.store.getRequest(requestId))!;
      expect(request).toMatchObject({ status: "queued", pipelineId: h.gitlab.pipelines[0]!.id });
      // Found by its tag: nothing in the message says the bot is unsure it is the request's.
      expect(request.notes.join(" ")).not.toContain("restarted while starting");
    },
  );

  it("500s while following a pipeline: retried on the next passes, and the request moves on", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    runUntilSettled(h, pipelineId, "tf:plan");
    h.gitlab.failNext({ method: "GET", path: /\/jobs$/ }, { status: 500 }, { times: 2 });
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    await waitFor(
      () => (messageOf(h)?.text === "VM web-01 — Awaiting approval" ? true : undefined),
      "the plan message",
    );
  });

  it("a 30-second hang on one pipeline does not hold up the others, and ends in a retry", async () => {
    const h = await start({ gitlabTimeoutMs: 3_000 });
    const stuck = await askForVm(h, "web-01");
    const moving = await askForVm(h, "web-02");
    await h.bot.tracker.tick();
    runUntilSettled(h, stuck, "tf:plan");
    runUntilSettled(h, moving, "tf:plan");
    h.gitlab.failNext(
      { method: "GET", path: new RegExp(`/pipelines/${stuck}/jobs$`) },
      { delayMs: 30_000 },
    );
    const pass = h.bot.tracker.tick();
    // The other request's plan is posted while the first one's read still hangs.
    await h.slack.waitFor(
      "chat.update",
      (call) => call.args.text === "VM web-02 — Awaiting approval",
      2_500,
    );
    const started = Date.now();
    await pass;
    // The hung read gave up at the bot's timeout, not after 30 seconds.
    expect(Date.now() - started).toBeLessThan(5_000);
    await h.bot.tracker.tick();
    await h.slack.waitFor(
      "chat.update",
      (call) => call.args.text === "VM web-01 — Awaiting approval",
    );
  }, 20_000);
});

describe("Slack faults", () => {
  it("ratelimited on posting the request message: waits as told, and posts once", async () => {
    const h = await start();
    h.slack.failNext("chat.postMessage", { status: 429, retryAfter: 1 });
    expect((await submitForm(h)).action).toBe("pipeline_created");
    const posts = h.slack.callsTo("chat.postMessage");
    expect(posts.filter((call) => call.ok)).toHaveLength(1);
    expect(h.slack.messages.filter((m) => m.channel === CHANNEL)).toHaveLength(1);
    expect(h.gitlab.pipelines).toHaveLength(1);
  });

  it.each([
    ["a 500 after Slack took it", { afterEffect: 500 }],
    ["a 503 before Slack took it", { status: 503 }],
  ] as const)("a thread reply whose answer is lost (%s): in the thread once", async (_, lost) => {
    const h = await start();
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    // The next post is the reply that calls the approvers in.
    h.slack.failNext("chat.postMessage", lost);
    await h.bot.tracker.tick();
    const [request] = await h.bot.store.listActive();
    expect(request?.status).toBe("awaiting_approval");
    const replies = () =>
      h.slack.messages.filter((m) => m.thread_ts === request?.messageTs && m.files === undefined);
    await waitFor(() => (replies().length > 0 ? true : undefined), "the approvers' reply");
    // A later pass (which finishes replies not yet posted) posts nothing more.
    await h.bot.tracker.tick();
    expect(replies().map((m) => m.text)).toEqual([expect.stringContaining("awaits") as string]);
  });

  it("the plan file's share whose answer is lost after Slack took it: in the thread once, and the message says it is there", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    h.slack.failNext("files.completeUploadExternal", { afterEffect: 500 });
    await h.bot.tracker.tick();
    const [request] = await h.bot.store.listActive();
    expect(request?.review?.planFile).toBe("uploaded");
    const files = h.slack.messages.filter(
      (m) => m.thread_ts === request?.messageTs && m.files !== undefined,
    );
    expect(files).toHaveLength(1);
  });

  it("a refused request message: the requester is told, and no pipeline starts", async () => {
    const h = await start();
    h.slack.failNext("chat.postMessage", "channel_not_found");
    expect((await submitForm(h)).action).toBe("failed");
    expect(h.gitlab.pipelines).toHaveLength(0);
    const dm = await h.slack.waitFor("chat.postMessage", (call) => call.args.channel === REQUESTER);
    expect(String(dm.args.text)).toContain("(channel_not_found)");
  });
});

describe("Proxmox and Vault faults", () => {
  it("Proxmox 502 and a 429 with Retry-After: read again within bounds, and answered", async () => {
    const h = await start({ proxmox: true });
    h.proxmox!.failNext({ status: 502 });
    h.proxmox!.failNext({ status: 429, body: "", contentType: "text/plain" });
    const delivery = await h.signer.slashCommand({
      text: "capacity",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    const post = await h.slack.waitForResponse((p) => p.url === delivery.responseUrl);
    expect(String(post.body.text)).toMatch(/^Proxmox capacity: /);
    expect(h.proxmox!.requestsTo(/cluster\/resources$/)).toHaveLength(3);
  });

  it("Proxmox failing every time: three attempts, then a clear answer", async () => {
    const h = await start({ proxmox: true });
    h.proxmox!.failNext({ status: 503 }, { times: 10 });
    const delivery = await h.signer.slashCommand({
      text: "capacity",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    const post = await h.slack.waitForResponse((p) => p.url === delivery.responseUrl);
    expect(String(post.body.text)).toBe(
      `vmbot could not read the nodes' capacity. Proxmox at ${h.proxmox!.url} answered 503 when vmbot asked for the nodes.`,
    );
    expect(h.proxmox!.requestsTo(/cluster\/resources$/)).toHaveLength(3);
  });

  it("Vault answering 502 once on a read: read again, and the secret is there", async () => {
    const h = await start({
      vault: true,
      proxmox: true,
      prepare: ({ vault }) => {
        vault?.failNext(
          { method: "GET", path: /secret\/data\/proxmox-readonly$/ },
          { status: 502 },
        );
      },
    });
    expect(h.vault!.requestsTo("GET", /secret\/data\/proxmox-readonly$/)).toHaveLength(2);
    expect(h.logs.some((line) => line.includes("could not read the Proxmox API token"))).toBe(
      false,
    );
    const delivery = await h.signer.slashCommand({
      text: "capacity",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    const post = await h.slack.waitForResponse((p) => p.url === delivery.responseUrl);
    expect(String(post.body.text)).toMatch(/^Proxmox capacity: /);
  });
});
