import { describe, expect, it } from "vitest";
import { askToDestroy, makeVm, vmCommand } from "../support/destroy.js";
import { testClock } from "../support/clock.js";
import {
  APPROVER,
  click,
  harnessPerTest,
  reject,
  REQUESTER,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";

/**
 * A destroy request that ended without destroying: one left waiting past PLAN_TTL expires and
 * vmbot never plays its job; a destroy job played by hand in GitLab after a Reject, an expiry, a
 * failed destroy or a canceled one is reported, and when it succeeds the VM leaves the inventory.
 */

const start = harnessPerTest();
const PLAY = /\/jobs\/\d+\/play$/;
const SECOND = "U0SECOND";

const threadOf = (h: Harness, ts: string) => h.slack.messages.filter((m) => m.thread_ts === ts);
const audit = async (h: Harness, requestId: string) =>
  (await h.bot.store.listAudit(requestId)).map((entry) => [entry.actor, entry.action]);

/** Someone with the Developer role plays the destroy job in GitLab and it runs to its end. */
function playedInGitlab(h: Harness, pipelineId: number, fails = false) {
  h.gitlab.addUser({ username: "mallory", name: "Mallory" });
  h.gitlab.playJob(pipelineId, "tf:destroy", { as: "mallory" });
  if (fails) h.gitlab.failJob(pipelineId, "tf:destroy");
  runUntilSettled(h, pipelineId, "tf:destroy");
  return h.gitlab.job(pipelineId, "tf:destroy");
}

describe("a destroy request that ended without destroying", () => {
  it("expires after PLAN_TTL: expired through the lifecycle, never played by vmbot afterwards, the message says so and the VM stays listed", async () => {
    const clock = testClock();
    const h = await start({
      project: { role: "maintainer" },
      env: { PLAN_TTL: "2h", APPROVERS: `${APPROVER},${SECOND}` },
      clock: clock.now,
    });
    await makeVm(h);
    const { pipelineId, requestId, message } = await askToDestroy(h);
    const waiting = structuredClone(message());
    const plays = h.gitlab.requestsTo("POST", PLAY).length;

    // Within PLAN_TTL nothing happens; past it, the request expires.
    clock.advance(3_600_000);
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("awaiting_approval");
    clock.advance(2 * 3_600_000);
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("expired");
    expect(await audit(h, requestId)).toContainEqual(["vmbot", "expired"]);
    expect(message().text).toBe("Destroy web-01 — Expired");
    const shown = JSON.stringify(message().blocks);
    expect(shown).toContain(
      "This destroy request waited longer than 2 h for approval and expired: *web-01* stays, and vmbot will not play its destroy job.",
    );
    expect(shown).not.toContain("destroy_approve");
    expect(h.gitlab.requestsTo("POST", /\/cancel$/)).toHaveLength(1);
    await waitFor(
      () =>
        threadOf(h, message().ts).some((m) =>
          m.text.includes("the destroy of *web-01* expired before anyone approved it"),
        )
          ? true
          : undefined,
      "the requester to be told",
    );

    // An Approve from the message as it was is answered, and plays nothing.
    await click(h, waiting, APPROVER, "destroy_approve");
    const answered = await h.slack.waitFor(
      "chat.postEphemeral",
      (call) => call.args.user === APPROVER,
    );
    expect(answered.args.text).toContain("there is nothing to decide");
    await h.bot.tracker.tick();
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(plays);
    expect(h.gitlab.job(pipelineId, "tf:destroy").status).not.toBe("success");
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("expired");
    expect(await h.bot.store.inventory.get("web-01")).toMatchObject({ status: "live" });
    expect(JSON.stringify((await vmCommand(h, REQUESTER, "list")).blocks)).toContain("*web-01*");

    // Played by hand in GitLab afterwards and failed: said in the thread, the VM stays listed.
    const job = playedInGitlab(h, pipelineId, true);
    await h.bot.tracker.tick();
    const thread = () => threadOf(h, message().ts).map((m) => m.text);
    expect(thread()).toContainEqual(
      expect.stringContaining(
        "was played in GitLab after the request expired*, by GitLab user `mallory`",
      ),
    );
    expect(thread()).toContainEqual(
      expect.stringContaining(`The destroy job played after the request expired failed`),
    );
    expect(job.status).toBe("failed");
    expect(await h.bot.store.inventory.get("web-01")).toMatchObject({ status: "live" });
  });

  it("played in GitLab after a Reject: reported with who played it, and once it succeeded the VM leaves the inventory, audited as destroyed outside the approval", async () => {
    const h = await start({ project: { role: "maintainer" } });
    await makeVm(h);
    const { pipelineId, requestId, message } = await askToDestroy(h);
    await reject(h, message(), APPROVER, "keep it");
    await waitFor(
      async () =>
        (await h.bot.store.getRequest(requestId))?.status === "rejected" ? true : undefined,
      "the rejection",
    );
    await waitFor(
      () => (h.gitlab.requestsTo("POST", /\/cancel$/).length === 1 ? true : undefined),
      "the pipeline to be canceled",
    );
    expect(await h.bot.store.inventory.get("web-01")).toBeDefined();

    h.gitlab.addUser({ username: "mallory", name: "Mallory" });
    h.gitlab.playJob(pipelineId, "tf:destroy", { as: "mallory" });
    await h.bot.tracker.tick();
    const thread = () => threadOf(h, message().ts).map((m) => m.text);
    expect(thread()).toContainEqual(
      expect.stringContaining(
        "*The destroy job of *web-01* was played in GitLab after the request was rejected*, by GitLab user `mallory`",
      ),
    );
    // Still running: the VM is still listed.
    expect(await h.bot.store.inventory.get("web-01")).toBeDefined();

    runUntilSettled(h, pipelineId, "tf:destroy");
    expect(h.gitlab.job(pipelineId, "tf:destroy").status).toBe("success");
    await h.bot.tracker.tick();
    expect(thread()).toContainEqual(
      expect.stringContaining("*The destroy job played after the request was rejected succeeded*"),
    );
    expect(thread().join("\n")).toContain(
      "*web-01* is destroyed, outside the approval, and no longer listed.",
    );
    expect(await h.bot.store.inventory.get("web-01")).toBeUndefined();
    expect(JSON.stringify((await vmCommand(h, REQUESTER, "list all")).blocks)).not.toContain(
      "web-01",
    );
    const entry = (await h.bot.store.listAudit(requestId)).find(
      (e) => e.action === "vm_destroyed_outside_approval",
    );
    expect(entry).toMatchObject({
      actor: "vmbot",
      detail: { playedBy: "mallory", status: "success" },
    });
    // The request stays rejected; a later pass says nothing more.
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("rejected");
    const said = thread().length;
    await h.bot.tracker.tick();
    expect(thread()).toHaveLength(said);
    expect((await h.bot.store.effect(requestId, "watch_apply"))?.state).toBe("done");
  });

  it("failed: a destroy job played again by hand in GitLab is followed, and once it succeeded the VM leaves the inventory, the channel told who played it", async () => {
    const h = await start({ project: { role: "maintainer" } });
    await makeVm(h);
    const { pipelineId, requestId, message } = await askToDestroy(h);
    await click(h, message(), APPROVER, "destroy_approve");
    await waitFor(
      () => (h.gitlab.job(pipelineId, "tf:destroy").status === "manual" ? undefined : true),
      "the destroy job to start",
    );
    h.gitlab.failJob(pipelineId, "tf:destroy");
    runUntilSettled(h, pipelineId, "tf:destroy");
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("failed");
    expect(await h.bot.store.inventory.get("web-01")).toMatchObject({ status: "live" });
    // The failed job the request ended on is not reported as played afterwards.
    await h.bot.tracker.tick();
    const thread = () => threadOf(h, message().ts).map((m) => m.text);
    expect(thread().join("\n")).not.toContain("was played in GitLab after the request failed");

    // Someone plays it again in GitLab: a new run, followed and reported with who played it.
    const again = playedInGitlab(h, pipelineId);
    expect(again.status).toBe("success");
    await h.bot.tracker.tick();
    expect(thread()).toContainEqual(
      expect.stringContaining(
        "*The destroy job of *web-01* was played in GitLab after the request failed*, by GitLab user `mallory`",
      ),
    );
    expect(thread().join("\n")).toContain(
      "*web-01* is destroyed, outside the approval, and no longer listed.",
    );
    expect(await h.bot.store.inventory.get("web-01")).toBeUndefined();
    expect(JSON.stringify((await vmCommand(h, REQUESTER, "list all")).blocks)).not.toContain(
      "web-01",
    );
    const entry = (await h.bot.store.listAudit(requestId)).find(
      (e) => e.action === "vm_destroyed_outside_approval",
    );
    expect(entry).toMatchObject({
      actor: "vmbot",
      detail: { playedBy: "mallory", status: "success" },
    });
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("failed");
    expect((await h.bot.store.effect(requestId, "watch_apply"))?.state).toBe("done");
  });

  it("canceled in GitLab before an approval: a destroy job played by hand afterwards is followed, and the VM leaves the inventory when it succeeded", async () => {
    const h = await start({ project: { role: "maintainer" } });
    await makeVm(h);
    const { pipelineId, requestId, message } = await askToDestroy(h);
    // Someone starts the destroy job in GitLab and cancels it before the bot's next pass.
    h.gitlab.addUser({ username: "sam", name: "Sam" });
    h.gitlab.playJob(pipelineId, "tf:destroy", { as: "sam" });
    h.gitlab.cancelPipeline(pipelineId);
    expect(h.gitlab.job(pipelineId, "tf:destroy").status).toBe("canceled");
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("canceled");
    expect(await h.bot.store.inventory.get("web-01")).toMatchObject({ status: "live" });

    playedInGitlab(h, pipelineId);
    await h.bot.tracker.tick();
    const thread = () => threadOf(h, message().ts).map((m) => m.text);
    expect(thread()).toContainEqual(
      expect.stringContaining(
        "*The destroy job of *web-01* was played in GitLab after the request was canceled*, by GitLab user `mallory`",
      ),
    );
    expect(await h.bot.store.inventory.get("web-01")).toBeUndefined();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("canceled");
  });
});
