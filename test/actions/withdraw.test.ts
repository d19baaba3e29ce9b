import { describe, expect, it } from "vitest";
import {
  APPROVER,
  CHANNEL,
  REQUESTER,
  askForVm,
  click,
  harnessPerTest,
  planRequest,
  type Harness,
  type HarnessOptions,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";

const start = harnessPerTest();

/** A request whose plan is posted and awaits approval. */
async function planned(options?: HarnessOptions) {
  const h = await start(options);
  return { h, ...(await planRequest(h)) };
}

/** A request whose plan job runs: its message says Planning. */
async function planning() {
  const h = await start();
  const pipelineId = await askForVm(h);
  h.gitlab.advance(pipelineId);
  await h.bot.tracker.tick();
  const request = (await h.bot.store.listActive())[0]!;
  expect(request.status).toBe("planning");
  return { h, pipelineId, request };
}

const ephemeralTo = (h: Harness, user: string) =>
  h.slack.waitFor("chat.postEphemeral", (call) => call.args.user === user);

const withdrawnShown = (h: Harness) =>
  h.slack.waitFor("chat.update", (call) => call.args.text === "VM web-01 — Withdrawn");

const cancels = (h: Harness, pipelineId: number) =>
  h.gitlab.requestsTo("POST", new RegExp(`/pipelines/${pipelineId}/cancel$`));

describe("the requester withdraws their request", () => {
  it("cancels the pipeline, makes the plan unusable, and no one can approve afterwards", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    const before = structuredClone(message());
    await click(h, message(), REQUESTER, "request_withdraw");
    await withdrawnShown(h);
    await waitFor(
      () =>
        h.gitlab.requestsTo("DELETE", /\/jobs\/\d+\/artifacts$/).length > 0 ? true : undefined,
      "the plan's artifacts to be deleted",
    );
    expect(cancels(h, pipelineId)).toHaveLength(1);
    const withdrawn = (await h.bot.store.getRequest(requestId))!;
    expect(withdrawn).toMatchObject({
      status: "withdrawn",
      decision: { kind: "withdrawn", by: REQUESTER },
    });
    const blocks = JSON.stringify(message().blocks);
    expect(blocks).toContain(`Withdrawn by <@${REQUESTER}> at <!date^`);
    expect(blocks).not.toContain("plan_approve");
    expect(blocks).not.toContain("request_withdraw");
    expect(await h.bot.store.listAudit(requestId)).toContainEqual(
      expect.objectContaining({ actor: REQUESTER, action: "withdrawn" }),
    );

    // An approver clicking the old buttons changes nothing.
    await click(h, before, APPROVER, "plan_approve");
    expect((await ephemeralTo(h, APPROVER)).args.text).toBe(
      `This request (web-01) was withdrawn by <@${REQUESTER}>; there is nothing to decide.`,
    );
    expect(h.gitlab.requestsTo("POST", /\/play$/)).toHaveLength(0);
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("withdrawn");
  });

  it("lets a requester who is also an approver withdraw their own request", async () => {
    const { h, pipelineId, requestId, message } = await planned({
      env: { APPROVERS: `${APPROVER},${REQUESTER}` },
    });
    await click(h, message(), REQUESTER, "request_withdraw");
    await withdrawnShown(h);
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("withdrawn");
    await waitFor(() => (cancels(h, pipelineId).length > 0 ? true : undefined), "the cancel");
  });

  it("refuses anyone else, approvers included, and changes nothing", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    await click(h, message(), APPROVER, "request_withdraw");
    expect((await ephemeralTo(h, APPROVER)).args.text).toBe(
      `Only <@${REQUESTER}>, who asked for *web-01*, can withdraw it. An approver can reject its plan instead.`,
    );
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("awaiting_approval");
    expect(cancels(h, pipelineId)).toHaveLength(0);
  });

  it("withdraws while Terraform plans: the plan job is canceled and nothing follows", async () => {
    const { h, pipelineId, request } = await planning();
    const message = h.slack.message(CHANNEL, request.messageTs!)!;
    expect(JSON.stringify(message.blocks)).toContain("request_withdraw");
    await click(h, message, REQUESTER, "request_withdraw");
    await withdrawnShown(h);
    await waitFor(() => (cancels(h, pipelineId).length > 0 ? true : undefined), "the cancel");
    expect(h.gitlab.job(pipelineId, "tf:plan").status).toBe("canceled");
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(request.id))?.status).toBe("withdrawn");
    expect(h.slack.messages.filter((m) => m.text.includes("awaits your approval"))).toHaveLength(0);
  });

  it("withdraws after Terraform planned but before vmbot posted the plan: the plan is deleted", async () => {
    const { h, pipelineId, request } = await planning();
    // Terraform's plan finishes in GitLab; vmbot has not read it yet.
    while (h.gitlab.job(pipelineId, "tf:plan").status !== "success") h.gitlab.advance(pipelineId);
    expect(h.gitlab.job(pipelineId, "tf:plan").artifacts.size).toBeGreaterThan(0);
    await click(h, h.slack.message(CHANNEL, request.messageTs!)!, REQUESTER, "request_withdraw");
    await withdrawnShown(h);
    // Deleted, and audited once GitLab answered.
    await waitFor(
      async () =>
        (await h.bot.store.listAudit(request.id)).some((entry) => entry.action === "plan_erased")
          ? true
          : undefined,
      "the finished plan's artifacts to be deleted",
    );
    expect(h.gitlab.job(pipelineId, "tf:plan").artifactsDeletedAt).not.toBeNull();
    expect((await h.bot.store.getRequest(request.id))?.review).toBeNull();
    // Someone plays the apply job in GitLab all the same: it has no plan to apply.
    h.gitlab.addUser({ username: "mallory" });
    h.gitlab.playJob(pipelineId, "tf:apply", { as: "mallory" });
    while (!["success", "failed"].includes(h.gitlab.job(pipelineId, "tf:apply").status)) {
      h.gitlab.advance(pipelineId);
    }
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("failed");
    expect(await h.bot.store.listAudit(request.id)).toContainEqual(
      expect.objectContaining({ actor: "vmbot", action: "plan_erased" }),
    );
  });

  it("deletes a plan run again in GitLab, before the withdrawal or after it, once each", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    const posted = h.gitlab.job(pipelineId, "tf:plan").id;
    // Someone runs the plan job again in GitLab while the first plan awaits a decision.
    const again = h.gitlab.retryJob(pipelineId, "tf:plan").id;
    while (h.gitlab.job(pipelineId, "tf:plan").status !== "success") h.gitlab.advance(pipelineId);
    expect(h.gitlab.job(pipelineId, "tf:plan").id).toBe(again);
    await click(h, message(), REQUESTER, "request_withdraw");
    await withdrawnShown(h);
    const erased = () =>
      h.gitlab
        .requestsTo("DELETE", /\/jobs\/\d+\/artifacts$/)
        .map((call) => Number(/\/jobs\/(\d+)\//.exec(call.path)![1]));
    await waitFor(() => (erased().length === 2 ? true : undefined), "both plans to be deleted");
    expect(erased().sort((a, b) => a - b)).toEqual([posted, again]);
    // Later passes delete nothing more, until the plan is run again after the withdrawal.
    await h.bot.tracker.tick();
    expect(erased()).toHaveLength(2);
    const third = h.gitlab.retryJob(pipelineId, "tf:plan").id;
    while (h.gitlab.job(pipelineId, "tf:plan").status !== "success") h.gitlab.advance(pipelineId);
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    expect(erased().sort((a, b) => a - b)).toEqual([posted, again, third]);
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("withdrawn");
  });

  it("cancels once when GitLab's answer to the cancel is lost after it took effect", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    h.gitlab.failNext({ method: "POST", path: /\/cancel$/ }, { afterEffect: "reset" });
    await click(h, message(), REQUESTER, "request_withdraw");
    await withdrawnShown(h);
    await waitFor(
      async () =>
        (await h.bot.store.effect(requestId, "cancel_pipeline"))?.state === "done"
          ? true
          : undefined,
      "the cancel to be settled",
    );
    expect(cancels(h, pipelineId)).toHaveLength(1);
    // Settled by reading the jobs back, the result has the one shape every cancel records.
    expect((await h.bot.store.effect(requestId, "cancel_pipeline"))?.result).toEqual({
      status: expect.any(String) as string,
      webUrl: expect.stringContaining(`/pipelines/${pipelineId}`) as string,
    });
    // GitLab leaves a pipeline that waits on its manual job "manual" after a cancel: the plan's
    // artifacts are deleted all the same, and the requester is told of no problem.
    await waitFor(
      () =>
        h.gitlab.requestsTo("DELETE", /\/jobs\/\d+\/artifacts$/).length > 0 ? true : undefined,
      "the plan's artifacts to be deleted",
    );
    expect(h.slack.callsTo("chat.postEphemeral")).toHaveLength(0);
  });

  it("tells a second click that the request was already withdrawn", async () => {
    const { h, message } = await planned();
    const before = structuredClone(message());
    await click(h, before, REQUESTER, "request_withdraw");
    await withdrawnShown(h);
    await click(h, before, REQUESTER, "request_withdraw");
    expect((await ephemeralTo(h, REQUESTER)).args.text).toBe(
      `This request (web-01) was withdrawn by <@${REQUESTER}>; there is nothing to decide.`,
    );
  });
});
