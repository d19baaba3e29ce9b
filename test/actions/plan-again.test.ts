import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { syntheticLockError } from "../../sandbox/simulators/gitlab/traces.js";
import {
  ADMIN,
  APPROVER,
  CHANNEL,
  REQUESTER,
  askForVm,
  click,
  harnessPerTest,
  requestsOf,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";

const start = harnessPerTest();
const LOCK_ID = "2b6a1e44-1111-4c3b-9d7e-0a1b2c3d4e5f";

/** A request whose plan failed because another run holds the Terraform state lock. */
async function lockedPlan(h: Harness) {
  const pipelineId = await askForVm(h);
  h.gitlab.setTraces(pipelineId, {
    "tf:plan": syntheticLockError({
      id: LOCK_ID,
      who: "root@runner-12",
      createdAt: new Date("2026-12-01T08:00:00Z"),
    }),
  });
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "tf:plan");
  await h.bot.tracker.tick();
  const request = (await requestsOf(h)).find((found) => found.pipelineId === pipelineId)!;
  const message = () => h.slack.message(CHANNEL, request.messageTs!)!;
  const thread = () => h.slack.messages.filter((m) => m.thread_ts === request.messageTs);
  return { pipelineId, requestId: request.id, message, thread };
}

const ephemeralTo = (h: Harness, user: string) =>
  h.slack.waitFor("chat.postEphemeral", (call) => call.args.user === user);

describe("a plan that fails on a held state lock", () => {
  it("says the state is locked, names /vm unlock, and puts Terraform's whole error with the lock ID in the thread", async () => {
    const h = await start();
    const { requestId, message, thread } = await lockedPlan(h);
    const failed = (await h.bot.store.getRequest(requestId))!;
    expect(failed.status).toBe("failed");
    expect(failed.failure).toMatchObject({ stage: "plan", cause: "state_locked" });
    const body = JSON.stringify(message().blocks);
    expect(body).toContain("The Terraform state is locked by root@runner-12");
    expect(body).toContain("`/vm unlock`");
    expect(body).toContain('"action_id":"request_plan_again"');
    const excerpt = thread().find((m) => m.text.startsWith(":x: Terraform's error:"));
    expect(excerpt?.text).toContain("Error: Error acquiring the state lock");
    expect(excerpt?.text).toContain(`HTTP remote state already locked: ID=${LOCK_ID}`);
  });

  it("Plan again starts one new request with the same inputs, linked from the old message", async () => {
    const h = await start();
    const { requestId, message, thread } = await lockedPlan(h);
    const pipelines = h.gitlab.pipelines.length;
    const old = structuredClone(message());
    await click(h, old, REQUESTER, "request_plan_again");
    await h.slack.waitFor("chat.postMessage", (call) =>
      String(call.args.text).includes("planned web-01 again with the same inputs"),
    );
    expect(h.gitlab.pipelines).toHaveLength(pipelines + 1);
    const next = (await h.bot.store.listActive()).find((r) => r.id !== requestId)!;
    expect(next.spec).toEqual((await h.bot.store.getRequest(requestId))!.spec);
    expect(next.requester).toBe(REQUESTER);
    expect(next.notes).toEqual([
      `Planned again from request ${requestId}, which failed at its plan.`,
    ]);
    expect(next.pipelineId).toBe(h.gitlab.pipelines.at(-1)!.id);
    const body = JSON.stringify(message().blocks);
    expect(body).toContain(`<@${REQUESTER}> planned this again as request \`${next.id}\``);
    expect(body).not.toContain("request_plan_again");
    const reply = thread().find((m) => m.text.includes("planned web-01 again"));
    expect(reply?.text).toContain(next.id);
    expect(
      (await h.bot.store.listAudit(requestId)).map((entry) => [entry.actor, entry.action]),
    ).toContainEqual([REQUESTER, "planned_again"]);

    // A second click on the old message (as it was) makes nothing new.
    await click(h, old, REQUESTER, "request_plan_again");
    expect((await ephemeralTo(h, REQUESTER)).args.text).toBe(
      `web-01 was planned again already, as request \`${next.id}\`: follow that one.`,
    );
    expect(h.gitlab.pipelines).toHaveLength(pipelines + 1);
  });

  it("only the requester may plan it again", async () => {
    const h = await start();
    const { requestId, message } = await lockedPlan(h);
    const pipelines = h.gitlab.pipelines.length;
    await click(h, message(), "U0OTHER", "request_plan_again");
    const told = await ephemeralTo(h, "U0OTHER");
    expect(told.args.text).toBe(
      `Only <@${REQUESTER}>, who asked for web-01, can plan it again. You can ask for your own VM with /vm create.`,
    );
    expect(h.gitlab.pipelines).toHaveLength(pipelines);
    expect((await h.bot.store.getRequest(requestId))?.failure?.again).toBeUndefined();
  });

  it("refuses Plan again that the policy's quota refuses now, as it would a form, and starts nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vmbot-plan-again-"));
    dirs.push(dir);
    const policy = join(dir, "policy.yaml");
    writeFileSync(
      policy,
      [
        "version: 1",
        "groups:",
        `  devs: [${REQUESTER}]`,
        `  ops: [${APPROVER}, ${ADMIN}]`,
        "roles:",
        "  requesters: [devs]",
        "  approvers: [ops]",
        "  admins: [ops]",
        "quotas:",
        "  - group: devs",
        "    max: { vms: 2 }",
        "",
      ].join("\n"),
    );
    const h = await start({ env: { VMBOT_POLICY: policy } });
    const { message } = await lockedPlan(h);
    // Its plan failed: it holds nothing of the quota, which two more requests fill meanwhile.
    await askForVm(h, "web-02");
    await askForVm(h, "web-03");
    const pipelines = h.gitlab.pipelines.length;
    await click(h, message(), REQUESTER, "request_plan_again");
    expect((await ephemeralTo(h, REQUESTER)).args.text).toMatch(
      /^Over quota: you may hold at most 2 VMs in all, .* Nothing was started\.$/,
    );
    expect(h.gitlab.pipelines).toHaveLength(pipelines);
    expect(await h.bot.store.listActive()).toHaveLength(2);
  });
});

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
