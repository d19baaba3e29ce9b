import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import { describe, expect, it } from "vitest";
import { ansibleTrace } from "../../sandbox/simulators/gitlab/traces.js";
import { readFixture } from "../support/fixtures.js";
import {
  APPROVER,
  REQUESTER,
  click,
  harnessPerTest,
  planRequest,
  reject,
  runUntilSettled,
  type Harness,
  type HarnessOptions,
} from "../support/harness.js";
import { testClock } from "../support/clock.js";
import { waitFor } from "../support/wait.js";

const start = harnessPerTest();

/** A request whose plan is posted and awaits approval. */
async function planned(options?: HarnessOptions) {
  const h = await start(options);
  return { h, ...(await planRequest(h)) };
}

const ephemeralTo = (h: Harness, user: string) =>
  h.slack.waitFor("chat.postEphemeral", (call) => call.args.user === user);

describe("approving and rejecting a plan", () => {
  it("plays the apply job once, then follows apply and configure to a ready VM", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    const delivery = await click(h, message(), APPROVER, "plan_approve");
    expect(delivery.status).toBe(200);
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes(`Approved by <@${APPROVER}>`),
    );
    expect(h.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(1);
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("applying");
    expect(JSON.stringify(message().blocks)).not.toContain("plan_approve");

    h.gitlab.setJobArtifact(pipelineId, "tf:apply", "vm_ip.txt", "192.168.1.50\n");
    runUntilSettled(h, pipelineId, "tf:apply");
    await h.bot.tracker.tick();

    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "configuring",
      address: "192.168.1.50",
    });
    runUntilSettled(h, pipelineId, "ansible:configure");
    await h.bot.tracker.tick();

    const done = (await h.bot.store.getRequest(requestId))!;
    expect(done.status).toBe("ready");
    expect(message().text).toBe("VM web-01 — Ready");
    expect(JSON.stringify(message().blocks)).toContain("Ready: *web-01* at `192.168.1.50`");
    // The finished message says where the time went, stage by stage, from the store's times.
    expect(JSON.stringify(message().blocks)).toMatch(
      /:hourglass: \d+:\d\d in all: planning \d+:\d\d · waiting for approval \d+:\d\d · applying \d+:\d\d · configuring \d+:\d\d\./,
    );
    const thread = h.slack.messages.filter((m) => m.thread_ts === done.messageTs);
    expect(thread.map((m) => m.files?.[0]?.name ?? m.text.split("\n")[0])).toEqual([
      "web-01-plan.txt",
      expect.stringMatching(
        /^:eyes: <@U0APPROVER> the plan for \*web-01\*, asked by <@U0REQUESTER>, awaits your approval\. Approve or reject it before <!date\^\d+\^/,
      ),
      ":gear: Terraform applied: the VM has address 192.168.1.50.",
      ":white_check_mark: Configured.",
      ":white_check_mark: <@U0REQUESTER> *web-01* is ready at `192.168.1.50`.",
    ]);
    expect(thread[3]!.text).toMatch(/ok=\d+ changed=\d+ unreachable=0 failed=0/);
    expect((await h.bot.store.listAudit(requestId)).map((a) => a.action)).toEqual([
      "requested",
      "pipeline_created",
      "planning",
      "plan_uploaded",
      "awaiting_approval",
      "approved",
      "apply_started",
      "configuring",
      "ready",
    ]);
  });

  it("posts the address on the next pass after the apply job, though GitLab leaves the running pipeline's updated_at alone", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    await click(h, message(), APPROVER, "plan_approve");
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("Approved by"),
    );
    h.gitlab.advance(pipelineId); // the runner picks tf:apply up: the pipeline is running
    await h.bot.tracker.tick();
    const running = h.gitlab.pipelines.find((p) => p.id === pipelineId)!;
    expect(running.status).toBe("running");
    const updatedAt = running.updatedAt;

    h.gitlab.setJobArtifact(pipelineId, "tf:apply", "vm_ip.txt", "192.168.1.50\n");
    runUntilSettled(h, pipelineId, "tf:apply");
    expect(h.gitlab.job(pipelineId, "ansible:configure").status).toBe("pending");
    expect(running).toMatchObject({ status: "running", updatedAt });
    await h.bot.tracker.tick();

    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "configuring",
      address: "192.168.1.50",
    });
    // While the configure job runs, the message says so, with since when.
    expect(message().text).toBe("VM web-01 — Configuring");
    expect(JSON.stringify(message().blocks)).toMatch(
      /Configuring… Ansible is configuring the VM at 192\.168\.1\.50, since <!date\^\d+\^\{time\}\|/,
    );
    const thread = h.slack.messages.filter((m) => m.thread_ts === message().ts && !m.files);
    expect(thread.map((m) => m.text)).toEqual([
      expect.stringMatching(/^:eyes: <@U0APPROVER> the plan for \*web-01\*/),
      ":gear: Terraform applied: the VM has address 192.168.1.50.",
    ]);
  });

  it("reaches ready in one pass when apply and configure both finished since the last look", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    await click(h, message(), APPROVER, "plan_approve");
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("Approved by"),
    );
    runUntilSettled(h, pipelineId, "tf:apply");
    runUntilSettled(h, pipelineId, "ansible:configure");
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
    const thread = h.slack.messages.filter((m) => m.thread_ts === message().ts && !m.files);
    expect(thread.map((m) => m.text.split("\n")[0]!.split(":")[1])).toEqual([
      "eyes",
      "gear",
      "white_check_mark",
      "white_check_mark",
    ]);
  });

  it("plays the job exactly once when two approvers click at the same time", async () => {
    const { h, message } = await planned({ env: { APPROVERS: `${APPROVER},U0SECOND` } });
    await Promise.all([
      click(h, message(), APPROVER, "plan_approve"),
      click(h, message(), "U0SECOND", "plan_approve"),
    ]);
    const loser = await h.slack.waitFor("chat.postEphemeral");
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("Approved by"),
    );
    expect(loser.args.text).toMatch(
      /^This request \(web-01\) was already approved by <@U0(APPROVER|SECOND)>; there is nothing to decide\.$/,
    );
    expect(h.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(1);
  });

  it("refuses an approval when the apply job was canceled in GitLab meanwhile", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    h.gitlab.setJobStatus(pipelineId, "tf:apply", "canceled");
    await click(h, message(), APPROVER, "plan_approve");
    const words =
      "This plan can no longer be applied: its apply job is canceled in GitLab. Run /vm create again for a fresh plan.";
    expect((await ephemeralTo(h, APPROVER)).args.text).toBe(words);
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "canceled",
      error: words,
      decision: null,
    });
    expect(h.gitlab.requestsTo("POST", /\/play$/)).toHaveLength(0);
    await h.slack.waitFor("chat.update", (call) => call.args.text === "VM web-01 — Canceled");
  });

  it("refuses a click from someone who is not an approver, and changes nothing", async () => {
    const { h, requestId, message } = await planned();
    await click(h, message(), "U0STRANGER", "plan_approve");
    const refusal = await ephemeralTo(h, "U0STRANGER");
    expect(refusal.args.text).toBe(
      "Only the approvers (<@U0APPROVER>) may approve plans. Ask one of them to look at web-01.",
    );
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("awaiting_approval");
    expect(h.gitlab.requestsTo("POST", /\/play$/)).toHaveLength(0);
  });

  it("refuses a requester approving their own request", async () => {
    const { h, requestId, message } = await planned({
      env: { APPROVERS: `${APPROVER},${REQUESTER}` },
    });
    await click(h, message(), REQUESTER, "plan_approve");
    expect((await ephemeralTo(h, REQUESTER)).args.text).toBe(
      "You asked for web-01, so another approver must approve it.",
    );
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("awaiting_approval");
  });

  it("rejects: asks why, cancels the pipeline, checks it, and replaces the buttons with who rejected, when and why", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    const clicked = await click(h, message(), APPROVER, "plan_reject");
    // The click only opens the form: nothing is rejected until it comes back.
    const form = await h.slack.waitFor(
      "views.open",
      (call) => call.args.trigger_id === clicked.triggerId,
    );
    expect(JSON.stringify(form.args.view)).toContain("Why (optional)");
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("awaiting_approval");
    await h.signer.viewSubmission({
      view: h.slack.views.at(-1)!,
      values: stateValuesFor(h.slack.views.at(-1)!, {
        reject_reason: "Use pve2: <!here> pve1 is full",
      }),
      userId: APPROVER,
    });
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes(`Rejected by <@${APPROVER}>`),
    );
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("rejected");
    expect((await h.bot.store.getRequest(requestId))?.decision?.reason).toBe(
      "Use pve2: <!here> pve1 is full",
    );
    const shown = JSON.stringify(message().blocks);
    expect(shown).toContain("Reason: “Use pve2: &lt;!here&gt; pve1 is full”");
    expect(shown).toMatch(/Rejected by <@U0APPROVER> at <!date\^\d+\^/);
    const cancels = () =>
      h.gitlab.requestsTo("POST", new RegExp(`/pipelines/${pipelineId}/cancel$`));
    await waitFor(() => cancels().length > 0 || undefined, "the pipeline's cancel");
    // A pass after it: the reject is finished, and nothing cancels twice.
    await h.bot.tracker.tick();
    expect(cancels()).toHaveLength(1);
    // GitLab does not cancel a job waiting for a manual start: it stays unplayed, nothing applies.
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("manual");
    expect(h.gitlab.requestsTo("POST", /\/play$/)).toHaveLength(0);
    expect(h.slack.callsTo("chat.postEphemeral")).toHaveLength(0);
    expect(JSON.stringify(message().blocks)).not.toContain("plan_reject");
  });

  it("answers a click on a finished request with what became of it", async () => {
    const { h, message } = await planned({ env: { APPROVERS: `${APPROVER},U0SECOND` } });
    const before = structuredClone(message());
    await reject(h, before, APPROVER);
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("Rejected by"),
    );
    await click(h, before, "U0SECOND", "plan_approve");
    expect((await ephemeralTo(h, "U0SECOND")).args.text).toBe(
      `This request (web-01) was rejected by <@${APPROVER}>; there is nothing to decide.`,
    );
    expect(h.gitlab.requestsTo("POST", /\/play$/)).toHaveLength(0);
  });
});

describe("a configuration that fails", () => {
  it("ends the request naming the failed task and its message from the real Ansible log", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    h.gitlab.setTraces(pipelineId, {
      "ansible:configure": ansibleTrace(readFixture("ansible/fail-color.txt")),
    });
    await click(h, message(), APPROVER, "plan_approve");
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("Approved by"),
    );
    runUntilSettled(h, pipelineId, "tf:apply");
    await h.bot.tracker.tick();
    h.gitlab.failJob(pipelineId, "ansible:configure", "script_failure");
    runUntilSettled(h, pipelineId, "ansible:configure");
    await h.bot.tracker.tick();

    const failed = (await h.bot.store.getRequest(requestId))!;
    expect(failed.status).toBe("failed");
    expect(failed.error).toContain("The configure job `ansible:configure` failed in GitLab.");
    const thread = h.slack.messages.filter((m) => m.thread_ts === failed.messageTs);
    const recap = thread.find((m) => m.text.startsWith(":x: Configuration failed."));
    expect(recap?.text).toContain(
      "`test-vm-01` ok=1 changed=1 unreachable=0 failed=1 skipped=0 rescued=0 ignored=0",
    );
    expect(recap?.text).toContain("• *test-vm-01* failed in _Start qemu-guest-agent_");
    expect(message().text).toBe("VM web-01 — Failed");
  });
});

describe("stale approvals", () => {
  const HOUR = 3_600_000;

  it("refuses to approve a plan older than PLAN_TTL, and the message turns to expired", async () => {
    const clock = testClock();
    const { h, requestId, message } = await planned({ clock: clock.now });
    clock.advance(25 * HOUR);
    await click(h, message(), APPROVER, "plan_approve");
    const words =
      "This plan waited longer than PLAN_TTL (24 h) for approval and can no longer be applied: run /vm create again for a fresh plan.";
    expect((await ephemeralTo(h, APPROVER)).args.text).toBe(words);
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "expired",
      error: words,
    });
    expect(h.gitlab.requestsTo("POST", /\/play$/)).toHaveLength(0);
    await h.slack.waitFor("chat.update", (call) => call.args.text === "VM web-01 — Expired");
  });

  it("expires a waiting plan on the tracker's pass, with PLAN_TTL from the configuration", async () => {
    const clock = testClock();
    const { h, requestId } = await planned({ env: { PLAN_TTL: "2h" }, clock: clock.now });
    clock.advance(1 * HOUR);
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("awaiting_approval");
    clock.advance(2 * HOUR);
    await h.bot.tracker.tick();
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "expired",
      error: expect.stringContaining("PLAN_TTL (2 h)") as string,
    });
    await h.slack.waitFor("chat.update", (call) => call.args.text === "VM web-01 — Expired");
  });

  it("refuses an approval after the plan job ran again in GitLab, and posts the new plan", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    const first = (await h.bot.store.getRequest(requestId))!.review!.planJobId;
    h.gitlab.retryJob(pipelineId, "tf:plan");
    await click(h, message(), APPROVER, "plan_approve");
    expect((await ephemeralTo(h, APPROVER)).args.text).toBe(
      "The plan was run again in GitLab after this one was posted, so this approval does not count: vmbot posts the new plan for approval when it is ready.",
    );
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "planning",
      review: null,
    });
    expect(h.gitlab.requestsTo("POST", /\/play$/)).toHaveLength(0);
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    const replanned = (await h.bot.store.getRequest(requestId))!;
    expect(replanned.status).toBe("awaiting_approval");
    expect(replanned.review?.planJobId).not.toBe(first);
  });
});

describe("many clicks at once", () => {
  it("plays once for ten approvers clicking Approve together; nine are told politely", async () => {
    const approvers = Array.from({ length: 10 }, (_, i) => `U0APPROVER${i}`);
    const { h, requestId, message } = await planned({ env: { APPROVERS: "S0APPROVERS" } });
    h.slack.addUsergroup("S0APPROVERS", approvers);
    const plan = message();
    await Promise.all(approvers.map((user) => click(h, plan, user, "plan_approve")));
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("Approved by"),
    );
    expect(h.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(1);
    const decidedBy = (await h.bot.store.getRequest(requestId))!.decision!.by;
    expect(approvers).toContain(decidedBy);
    const refused = await Promise.all(
      approvers.filter((user) => user !== decidedBy).map((user) => ephemeralTo(h, user)),
    );
    for (const call of refused) {
      expect(call.args.text).toBe(
        `This request (web-01) was already approved by <@${decidedBy}>; there is nothing to decide.`,
      );
    }
  });

  it("approves nothing from a message that showed an older plan than the one waiting, and says so", async () => {
    const { h, pipelineId, requestId, message } = await planned();
    // The message as a person's Slack still shows it: the first plan's.
    const stale = structuredClone(message());
    h.gitlab.retryJob(pipelineId, "tf:plan");
    await click(h, message(), APPROVER, "plan_approve");
    await ephemeralTo(h, APPROVER);
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    const replanned = (await h.bot.store.getRequest(requestId))!;
    expect(replanned.status).toBe("awaiting_approval");
    const mark = h.slack.calls.length;

    await click(h, stale, APPROVER, "plan_approve");
    await h.slack.waitFor(
      "chat.postEphemeral",
      (call) =>
        typeof call.args.text === "string" && call.args.text.startsWith("Terraform planned again"),
    );
    expect(h.gitlab.requestsTo("POST", /\/play$/)).toHaveLength(0);
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "awaiting_approval",
      decision: null,
      review: { planJobId: replanned.review?.planJobId },
    });
    expect(h.slack.calls.slice(mark).map((call) => call.method)).not.toContain("chat.postMessage");

    // The message as it is now approves the plan it shows.
    await click(h, message(), APPROVER, "plan_approve");
    await waitFor(
      () => (h.gitlab.requestsTo("POST", /\/play$/).length === 1 ? true : undefined),
      "the apply job to be played",
    );
  });

  it("still approves from a message posted before Approve named its plan (the request ID alone)", async () => {
    const { h, requestId, message } = await planned();
    const earlier = structuredClone(message());
    const blocks = JSON.stringify(earlier.blocks).replace(
      new RegExp(`"${requestId}:\\d+"`),
      `"${requestId}"`,
    );
    expect(blocks).not.toBe(JSON.stringify(earlier.blocks));
    earlier.blocks = JSON.parse(blocks) as typeof earlier.blocks;
    await click(h, earlier, APPROVER, "plan_approve");
    await waitFor(
      () => (h.gitlab.requestsTo("POST", /\/play$/).length === 1 ? true : undefined),
      "the apply job to be played",
    );
    expect((await h.bot.store.getRequest(requestId))?.decision).toMatchObject({
      kind: "approved",
      by: APPROVER,
    });
  });
});
