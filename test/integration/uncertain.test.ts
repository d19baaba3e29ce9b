import { describe, expect, it } from "vitest";
import type { FakeMessage, ResponseUrlPost } from "../../sandbox/simulators/slack/index.js";
import {
  ADMIN,
  APPROVER,
  CHANNEL,
  REQUESTER,
  PROJECT_PATH,
  click,
  reject,
  harnessPerTest,
  planRequest,
  runUntilSettled,
  type Harness,
  type HarnessOptions,
} from "../support/harness.js";
import { testClock } from "../support/clock.js";
import { askToDestroy, makeVm } from "../support/destroy.js";
import { waitFor } from "../support/wait.js";

/**
 * GitLab does the thing, and its answer is lost (a timeout, a dropped connection, a proxy's 5xx)
 * on play, cancel, the plan's deletion and the lock's removal: vmbot reads GitLab again and tells
 * the truth, does it once, and keeps one record of who decided.
 */

const start = harnessPerTest();
const SECOND = "U0SECOND";
const PLAY = /\/jobs\/\d+\/play$/;
const JOBS = /\/pipelines\/\d+\/jobs/;

/** A request whose plan awaits approval, on a project where the bot's token is a Maintainer. */
async function planned(options: HarnessOptions = {}) {
  const h = await start({
    ...options,
    project: { role: "maintainer", ...options.project },
    env: { APPROVERS: `${APPROVER},${SECOND}`, ...options.env },
  });
  return { h, ...(await planRequest(h)) };
}

/** web-01 made, and a destroy of it asked for by its owner, waiting for approval. */
async function destroyAwaiting() {
  const h = await start({ project: { role: "maintainer" }, env: { APPROVERS: APPROVER } });
  await makeVm(h);
  return { h, ...(await askToDestroy(h)) };
}

/**
 * APPROVER approves, the play's answer is lost and the job cannot be read back either: the
 * approval stands, and vmbot does not know whether the job started.
 */
async function approvedUnsure(h: Harness, message: FakeMessage) {
  h.gitlab.failNext({ method: "POST", path: PLAY }, "reset");
  h.gitlab.failNext({ method: "GET", path: /\/jobs\/\d+$/ }, { status: 503 }, { times: 4 });
  await click(h, message, APPROVER, "plan_approve");
  expect((await ephemeralTo(h, APPROVER)).args.text).toContain("Your approval stands");
}

const ephemeralTo = (h: Harness, user: string, index = 0) =>
  h.slack.waitFor(
    "chat.postEphemeral",
    (call) =>
      call.args.user === user &&
      h.slack
        .callsTo("chat.postEphemeral")
        .filter((c) => c.args.user === user)
        .indexOf(call) === index,
  );

const audit = async (h: Harness, requestId: string) =>
  (await h.bot.store.listAudit(requestId)).map((entry) => [entry.actor, entry.action]);

const threadOf = (h: Harness, message: FakeMessage) =>
  h.slack.messages.filter((m) => m.thread_ts === message.ts);

/** `/vm unlock` by the admin, and the prompt with its Force-unlock button. */
async function unlockPrompt(h: Harness): Promise<ResponseUrlPost> {
  const command = await h.signer.slashCommand({
    text: "unlock",
    userId: ADMIN,
    channelId: CHANNEL,
  });
  return h.slack.waitForResponse((post) => post.url === command.responseUrl);
}

/** The admin confirms the force-unlock on the ephemeral prompt. */
async function confirm(h: Harness, prompt: ResponseUrlPost): Promise<void> {
  await h.signer.blockAction({
    message: {
      channel: CHANNEL,
      ts: "1796205600.000100",
      text: String(prompt.body.text),
      blocks: prompt.body.blocks as FakeMessage["blocks"],
      user: h.slack.identity.botUserId,
      bot_id: h.slack.identity.botId,
      app_id: h.slack.identity.appId,
    },
    ephemeral: true,
    actionId: "unlock_confirm",
    userId: ADMIN,
  });
}

describe("a play whose answer is lost after GitLab started the job", () => {
  for (const [lost, failure, options] of [
    ["a dropped connection", "reset", {}],
    ["a timeout", { delayMs: 3_000 }, { gitlabTimeoutMs: 1_000 }],
  ] as const) {
    it(`${lost}: reads the job back, tells the approver it started, and nobody can decide again`, async () => {
      const { h, pipelineId, requestId, message } = await planned(options);
      h.gitlab.failNext({ method: "POST", path: PLAY }, { afterEffect: failure });
      const plan = structuredClone(message());
      await click(h, plan, APPROVER, "plan_approve");

      const told = await ephemeralTo(h, APPROVER);
      expect(told.args.text).toContain("GitLab was slow to answer, but it did start the apply job");
      expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(1);
      expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("pending");
      const request = (await h.bot.store.getRequest(requestId))!;
      expect(request).toMatchObject({ status: "applying", error: null });
      expect(request.decision).toMatchObject({ kind: "approved", by: APPROVER });
      expect(await audit(h, requestId)).toContainEqual([APPROVER, "approved"]);
      expect(await audit(h, requestId)).toContainEqual([APPROVER, "apply_started"]);
      expect((await audit(h, requestId)).map(([, action]) => action)).not.toContain(
        "approval_released",
      );
      await h.slack.waitFor("chat.update", (call) =>
        JSON.stringify(call.args.blocks).includes(`Approved by <@${APPROVER}>`),
      );
      expect(JSON.stringify(message().blocks)).not.toContain("plan_approve");

      // A second approver, on the message as it was: neither Reject nor Approve counts.
      await click(h, plan, SECOND, "plan_reject");
      expect((await ephemeralTo(h, SECOND)).args.text).toBe(
        `This request (web-01) was already approved by <@${APPROVER}>; there is nothing to decide.`,
      );
      await click(h, plan, SECOND, "plan_approve");
      expect((await ephemeralTo(h, SECOND, 1)).args.text).toContain("was already approved");
      expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(1);
      expect((await h.bot.store.getRequest(requestId))?.status).toBe("applying");

      // And it follows the apply it started.
      runUntilSettled(h, pipelineId, "tf:apply");
      await h.bot.tracker.tick();
      expect((await h.bot.store.getRequest(requestId))?.status).toBe("configuring");
      expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(1);
    }, 30_000);
  }

  it("when the read back fails too: says it is checking with GitLab, keeps the buttons away, and a later pass settles it", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    h.gitlab.failNext({ method: "POST", path: PLAY }, { afterEffect: "reset" });
    // Every attempt of the read back (GET is retried) fails.
    h.gitlab.failNext({ method: "GET", path: /\/jobs\/\d+$/ }, { status: 503 }, { times: 4 });
    await click(h, message(), APPROVER, "plan_approve");

    const told = await ephemeralTo(h, APPROVER);
    expect(told.args.text).toContain("vmbot cannot tell yet whether it started");
    expect(told.args.text).toContain("Your approval stands");
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("checking with GitLab"),
    );
    expect(JSON.stringify(message().blocks)).not.toContain("plan_approve");
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("applying");
    expect(
      (
        await h.bot.store.effect(
          requestId,
          `play_apply:${(await h.bot.store.getRequest(requestId))!.decision!.at}`,
        )
      )?.state,
    ).toBe("intended");
    expect(await audit(h, requestId)).toContainEqual([APPROVER, "approved"]);

    await h.bot.tracker.tick();
    const settled = (await h.bot.store.getRequest(requestId))!;
    expect(settled).toMatchObject({ status: "applying", error: null });
    expect((await h.bot.store.effect(requestId, `play_apply:${settled.decision!.at}`))?.state).toBe(
      "done",
    );
    expect(await audit(h, requestId)).toContainEqual([APPROVER, "apply_confirmed"]);
    await h.slack.waitFor(
      "chat.update",
      (call) =>
        JSON.stringify(call.args.blocks).includes("Terraform is applying the plan") &&
        !JSON.stringify(call.args.blocks).includes("checking with GitLab"),
    );
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(1);
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("pending");
  }, 30_000);

  it("a play that did not reach GitLab, and no read back: a later pass finds the job waiting and plays it once", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    await approvedUnsure(h, message());
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("manual");
    expect((await h.bot.store.getRequest(requestId))?.error).toContain("checking with GitLab");

    await h.bot.tracker.tick();
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(2);
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("pending");
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "applying",
      error: null,
    });
    expect(await audit(h, requestId)).toContainEqual([APPROVER, "apply_started"]);
    await h.bot.tracker.tick();
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(2);
  }, 30_000);

  it("a later pass that finds the plan run again in GitLab since it was approved plays nothing: the new plan is posted for approval", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    await approvedUnsure(h, message());
    const reviewed = (await h.bot.store.getRequest(requestId))!.review!.planJobId;

    // While vmbot waits to learn whether its play landed, someone runs the plan job again.
    h.gitlab.retryJob(pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(1);
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("manual");
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "planning",
      decision: null,
      review: null,
    });
    expect(await audit(h, requestId)).toContainEqual(["vmbot", "approval_refused"]);

    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    const request = (await h.bot.store.getRequest(requestId))!;
    expect(request.status).toBe("awaiting_approval");
    expect(request.review?.planJobId).not.toBe(reviewed);
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("plan_approve"),
    );
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(1);
  }, 30_000);

  it("a later pass whose play GitLab refuses (403) with the job still waiting: the approval is released and the buttons return", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    await approvedUnsure(h, message());

    h.gitlab.failNext({ method: "POST", path: PLAY }, { status: 403 });
    await h.bot.tracker.tick();
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("manual");
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "awaiting_approval",
      decision: null,
      error: null,
    });
    expect((await audit(h, requestId)).slice(-2)).toEqual([
      [APPROVER, "approved"],
      ["vmbot", "approval_released"],
    ]);
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("plan_approve"),
    );
  }, 30_000);

  it("a play that did not reach GitLab, read back as still waiting: the approval is released with the truth", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    h.gitlab.failNext({ method: "POST", path: PLAY }, "reset");
    await click(h, message(), APPROVER, "plan_approve");
    const told = await ephemeralTo(h, APPROVER);
    expect(told.args.text).toContain("has not started, so it still awaits approval");
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("manual");
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "awaiting_approval",
      decision: null,
    });
    expect((await audit(h, requestId)).slice(-2)).toEqual([
      [APPROVER, "approved"],
      [APPROVER, "approval_released"],
    ]);
  }, 30_000);
});

describe("an approval whose pipeline read fails after a tracker pass played its job", () => {
  for (const kind of ["apply", "destroy"] as const) {
    it(`${kind}: the approval stands, the approver is told the job started, and nobody can decide again`, async () => {
      const { h, pipelineId, requestId, message } =
        kind === "apply" ? await planned() : await destroyAwaiting();
      const job = kind === "apply" ? "tf:apply" : "tf:destroy";
      // The approver's read of the pipeline hangs, and fails once GitLab answers at last; a
      // tracker pass in between finds the approval claimed and plays the job.
      let answer: () => void = () => undefined;
      const hung = new Promise<void>((resolve) => (answer = resolve));
      const reads = h.gitlab.requestsTo("GET", JOBS).length;
      const plays = h.gitlab.requestsTo("POST", PLAY).length;
      h.gitlab.failNext({ method: "GET", path: JOBS }, { until: hung, status: 500 });
      await click(h, message(), APPROVER, kind === "apply" ? "plan_approve" : "destroy_approve");
      await waitFor(
        () => (h.gitlab.requestsTo("GET", JOBS).length > reads ? true : undefined),
        "the approver's read of the pipeline",
      );
      await h.bot.tracker.tick();
      expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(plays + 1);
      answer();

      const told = await ephemeralTo(h, APPROVER);
      expect(told.args.text).toContain(`The ${kind === "apply" ? "apply" : "destroy"} job`);
      expect(told.args.text).toContain("has started: your approval stands");
      const request = (await h.bot.store.getRequest(requestId))!;
      expect(request).toMatchObject({ status: "applying", decision: { by: APPROVER } });
      expect((await audit(h, requestId)).map(([, action]) => action)).not.toContain(
        "approval_released",
      );
      expect(h.gitlab.job(pipelineId, job).status).toBe("pending");
      await h.bot.tracker.tick();
      expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(plays + 1);
      expect(JSON.stringify(message().blocks)).not.toContain("_approve");
    }, 30_000);
  }
});

describe("a cancel and a deletion whose answers are lost", () => {
  it("cancel reset after GitLab canceled, and the plan's deletion answered 502 after it happened: each done once, nobody told of a failure", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    h.gitlab.failNext({ method: "POST", path: /\/cancel$/ }, { afterEffect: "reset" });
    h.gitlab.failNext(
      { method: "DELETE", path: /\/jobs\/\d+\/artifacts$/ },
      { afterEffect: { status: 502 } },
    );
    await reject(h, message(), APPROVER);
    await waitFor(
      async () =>
        (
          await h.bot.store.effect(
            requestId,
            `erase_plan:${h.gitlab.job(pipelineId, "tf:plan").id}`,
          )
        )?.state === "done"
          ? true
          : undefined,
      "the plan's deletion to be recorded",
    );
    expect((await h.bot.store.effect(requestId, "cancel_pipeline"))?.state).toBe("done");
    expect(h.gitlab.requestsTo("POST", /\/cancel$/)).toHaveLength(1);
    expect(h.gitlab.requestsTo("DELETE", /\/artifacts$/)).toHaveLength(1);
    expect(h.gitlab.job(pipelineId, "ansible:configure").status).toBe("canceled");
    expect(h.gitlab.job(pipelineId, "tf:plan").artifacts.size).toBe(0);
    expect(await audit(h, requestId)).toContainEqual([APPROVER, "rejected"]);
    expect(
      (await audit(h, requestId)).filter(([, action]) => action === "plan_erased"),
    ).toHaveLength(1);
    // A later pass repeats neither.
    await h.bot.tracker.tick();
    expect(h.gitlab.requestsTo("POST", /\/cancel$/)).toHaveLength(1);
    expect(h.gitlab.requestsTo("DELETE", /\/artifacts$/)).toHaveLength(1);
    expect(h.slack.callsTo("chat.postEphemeral")).toHaveLength(0);
  }, 30_000);

  it("says in the thread when GitLab refuses to delete the plan (a Developer token), and audits it", async () => {
    const { h, requestId, message } = await planned();
    // The plan ran as a Maintainer (a Developer's would fail on the state lock); the token's
    // user has since been made a Developer.
    h.gitlab.setRole(42, "developer");
    await reject(h, message(), APPROVER);
    const warning = await waitFor(
      () =>
        threadOf(h, message()).find((m) => m.text.includes("could not make this plan unusable")),
      "the warning in the thread",
    );
    expect(warning.text).toContain("needs the Maintainer role");
    expect(await audit(h, requestId)).toContainEqual(["vmbot", "plan_erase_refused"]);
  }, 30_000);
});

describe("a lock removal whose answer is lost", () => {
  it("reads the lock again: the admin is told it is unlocked, and the audit says unlocked", async () => {
    const h = await start({ project: { role: "maintainer" } });
    h.gitlab.addUser({ username: "alice" });
    h.gitlab.addTerraformState(PROJECT_PATH, "general", {
      lockedBy: "alice",
      lockedAt: new Date(Math.floor(Date.now() / 1000 - 3600) * 1000),
    });
    h.gitlab.failNext({ method: "DELETE", path: /\/lock$/ }, { afterEffect: "reset" });
    const prompt = await unlockPrompt(h);
    const before = h.slack.responses.length;
    await confirm(h, prompt);
    const done = await h.slack.waitForResponse((post) => h.slack.responses.indexOf(post) >= before);
    expect(done.body.text).toBe(
      ":unlock: Unlocked the Terraform state `general`; GitLab confirms it is free. The channel has been told.",
    );
    expect(h.gitlab.requestsTo("DELETE", /\/lock$/)).toHaveLength(1);
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).toBeNull();
    const actions = (await h.bot.store.listAudit()).map((entry) => [entry.actor, entry.action]);
    expect(actions).toContainEqual([ADMIN, "unlocked"]);
    expect(actions.map(([, action]) => action)).not.toContain("unlock_failed");
  }, 30_000);
});

describe("a lock removal whose answer and read back are both lost", () => {
  it("tells the admin vmbot cannot tell, and audits the unlock as unknown, not failed", async () => {
    const h = await start({ project: { role: "maintainer" }, gitlabTimeoutMs: 1_000 });
    h.gitlab.addUser({ username: "alice" });
    h.gitlab.addTerraformState(PROJECT_PATH, "general", {
      lockedBy: "alice",
      lockedAt: new Date(Math.floor(Date.now() / 1000 - 3600) * 1000),
    });
    h.gitlab.failNext({ method: "DELETE", path: /\/lock$/ }, { afterEffect: { delayMs: 3_000 } });
    const prompt = await unlockPrompt(h);
    const before = h.slack.responses.length;
    await confirm(h, prompt);
    // While GitLab holds the answer back, its GraphQL endpoint starts failing too.
    await waitFor(
      () => (h.gitlab.requestsTo("DELETE", /\/lock$/).length === 1 ? true : undefined),
      "the unlock request",
    );
    h.gitlab.failNext({ method: "POST", path: /^\/api\/graphql$/ }, { status: 503 });
    const done = await h.slack.waitForResponse((post) => h.slack.responses.indexOf(post) >= before);
    expect(String(done.body.text)).toContain("vmbot cannot tell whether it was removed");
    const actions = (await h.bot.store.listAudit()).map((entry) => entry.action);
    expect(actions).toContain("unlock_unknown");
    expect(actions).not.toContain("unlock_failed");
    expect(h.gitlab.requestsTo("DELETE", /\/lock$/)).toHaveLength(1);
  }, 30_000);
});

describe("a rejected or expired plan cannot be applied", () => {
  function playedInGitlab(h: Harness, pipelineId: number) {
    h.gitlab.addUser({ username: "mallory", name: "Mallory" });
    h.gitlab.playJob(pipelineId, "tf:apply", { as: "mallory" });
    runUntilSettled(h, pipelineId, "tf:apply");
    const apply = h.gitlab.job(pipelineId, "tf:apply");
    expect(apply.status).toBe("failed");
    expect(apply.log).toContain('Error: Failed to load "tfplan" as a plan file');
    return apply;
  }

  it("after Reject, an apply played in GitLab fails for want of the plan and is posted in the thread in one pass", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    await reject(h, message(), APPROVER);
    await waitFor(
      () => (h.gitlab.job(pipelineId, "tf:plan").artifacts.size === 0 ? true : undefined),
      "the plan's artifacts to be deleted",
    );
    expect(h.gitlab.job(pipelineId, "tf:plan").log).toContain("terraform plan");
    const apply = playedInGitlab(h, pipelineId);

    await h.bot.tracker.tick();
    const thread = threadOf(h, message());
    const alarm = thread.find((m) => m.text.includes("was played in GitLab after the request"));
    expect(alarm?.text).toContain("after the request was rejected");
    expect(alarm?.text).toContain("by GitLab user `mallory`");
    expect(alarm?.text).toContain(`job #${apply.id}`);
    expect(alarm?.text).toContain("Terraform has no plan to apply");
    expect(thread.some((m) => m.text.includes("nothing was applied from this plan"))).toBe(true);
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("rejected");
    const entry = (await h.bot.store.listAudit(requestId)).find(
      (e) => e.action === "apply_after_close",
    );
    expect(entry?.detail).toMatchObject({ jobId: apply.id, playedBy: "mallory" });

    // Said once: a later pass adds nothing, and the request is no longer followed.
    const count = threadOf(h, message()).length;
    await h.bot.tracker.tick();
    expect(threadOf(h, message())).toHaveLength(count);
    expect((await h.bot.store.effect(requestId, "watch_apply"))?.state).toBe("done");
  }, 30_000);

  it("a VM an apply played in GitLab made after Reject (its plan could not be deleted) is listed, holds its name, and can be destroyed", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    // The token's user was made a Developer: the plan cannot be deleted.
    h.gitlab.setRole(42, "developer");
    await reject(h, message(), APPROVER);
    await waitFor(
      () =>
        threadOf(h, message()).some((m) => m.text.includes("could not make this plan unusable"))
          ? true
          : undefined,
      "the warning in the thread",
    );
    // A Maintainer plays the apply in GitLab (its plan still there).
    h.gitlab.setRole(42, "maintainer");
    h.gitlab.addUser({ username: "mallory", name: "Mallory" });
    h.gitlab.playJob(pipelineId, "tf:apply", { as: "mallory" });
    h.gitlab.setJobArtifact(pipelineId, "tf:apply", "vm_ip.txt", "192.168.1.50\n");
    runUntilSettled(h, pipelineId, "tf:apply");
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("success");
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("rejected");
    expect(await h.bot.store.inventory.get("web-01")).toMatchObject({
      requestId,
      status: "live",
      address: "192.168.1.50",
      approvedBy: null,
    });
    expect(await audit(h, requestId)).toContainEqual(["vmbot", "apply_after_close_success"]);
    // As the thread says, /vm destroy knows it.
    const prompt = await h.signer.slashCommand({
      text: "destroy web-01",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    expect(prompt.body).toContain("destroy_confirm");
  }, 30_000);

  it("after PLAN_TTL expiry, the same: the plan is deleted and a later apply in GitLab is posted with who played it", async () => {
    const clock = testClock();
    const { h, pipelineId, requestId, message } = await planned({
      env: { PLAN_TTL: "2h" },
      clock: clock.now,
    });
    clock.advance(3 * 3_600_000);
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("expired");
    expect(h.gitlab.requestsTo("POST", /\/cancel$/)).toHaveLength(1);
    expect(h.gitlab.job(pipelineId, "tf:plan").artifacts.size).toBe(0);
    playedInGitlab(h, pipelineId);

    await h.bot.tracker.tick();
    const alarm = threadOf(h, message()).find((m) => m.text.includes("was played in GitLab"));
    expect(alarm?.text).toContain("after the request expired");
    expect(alarm?.text).toContain("by GitLab user `mallory`");
    expect(await audit(h, requestId)).toContainEqual(["vmbot", "apply_after_close"]);
  }, 30_000);
});
