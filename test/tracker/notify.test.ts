import { describe, expect, it } from "vitest";
import {
  APPROVER,
  REQUESTER,
  askForVm,
  click,
  harnessPerTest,
  planRequest,
  reject,
  runUntilSettled,
  type HarnessOptions,
} from "../support/harness.js";
import { testClock } from "../support/clock.js";

const start = harnessPerTest();

/** A request whose plan is posted and awaits approval. */
async function planned(options?: HarnessOptions) {
  const h = await start(options);
  return { h, ...(await planRequest(h)) };
}

const DATE = /<!date\^\d+\^\{date_short_pretty\} \{time\}\|[0-9T:.Z-]+>/;

describe("calling the approvers in", () => {
  it("mentions the approvers' user group once in the thread when a plan awaits approval", async () => {
    const { h, requestId, message, thread } = await planned({
      env: { APPROVERS: "S0APPROVERS", PLAN_TTL: "2h" },
    });
    h.slack.addUsergroup("S0APPROVERS", [APPROVER]);
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    const notices = thread().filter((m) => m.text.startsWith(":eyes:"));
    expect(notices).toHaveLength(1);
    expect(notices[0]!.text).toMatch(
      /^:eyes: <!subteam\^S0APPROVERS> the plan for \*web-01\*, asked by <@U0REQUESTER>, awaits your approval\. Approve or reject it before <!date\^/,
    );
    // The deadline is PLAN_TTL after the plan was posted.
    const review = (await h.bot.store.getRequest(requestId))!.review!;
    expect(Date.parse(review.expiresAt!) - Date.parse(review.reviewedAt!)).toBe(2 * 3_600_000);
    const seconds = Math.floor(Date.parse(review.expiresAt!) / 1000);
    expect(notices[0]!.text).toContain(`<!date^${seconds}^`);
    // The plan message says until when, and by whom.
    const window = JSON.stringify(message().blocks);
    expect(window).toContain(`:hourglass: Can be approved until <!date^${seconds}^`);
    expect(window).toContain(
      "by <!subteam^S0APPROVERS>; after that it expires and cannot be applied.",
    );
  });

  it("mentions each approver who is a person, leaving out the requester who may not approve", async () => {
    const { thread, message } = await planned({
      env: { APPROVERS: `${APPROVER},${REQUESTER},U0SECOND` },
    });
    const [notice] = thread();
    expect(notice!.text).toMatch(/^:eyes: <@U0APPROVER> <@U0SECOND> the plan for \*web-01\*/);
    expect(JSON.stringify(message().blocks)).toMatch(
      new RegExp(`Can be approved until ${DATE.source} by <@U0APPROVER> or <@U0SECOND>;`),
    );
  });

  it("mentions nobody with NOTIFY_APPROVERS=false, and still says who can approve", async () => {
    const { h, pipelineId, message, thread } = await planned({
      env: { NOTIFY_APPROVERS: "false" },
    });
    expect(JSON.stringify(message().blocks)).toContain(`by <@${APPROVER}>; after that it expires`);
    await click(h, message(), APPROVER, "plan_approve");
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("Approved by"),
    );
    runUntilSettled(h, pipelineId, "tf:apply");
    await h.bot.tracker.tick();
    // The apply reply proves the bot had every chance to post the notice.
    expect(thread().map((m) => m.text.split(" ")[0])).toEqual([":gear:"]);
  });

  it("posts the notice on a later pass when Slack refused it, and only once", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    h.slack.failNext("chat.postMessage", "ratelimited");
    await h.bot.tracker.tick();
    const request = (await h.bot.store.listActive())[0]!;
    expect(request.status).toBe("awaiting_approval");
    const notices = () =>
      h.slack.messages.filter(
        (m) => m.thread_ts === request.messageTs && m.text.startsWith(":eyes:"),
      );
    expect(notices()).toHaveLength(0);
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    expect(notices()).toHaveLength(1);
  });
});

describe("telling the requester how it ended", () => {
  it("mentions the requester when the VM is ready", async () => {
    const { h, pipelineId, message, thread } = await planned();
    await click(h, message(), APPROVER, "plan_approve");
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("Approved by"),
    );
    h.gitlab.setJobArtifact(pipelineId, "tf:apply", "vm_ip.txt", "192.168.1.50\n");
    runUntilSettled(h, pipelineId, "tf:apply");
    runUntilSettled(h, pipelineId, "ansible:configure");
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    const told = thread().filter((m) => m.text.includes(`<@${REQUESTER}>`) && m !== thread()[0]);
    expect(told.map((m) => m.text)).toEqual([
      ":white_check_mark: <@U0REQUESTER> *web-01* is ready at `192.168.1.50`.",
    ]);
  });

  it("mentions the requester when the request fails", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    h.gitlab.failJob(pipelineId, "tf:plan", "script_failure");
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    const [request] = (await h.bot.store.listAudit()).filter((a) => a.action === "failed");
    expect(request).toBeDefined();
    const failed = (await h.bot.store.getRequest(request!.requestId!))!;
    const thread = h.slack.messages.filter((m) => m.thread_ts === failed.messageTs);
    expect(thread.map((m) => m.text.split("\n")[0])).toEqual([
      ":x: Terraform's error:",
      ":x: <@U0REQUESTER> *web-01* failed: the request message above says why.",
    ]);
  });

  it("mentions the requester when an approver rejects, naming who", async () => {
    const { h, message, thread } = await planned();
    await reject(h, message(), APPROVER, "pve1 is full");
    const told = await h.slack.waitFor(
      "chat.postMessage",
      (call) => typeof call.args.text === "string" && call.args.text.startsWith(":no_entry_sign:"),
    );
    expect(told.args.text).toBe(
      `:no_entry_sign: <@${REQUESTER}> the plan for *web-01* was rejected by <@${APPROVER}>; nothing was built.\nReason: “pve1 is full”`,
    );
    expect(thread().filter((m) => m.text.startsWith(":no_entry_sign:"))).toHaveLength(1);
  });

  it("mentions the requester when the plan expires", async () => {
    const clock = testClock();
    const { h, requestId, thread } = await planned({ clock: clock.now });
    clock.advance(25 * 3_600_000);
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("expired");
    expect(
      thread()
        .filter((m) => m.text.startsWith(":alarm_clock:"))
        .map((m) => m.text),
    ).toEqual([
      `:alarm_clock: <@${REQUESTER}> the plan for *web-01* expired before anyone approved it; nothing was built. Run /vm create again for a fresh plan.`,
    ]);
  });
});
