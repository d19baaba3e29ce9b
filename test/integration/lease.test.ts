import { describe, expect, it } from "vitest";
import {
  APPROVER,
  CHANNEL,
  click,
  harnessPerTest,
  planRequest,
  REQUESTER,
  runUntilSettled,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";

/**
 * Leases with second-scale durations, through the wire: the lease a VM gets when Terraform has
 * made it, the owner's reminder with Extend and Destroy now, and the destroy request its end opens.
 */

const start = harnessPerTest();
const PIPELINE_CREATE = /\/pipeline$/;

/** web-01 made for REQUESTER, under leases of 60 s (at most 120 s), reminded 50 s and 30 s before. */
async function leasedVm() {
  const h = await start({
    project: { role: "maintainer" },
    env: { VM_LEASE_DEFAULT: "60s", VM_LEASE_MAX: "120s", VM_LEASE_WARN: "50s,30s" },
  });
  const { pipelineId, message } = await planRequest(h);
  await click(h, message(), APPROVER, "plan_approve");
  await waitFor(
    () => (h.gitlab.job(pipelineId, "tf:apply").status === "manual" ? undefined : true),
    "the apply job to start",
  );
  runUntilSettled(h, pipelineId, "tf:apply");
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "ansible:configure");
  await h.bot.tracker.tick();
  return h;
}

const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

describe("leases", () => {
  it("gives a new VM the default lease, reminds its owner once with Extend and Destroy now, and Extend moves the end no further than the maximum", async () => {
    const h = await leasedVm();
    const vm = h.bot.store.inventory.get("web-01")!;
    const lent = Date.parse(vm.leaseUntil!) - Date.parse(vm.createdAt);
    expect(lent).toBeGreaterThanOrEqual(59_000);
    expect(lent).toBeLessThanOrEqual(61_000);

    // 20 s left: both reminders are due; only the nearest one is sent, once.
    h.bot.store.inventory.setLease("web-01", inSeconds(20));
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    const dms = h.slack.messages.filter(
      (m) => m.channel === REQUESTER || m.channel.startsWith("D"),
    );
    expect(dms).toHaveLength(1);
    const dm = dms[0]!;
    expect(dm.text).toContain("The lease of your VM web-01 ends");
    const shown = JSON.stringify(dm.blocks);
    expect(shown).toContain("lease_extend");
    expect(shown).toContain("lease_destroy");
    expect(h.bot.store.listAudit().filter((e) => e.action === "lease_reminded")).toHaveLength(1);

    await click(h, dm, REQUESTER, "lease_extend");
    const extended = await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("The lease of web-01 now ends"),
    );
    expect(extended.body.replace_original).toBe(false);
    const until = Date.parse(h.bot.store.inventory.get("web-01")!.leaseUntil!);
    // The default (60 s) from now, within the maximum (120 s) from now.
    expect(until - Date.now()).toBeGreaterThan(50_000);
    expect(until - Date.now()).toBeLessThanOrEqual(60_000);
    // Someone else's click changes nothing.
    await click(h, dm, APPROVER, "lease_extend");
    await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("Only the owner of web-01"),
    );
    expect(Date.parse(h.bot.store.inventory.get("web-01")!.leaseUntil!)).toBe(until);
  });

  it("opens one destroy request for approval on the owner's behalf when the lease ends", async () => {
    const h = await leasedVm();
    const pipelines = h.gitlab.requestsTo("POST", PIPELINE_CREATE).length;
    h.bot.store.inventory.setLease("web-01", inSeconds(-1));
    await h.bot.tracker.tick();
    const request = await waitFor(
      () => h.bot.store.listActive().find((r) => r.kind === "destroy" && r.pipelineId !== null),
      "the destroy request",
    );
    expect(request).toMatchObject({ requester: REQUESTER, channel: CHANNEL });
    expect(request.notes.join(" ")).toContain("the VM's lease ended");
    const pipeline = h.gitlab.pipeline(request.pipelineId!);
    expect(pipeline.inputs).toMatchObject({ action: "destroy", vm_name: "web-01" });
    runUntilSettled(h, pipeline.id, "tf:destroy");
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    expect(h.bot.store.getRequest(request.id)?.status).toBe("awaiting_approval");
    // Later passes open nothing more: one request, one pipeline.
    expect(h.bot.store.listByStatus(["awaiting_approval"])).toHaveLength(1);
    expect(h.gitlab.requestsTo("POST", PIPELINE_CREATE)).toHaveLength(pipelines + 1);
    const audit = h.bot.store.listAudit(request.id).map((e) => [e.actor, e.action]);
    expect(audit).toContainEqual(["vmbot", "requested"]);
    expect(audit).toContainEqual(["vmbot", "lease_expired"]);
  });
});
