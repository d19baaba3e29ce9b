import { describe, expect, it } from "vitest";
import { CHANNEL, askForVm, harnessPerTest, runUntilSettled } from "../support/harness.js";

const start = harnessPerTest();

describe("a request message Slack refused to update", () => {
  it("gets its plan and buttons on a later pass when chat.update failed at plan time", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    const request = (await h.bot.store.listActive())[0]!;
    const message = () => h.slack.message(CHANNEL, request.messageTs!)!;
    expect(message().text).toBe("VM web-01 — Planning");

    runUntilSettled(h, pipelineId, "tf:plan");
    h.slack.failNext("chat.update", "internal_error");
    await h.bot.tracker.tick();
    // The store moved on; Slack refused to show it.
    expect((await h.bot.store.getRequest(request.id))?.status).toBe("awaiting_approval");
    expect(message().text).toBe("VM web-01 — Planning");
    expect(JSON.stringify(message().blocks)).not.toContain("plan_approve");

    await h.bot.tracker.tick();
    expect(message().text).toBe("VM web-01 — Awaiting approval");
    expect(JSON.stringify(message().blocks)).toContain('"action_id":"plan_approve"');
    expect(await h.bot.store.listBehind(10)).toEqual([]);

    // Caught up: the next pass sends nothing more.
    const updates = h.slack.callsTo("chat.update").length;
    await h.bot.tracker.tick();
    expect(h.slack.callsTo("chat.update")).toHaveLength(updates);
  });

  it("shows a finished request's end on a later pass when its final update failed", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    const request = (await h.bot.store.listActive())[0]!;
    h.gitlab.failJob(pipelineId, "tf:plan");
    runUntilSettled(h, pipelineId, "tf:plan");
    h.slack.failNext("chat.update", "internal_error");
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(request.id))?.status).toBe("failed");
    expect(await h.bot.store.listActive()).toEqual([]);
    expect(h.slack.message(CHANNEL, request.messageTs!)?.text).toBe("VM web-01 — Planning");

    await h.bot.tracker.tick();
    expect(h.slack.message(CHANNEL, request.messageTs!)?.text).toBe("VM web-01 — Failed");
  });

  it("gives up on a message Slack says is gone, instead of trying on every pass", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    h.slack.failNext("chat.update", "message_not_found");
    await h.bot.tracker.tick();
    const updates = h.slack.callsTo("chat.update").length;
    await h.bot.tracker.tick();
    expect(h.slack.callsTo("chat.update")).toHaveLength(updates);
    expect(await h.bot.store.listBehind(10)).toEqual([]);
  });
});
