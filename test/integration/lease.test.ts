import { describe, expect, it } from "vitest";
import {
  APPROVER,
  CHANNEL,
  click,
  harnessPerTest,
  planRequest,
  REQUESTER,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";
import { REQUEST_STATUSES } from "../../src/store/store.js";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import type { FakeMessage } from "../../sandbox/simulators/slack/index.js";
import { waitFor } from "../support/wait.js";

/**
 * Leases with second-scale durations, through the wire: the lease a VM gets when Terraform has
 * made it, the owner's reminder with Extend and Destroy now, and the destroy request its end opens.
 */

const start = harnessPerTest();
const PIPELINE_CREATE = /\/pipeline$/;
const PLAY = /\/jobs\/\d+\/play$/;

/** web-01 made for REQUESTER, under leases of 60 s (at most 120 s), reminded 50 s and 30 s before. */
async function leasedVm(env: Record<string, string> = {}) {
  const h = await start({
    project: { role: "maintainer" },
    env: { ...LEASES, ...env },
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

const LEASES = { VM_LEASE_DEFAULT: "60s", VM_LEASE_MAX: "120s", VM_LEASE_WARN: "50s,30s" };

interface SelectBlock {
  block_id: string;
  element: {
    type: string;
    options: { value: string; text: { text: string } }[];
    initial_option?: { value: string };
  };
  hint?: { text: string };
}

/** `/vm create web-01` as REQUESTER: the form Slack opened. */
async function openForm(h: Harness) {
  await h.signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
  await h.slack.waitFor("views.open", (c) => JSON.stringify(c.args.view).includes("web-01"));
  return h.slack.views.at(-1)!;
}

/** The form sent back with `lease` as the lease field's value, as if picked (or forged). */
function submitLease(h: Harness, view: Awaited<ReturnType<typeof openForm>>, lease: string) {
  const values = stateValuesFor(view, { vm_ip: "192.168.1.50/24" });
  values.vm_lease = {
    vm_lease: {
      type: "static_select",
      selected_option: { text: { type: "plain_text", text: lease }, value: lease },
    },
  };
  return h.signer.viewSubmission({ view, values, userId: REQUESTER });
}

const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

describe("leases", () => {
  it("offers lease lengths up to the maximum on the create form, refuses a forged longer one on its field, and gives the VM the lease chosen", async () => {
    const h = await start({ project: { role: "maintainer" }, env: LEASES });
    const view = await openForm(h);
    const field = (view.blocks as unknown as SelectBlock[]).find((b) => b.block_id === "vm_lease");
    expect(field?.element.type).toBe("static_select");
    expect(field?.element.options.map((o) => [o.value, o.text.text])).toEqual([
      ["1m", "1 minute"],
      ["2m", "2 minutes"],
    ]);
    expect(field?.element.initial_option?.value).toBe("1m");
    expect(field?.hint?.text).toContain("At most 2 minutes.");

    // Past the maximum, never under a maximum, or nonsense: refused on the field, nothing stored.
    for (const [forged, words] of [
      ["3m", "The lease can be at most 2 minutes: choose one of the offered lengths."],
      [
        "never",
        "Every VM has a lease here (at most 2 minutes): choose one of the offered lengths.",
      ],
      ["forever", "Choose one of the offered lease lengths (at most 2 minutes)."],
    ] as const) {
      const refused = await submitLease(h, view, forged);
      expect(refused.json).toEqual({ response_action: "errors", errors: { vm_lease: words } });
    }
    expect(h.gitlabSinceStart()).toHaveLength(0);
    expect(await h.bot.store.listByStatus(REQUEST_STATUSES)).toHaveLength(0);
    expect(await h.bot.store.listAudit()).toHaveLength(0);

    // Two minutes, chosen: the VM made from it is lent for two minutes from when it was made.
    expect((await submitLease(h, view, "2m")).body).toBe("");
    const pipelineId = await waitFor(() => h.gitlab.pipelines.at(-1)?.id, "the pipeline");
    await waitFor(
      async () =>
        (await h.bot.store.listActive())[0]?.pipelineId === pipelineId ? true : undefined,
      "the request to record its pipeline",
    );
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    const request = (await h.bot.store.listActive())[0]!;
    expect(request.spec.leaseMs).toBe(120_000);
    const message = h.slack.message(CHANNEL, request.messageTs!)!;
    await click(h, message, APPROVER, "plan_approve");
    await waitFor(
      () => (h.gitlab.job(pipelineId, "tf:apply").status === "manual" ? undefined : true),
      "the apply job to start",
    );
    runUntilSettled(h, pipelineId, "tf:apply");
    await h.bot.tracker.tick();
    const vm = (await h.bot.store.inventory.get("web-01"))!;
    const lent = Date.parse(vm.leaseUntil!) - Date.parse(vm.createdAt);
    expect(lent).toBeGreaterThanOrEqual(119_000);
    expect(lent).toBeLessThanOrEqual(121_000);
    // Pipelines get the platform's inputs only: the lease is vmbot's.
    expect(JSON.stringify(h.gitlab.pipeline(pipelineId).inputs)).not.toContain("lease");
  });

  it("offers no lease field when leases are off", async () => {
    const off = await start();
    const view = await openForm(off);
    expect(JSON.stringify(view.blocks)).not.toContain("vm_lease");
  });

  it("offers never, last, when there is a default but no maximum", async () => {
    const h = await start({ env: { VM_LEASE_DEFAULT: "30d" } });
    const view = await openForm(h);
    const field = (view.blocks as unknown as SelectBlock[]).find((b) => b.block_id === "vm_lease");
    expect(field?.element.options.map((o) => o.value)).toEqual([
      "1h",
      "1d",
      "7d",
      "14d",
      "30d",
      "60d",
      "90d",
      "180d",
      "365d",
      "never",
    ]);
    expect(field?.element.options.at(-1)?.text.text).toBe("Never (no lease)");
    expect(field?.element.initial_option?.value).toBe("30d");
  });

  it("gives a new VM the default lease, reminds its owner once with Extend and Destroy now, and Extend moves the end no further than the maximum", async () => {
    const h = await leasedVm();
    const vm = (await h.bot.store.inventory.get("web-01"))!;
    const lent = Date.parse(vm.leaseUntil!) - Date.parse(vm.createdAt);
    expect(lent).toBeGreaterThanOrEqual(59_000);
    expect(lent).toBeLessThanOrEqual(61_000);

    // 20 s left: both reminders are due; only the nearest one is sent, once.
    await h.bot.store.inventory.setLease("web-01", inSeconds(20));
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
    expect(
      (await h.bot.store.listAudit()).filter((e) => e.action === "lease_reminded"),
    ).toHaveLength(1);

    await click(h, dm, REQUESTER, "lease_extend");
    const extended = await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("The lease of web-01 now ends"),
    );
    expect(extended.body.replace_original).toBe(false);
    const until = Date.parse((await h.bot.store.inventory.get("web-01"))!.leaseUntil!);
    // The default (60 s) from now, within the maximum (120 s) from now.
    expect(until - Date.now()).toBeGreaterThan(50_000);
    expect(until - Date.now()).toBeLessThanOrEqual(60_000);
    // Someone else's click changes nothing.
    await click(h, dm, APPROVER, "lease_extend");
    await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("Only the owner of web-01"),
    );
    expect(Date.parse((await h.bot.store.inventory.get("web-01"))!.leaseUntil!)).toBe(until);
  });

  it("opens one destroy request for approval on the owner's behalf when the lease ends", async () => {
    const h = await leasedVm();
    const pipelines = h.gitlab.requestsTo("POST", PIPELINE_CREATE).length;
    await h.bot.store.inventory.setLease("web-01", inSeconds(-1));
    await h.bot.tracker.tick();
    const request = await waitFor(
      async () =>
        (await h.bot.store.listActive()).find((r) => r.kind === "destroy" && r.pipelineId !== null),
      "the destroy request",
    );
    expect(request).toMatchObject({ requester: REQUESTER, channel: CHANNEL });
    expect(request.notes.join(" ")).toContain("the VM's lease ended");
    const pipeline = h.gitlab.pipeline(request.pipelineId!);
    expect(pipeline.inputs).toMatchObject({ action: "destroy", vm_name: "web-01" });
    runUntilSettled(h, pipeline.id, "tf:destroy");
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(request.id))?.status).toBe("awaiting_approval");
    // Later passes open nothing more: one request, one pipeline.
    expect(await h.bot.store.listByStatus(["awaiting_approval"])).toHaveLength(1);
    expect(h.gitlab.requestsTo("POST", PIPELINE_CREATE)).toHaveLength(pipelines + 1);
    const audit = (await h.bot.store.listAudit(request.id)).map((e) => [e.actor, e.action]);
    expect(audit).toContainEqual(["vmbot", "requested"]);
    expect(audit).toContainEqual(["vmbot", "lease_expired"]);
  });

  it("with VM_LEASE_ON_EXPIRY=destroy, plays the destroy job once without approval when the lease ends, audited as vmbot's, and posts it in the channel", async () => {
    const h = await leasedVm({ VM_LEASE_ON_EXPIRY: "destroy" });
    const plays = h.gitlab.requestsTo("POST", PLAY).length;
    await h.bot.store.inventory.setLease("web-01", inSeconds(-1));
    await h.bot.tracker.tick();
    const request = await waitFor(
      async () =>
        (await h.bot.store.listActive()).find((r) => r.kind === "destroy" && r.pipelineId !== null),
      "the destroy request",
    );
    expect(request).toMatchObject({ requester: REQUESTER, channel: CHANNEL });
    expect(request.decision).toMatchObject({
      kind: "approved",
      by: "vmbot",
      reason: "lease expired",
    });
    runUntilSettled(h, request.pipelineId!, "tf:destroy");
    await h.bot.tracker.tick();
    expect(h.gitlab.job(request.pipelineId!, "tf:destroy").status).not.toBe("manual");
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(plays + 1);
    runUntilSettled(h, request.pipelineId!, "tf:destroy");
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();

    expect((await h.bot.store.getRequest(request.id))?.status).toBe("ready");
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(plays + 1);
    expect(await h.bot.store.inventory.get("web-01")).toBeUndefined();
    const message = h.slack.message(CHANNEL, request.messageTs!)!;
    expect(message.text).toBe("Destroy web-01 — Destroyed");
    expect(JSON.stringify(message.blocks)).toContain(
      "No approval asked: vmbot destroys this VM because its lease ended",
    );
    const thread = h.slack.messages.filter((m) => m.thread_ts === message.ts);
    expect(thread.some((m) => m.text.includes("Terraform destroyed *web-01*"))).toBe(true);
    // Nobody was asked to approve it.
    expect(thread.some((m) => m.text.startsWith(":eyes:"))).toBe(false);
    const audit = await h.bot.store.listAudit(request.id);
    expect(audit.map((e) => [e.actor, e.action])).toEqual(
      expect.arrayContaining([
        ["vmbot", "requested"],
        ["vmbot", "lease_expired"],
        ["vmbot", "destroy_without_approval"],
        ["vmbot", "destroy_started"],
        ["vmbot", "vm_destroyed"],
      ]),
    );
    expect(audit.find((e) => e.action === "destroy_without_approval")?.detail).toMatchObject({
      reason: "lease expired",
    });
    // Later passes open and play nothing more.
    await h.bot.tracker.tick();
    expect(
      (await h.bot.store.requestsForVm("web-01")).filter((r) => r.kind === "destroy"),
    ).toHaveLength(1);
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(plays + 1);
  });

  it("with VM_LEASE_ON_EXPIRY=destroy, the reminder says the VM is destroyed without approval", async () => {
    const h = await leasedVm({ VM_LEASE_ON_EXPIRY: "destroy" });
    await h.bot.store.inventory.setLease("web-01", inSeconds(20));
    await h.bot.tracker.tick();
    const dm = await waitFor(
      () => h.slack.messages.find((m) => m.metadata?.event_type === "vmbot_lease_reminder"),
      "the reminder",
    );
    expect(dm.text).toContain("Then vmbot destroys it, without asking for approval.");
  });

  it("Destroy now in the reminder asks to destroy, reviewed like any destroy, for the owner only", async () => {
    const h = await leasedVm();
    await h.bot.store.inventory.setLease("web-01", inSeconds(20));
    await h.bot.tracker.tick();
    const dm = await waitFor(
      () => h.slack.messages.find((m) => m.metadata?.event_type === "vmbot_lease_reminder"),
      "the reminder",
    );
    const pipelines = h.gitlab.pipelines.length;

    // Someone else's click is refused with who may, and asks nothing.
    await click(h, dm, "U0STRANGER", "lease_destroy");
    await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("Only the owner of *web-01*"),
    );
    expect(await h.bot.store.listActive()).toHaveLength(0);

    await click(h, dm, REQUESTER, "lease_destroy");
    const asked = await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("Asked to destroy *web-01*"),
    );
    expect(asked.body.replace_original).toBe(false);
    const request = await waitFor(
      async () =>
        (await h.bot.store.listActive()).find((r) => r.kind === "destroy" && r.pipelineId !== null),
      "the destroy request",
    );
    expect(request).toMatchObject({ requester: REQUESTER, channel: CHANNEL, decision: null });
    expect(h.gitlab.pipelines).toHaveLength(pipelines + 1);
    runUntilSettled(h, request.pipelineId!, "tf:destroy");
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(request.id))?.status).toBe("awaiting_approval");
    expect(h.slack.message(CHANNEL, request.messageTs!)?.text).toBe(
      "Destroy web-01 — Awaiting approval",
    );
    // A second click while it waits opens nothing more.
    await click(h, dm, REQUESTER, "lease_destroy");
    await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("A destroy for *web-01* is in progress"),
    );
    expect(h.gitlab.pipelines).toHaveLength(pipelines + 1);
  });

  /** web-01 with its reminder in the owner's direct messages, its lease 20 s from its end. */
  async function reminded(env: Record<string, string> = {}) {
    const h = await leasedVm(env);
    await h.bot.store.inventory.setLease("web-01", inSeconds(20));
    await h.bot.tracker.tick();
    const dm = h.slack.messages.find((m) => m.channel === REQUESTER || m.channel.startsWith("D"));
    if (dm === undefined) throw new Error("no reminder");
    return { h, dm };
  }

  it("Extend while the destroy its lease's end opened is in progress extends nothing, and says how to keep the VM", async () => {
    const { h, dm } = await reminded();
    const ended = inSeconds(-1);
    await h.bot.store.inventory.setLease("web-01", ended);
    await h.bot.tracker.tick();
    const destroy = await waitFor(
      async () => (await h.bot.store.listActive()).find((r) => r.kind === "destroy"),
      "the destroy request",
    );

    await click(h, dm, REQUESTER, "lease_extend");
    const answer = await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("A destroy of web-01 is in progress"),
    );
    expect(answer.body.text).toContain(`\`${destroy.id}\``);
    expect(answer.body.text).toContain("withdraw that request");
    expect((await h.bot.store.inventory.get("web-01"))?.leaseUntil).toBe(ended);
    const actions = (await h.bot.store.listAudit()).map((e) => e.action);
    expect(actions).not.toContain("lease_extended");
  });

  /** The owner clicks Extend in the reminder `dm` and is told the lease's new end. */
  async function extendNow(h: Harness, dm: FakeMessage) {
    await click(h, dm, REQUESTER, "lease_extend");
    await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("The lease of web-01 now ends"),
    );
  }

  /** web-01 kept: no destroy opened, its lease extended (audited so) and ending later. */
  async function expectKept(h: Harness) {
    expect((await h.bot.store.listActive()).filter((r) => r.kind === "destroy")).toEqual([]);
    const actions = (await h.bot.store.listAudit()).map((e) => e.action);
    expect(actions).toContain("lease_extended");
    expect(actions).not.toContain("lease_expired");
    const lease = (await h.bot.store.inventory.get("web-01"))?.leaseUntil;
    expect(Date.parse(lease ?? "")).toBeGreaterThan(Date.now());
  }

  it("a lease the owner extends while a pass holds the VM list is not ended by that pass", async () => {
    const { h, dm } = await reminded();
    await h.bot.store.inventory.setLease("web-01", inSeconds(-1));
    // The pass reads the VMs, lease ended; the owner's Extend lands before it acts on them.
    const inventory = h.bot.store.inventory;
    const list = inventory.list.bind(inventory);
    // The store's own object, its `list` swapped for this one pass.
    const seam: { list: typeof list } = inventory;
    seam.list = async () => {
      const vms = await list();
      seam.list = list;
      await extendNow(h, dm);
      return vms;
    };
    await h.bot.tracker.tick();
    expect(inventory.list).toBe(list);

    await expectKept(h);
  });

  it("an Extend that lands after the pass checked the lease, before it opened the destroy, keeps the VM: no destroy is opened", async () => {
    // With VM_LEASE_ON_EXPIRY=destroy a destroy opened here would be played without approval.
    const { h, dm } = await reminded({ VM_LEASE_ON_EXPIRY: "destroy" });
    const ended = inSeconds(-1);
    await h.bot.store.inventory.setLease("web-01", ended);
    // The pass reads the lease again before it acts; the owner's Extend lands right after.
    const inventory = h.bot.store.inventory;
    const get = inventory.get.bind(inventory);
    const seam: { get: typeof get } = inventory;
    seam.get = async (name) => {
      const vm = await get(name);
      if (vm?.leaseUntil !== ended) return vm;
      seam.get = get;
      await extendNow(h, dm);
      return vm;
    };
    await h.bot.tracker.tick();
    expect(inventory.get).toBe(get);

    await expectKept(h);
    // Later passes leave it too: its lease has not ended.
    await h.bot.tracker.tick();
    expect((await h.bot.store.listActive()).filter((r) => r.kind === "destroy")).toEqual([]);
  });

  it("an Extend whose check passed before the lease's end opened its destroy extends nothing, and says the destroy is under way", async () => {
    const { h, dm } = await reminded({ VM_LEASE_ON_EXPIRY: "destroy" });
    const ended = inSeconds(-1);
    await h.bot.store.inventory.setLease("web-01", ended);
    // The Extend finds nothing in flight; the pass opens the destroy before the Extend writes.
    const store = h.bot.store;
    const requestsForVm = store.requestsForVm.bind(store);
    const seam: { requestsForVm: typeof requestsForVm } = store;
    seam.requestsForVm = async (name) => {
      const requests = await requestsForVm(name);
      seam.requestsForVm = requestsForVm;
      await h.bot.tracker.tick();
      return requests;
    };
    await click(h, dm, REQUESTER, "lease_extend");
    const answer = await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("A destroy of web-01 is in progress"),
    );
    expect(store.requestsForVm).toBe(requestsForVm);

    const destroy = (await store.listActive()).find((r) => r.kind === "destroy");
    expect(destroy?.decision).toMatchObject({ kind: "approved", by: "vmbot" });
    expect(answer.body.text).toContain(`\`${destroy?.id}\``);
    expect((await store.inventory.get("web-01"))?.leaseUntil).toBe(ended);
    const actions = (await store.listAudit()).map((e) => e.action);
    expect(actions).toContain("lease_expired");
    expect(actions).not.toContain("lease_extended");
  });

  it("Destroy now and the lease's end at once open one destroy: the end's, which got there first, and the owner is pointed at it", async () => {
    const { h, dm } = await reminded({ VM_LEASE_ON_EXPIRY: "destroy" });
    await h.bot.store.inventory.setLease("web-01", inSeconds(-1));
    // Destroy now finds nothing in flight; the pass opens the lease's destroy before it writes.
    const store = h.bot.store;
    const requestsForVm = store.requestsForVm.bind(store);
    const seam: { requestsForVm: typeof requestsForVm } = store;
    let reads = 0;
    seam.requestsForVm = async (name) => {
      const requests = await requestsForVm(name);
      reads += 1;
      // The second read is the request's key, just before it is written.
      if (reads === 2) {
        seam.requestsForVm = requestsForVm;
        await h.bot.tracker.tick();
      }
      return requests;
    };
    await click(h, dm, REQUESTER, "lease_destroy");
    const answer = await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("A destroy for *web-01* is in progress"),
    );
    expect(store.requestsForVm).toBe(requestsForVm);

    const destroys = (await store.requestsForVm("web-01")).filter((r) => r.kind === "destroy");
    expect(destroys).toHaveLength(1);
    expect(destroys[0]?.decision).toMatchObject({ kind: "approved", by: "vmbot" });
    expect(answer.body.text).toContain(`\`${destroys[0]?.id}\``);
  });

  it("Extend on a VM marked gone extends nothing, and says why", async () => {
    const { h, dm } = await reminded();
    const before = (await h.bot.store.inventory.get("web-01"))?.leaseUntil;
    await h.bot.store.inventory.mark(
      "web-01",
      "gone",
      "its Terraform state is no longer in GitLab",
    );
    await click(h, dm, REQUESTER, "lease_extend");
    await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("web-01 is marked gone"),
    );
    expect((await h.bot.store.inventory.get("web-01"))?.leaseUntil).toBe(before);
  });
});
