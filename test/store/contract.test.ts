/**
 * The store's contract, run against both stores: the SQLite store (its synchronous answers
 * awaited) and the PostgreSQL store on the run's server. Same cases, same expectations: what
 * the bot sees of its store does not depend on the engine.
 */
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { REQUEST_STATUSES, TRANSITIONS, type RequestStatus } from "../../src/requests/lifecycle.js";
import { asAsyncStore, type AsyncStore } from "../../src/store/async.js";
import { openPostgresStore } from "../../src/store/postgres/store.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import {
  TransitionError,
  type Holding,
  type NewRequest,
  type QuotaGuard,
  type RequestRecord,
} from "../../src/store/store.js";
import { testClock, type TestClock } from "../support/clock.js";
import { pathTo } from "../support/lifecycle.js";
import { describeWithPostgres, useDatabase } from "../support/postgres.js";
import { SAMPLE_SPEC } from "../support/requests.js";

const START = new Date("2026-12-02T10:00:00.000Z");

let submissions = 0;
const newRequest = (change: Partial<NewRequest> = {}): NewRequest => ({
  requester: "U0REQ",
  spec: SAMPLE_SPEC,
  notes: [],
  channel: "C0CHAN",
  submissionKey: `view:V${++submissions}`,
  ...change,
});

/** A VM as the inventory records it once Terraform has made it. */
const WEB_01 = {
  name: "web-01",
  requestId: "vm-a",
  owner: "U0REQ",
  spec: SAMPLE_SPEC,
  stateName: "vm-web-01",
  address: null,
  pipelineId: 41,
  approvedBy: "U0APP",
};

/** Takes a request to `to` through the store's own moves, as the bot would. */
async function moveTo(store: AsyncStore, id: string, to: RequestStatus): Promise<RequestRecord> {
  let current = await store.getRequest(id);
  if (current === undefined) throw new Error(`no request ${id}`);
  for (const status of pathTo(current.status, to)) {
    const moved = await store.transition(id, [current.status], status);
    if (moved === undefined) throw new Error(`${id} did not move to ${status}`);
    current = moved;
  }
  return current;
}

/** A fresh store for each case, on a clock the case moves. */
type Opener = (clock: TestClock) => Promise<AsyncStore>;

function contract(open: Opener): void {
  let clock: TestClock;
  let store: AsyncStore;
  beforeEach(async () => {
    clock = testClock(START);
    store = await open(clock);
  });
  afterEach(async () => {
    await store.close();
  });

  const created = async (change: Partial<NewRequest> = {}) =>
    (await store.createRequest(newRequest(change))).request;

  describe.each(REQUEST_STATUSES)("a request in %s", (from) => {
    it("moves to every status the table lists from it, and to no other", async () => {
      for (const to of REQUEST_STATUSES) {
        const request = await created();
        const before = await moveTo(store, request.id, from);
        const move = store.transition(request.id, [from], to);
        if (!TRANSITIONS[from].includes(to)) {
          await expect(move, `${from} → ${to}`).rejects.toBeInstanceOf(TransitionError);
          expect(await store.getRequest(request.id)).toEqual(before);
          continue;
        }
        const moved = await move;
        expect(moved, `${from} → ${to}`).toMatchObject({
          status: to,
          revision: before.revision + 1,
        });
        expect(await store.getRequest(request.id)).toEqual(moved);
      }
    });

    it("is not moved by a transition from another status, which writes nothing", async () => {
      const request = await created();
      const before = await moveTo(store, request.id, from);
      for (const other of REQUEST_STATUSES) {
        const to = TRANSITIONS[other][0];
        if (other === from || to === undefined) continue;
        const lost = await store.transition(
          request.id,
          [other],
          to,
          { error: "x" },
          { step: "s" },
          {
            actor: "U0X",
            action: "moved",
          },
        );
        expect(lost, `${other} → ${to}`).toBeUndefined();
      }
      expect(await store.getRequest(request.id)).toEqual(before);
      expect(await store.effect(request.id, "s")).toBeUndefined();
      expect(await store.listAudit(request.id)).toEqual([]);
    });
  });

  it("records when a request entered each status; a move to the same status keeps the start", async () => {
    const request = await created();
    expect(request.stageAt).toBe(START.toISOString());
    clock.advance(60_000);
    await store.transition(request.id, ["queued"], "planning");
    clock.advance(60_000);
    await store.updateRequest(request.id, { messageTs: "1.2" });
    expect((await store.getRequest(request.id))?.stageAt).toBe("2026-12-02T10:01:00.000Z");
    clock.advance(60_000);
    const failed = await store.transition(request.id, ["planning"], "failed");
    clock.advance(60_000);
    const again = await store.transition(request.id, ["failed"], "failed", { error: null });
    expect(failed?.stageAt).toBe("2026-12-02T10:03:00.000Z");
    expect(again?.stageAt).toBe("2026-12-02T10:03:00.000Z");
    expect(again?.stageTimes).toEqual({
      planning: "2026-12-02T10:01:00.000Z",
      failed: "2026-12-02T10:03:00.000Z",
    });
    expect(again?.updatedAt).toBe("2026-12-02T10:04:00.000Z");
  });

  it("keeps every field a patch writes, and refuses a status in a patch or an unknown request", async () => {
    const request = await created({ notes: ["folded"], stateName: "vm-web-01", kind: "destroy" });
    expect(request).toMatchObject({ kind: "destroy", notes: ["folded"], stateName: "vm-web-01" });
    const patch = {
      messageTs: "1700000000.000100",
      pipelineId: 3_000_000_001,
      pipelineUrl: "https://gitlab.example/p/1",
      address: "192.168.1.50",
      decision: { kind: "approved" as const, by: "U0APP", at: START.toISOString() },
      failure: { stage: "configure" as const, jobId: 7, retries: 1 },
      notes: ["a", "b"],
    };
    const updated = await store.updateRequest(request.id, patch);
    expect(updated).toMatchObject({ ...patch, revision: 1 });
    expect(await store.getRequest(request.id)).toEqual(updated);
    const cleared = await store.updateRequest(request.id, { decision: null, failure: null });
    expect(cleared).toMatchObject({ decision: null, failure: null, revision: 2 });
    await expect(store.updateRequest("vm-none", { error: "x" })).rejects.toThrow(
      "No request vm-none",
    );
    await expect(
      store.updateRequest(request.id, { status: "ready" } as unknown as { error: string }),
    ).rejects.toThrow("only through transition");
  });

  it("creates one request for a form delivered twice, found by its submission", async () => {
    const key = "view:twice";
    const first = await store.createRequest(newRequest({ submissionKey: key }));
    const again = await store.createRequest(newRequest({ submissionKey: key }));
    expect(first.created).toBe(true);
    expect(again).toEqual({ request: first.request, created: false });
    expect(await store.findBySubmission(key)).toEqual(first.request);
    expect(await store.findBySubmission("view:none")).toBeUndefined();
    expect(await store.getRequest("vm-none")).toBeUndefined();
  });

  it("writes a new request's decision and audit entry with it, and neither for a repeat", async () => {
    const key = "view:audited";
    const decision = { kind: "approved" as const, by: "vmbot", at: START.toISOString() };
    const audit = { actor: "U0REQ", action: "requested", detail: { rule: "default" } };
    const first = await store.createRequest(newRequest({ submissionKey: key, decision }), audit);
    const again = await store.createRequest(newRequest({ submissionKey: key }), audit);
    expect(first.request.decision).toEqual(decision);
    expect(again.created).toBe(false);
    expect((await store.listAudit(first.request.id)).map(({ id: _, ...entry }) => entry)).toEqual([
      { ...audit, requestId: first.request.id, at: START.toISOString() },
    ]);
  });

  it("lists active requests oldest first, by status, and by VM newest first", async () => {
    const a = await created();
    clock.advance(1);
    const b = await created({ spec: { ...SAMPLE_SPEC, name: "db-01" } });
    clock.advance(1);
    const c = await created();
    await moveTo(store, b.id, "ready");
    await moveTo(store, c.id, "planning");
    expect((await store.listActive()).map((r) => r.id)).toEqual([a.id, c.id]);
    expect((await store.listByStatus(["planning", "ready"])).map((r) => r.id)).toEqual([
      b.id,
      c.id,
    ]);
    expect(await store.listByStatus([])).toEqual([]);
    expect((await store.requestsForVm("web-01")).map((r) => r.id)).toEqual([c.id, a.id]);
    expect((await store.requestsForVm("db-01")).map((r) => r.id)).toEqual([b.id]);
  });

  it("lists the requests whose message shows an older revision, oldest change first", async () => {
    const a = await created();
    const b = await created();
    const none = await created();
    clock.advance(1);
    await store.updateRequest(b.id, { messageTs: "1.1" });
    clock.advance(1);
    const shownA = await store.updateRequest(a.id, { messageTs: "1.2" });
    await store.updateRequest(none.id, { pipelineId: 1 });
    expect((await store.listBehind(10)).map((r) => r.id)).toEqual([b.id, a.id]);
    expect((await store.listBehind(1)).map((r) => r.id)).toEqual([b.id]);
    await store.markRendered(a.id, shownA.revision, "hash-a");
    expect(await store.getRequest(a.id)).toMatchObject({
      renderedRevision: 1,
      renderedHash: "hash-a",
    });
    expect((await store.listBehind(10)).map((r) => r.id)).toEqual([b.id]);
  });

  it("writes a move's intents and audit entry with it, and nothing when it loses", async () => {
    const request = await created();
    await moveTo(store, request.id, "awaiting_approval");
    const [won, lost] = [
      await store.transition(
        request.id,
        ["awaiting_approval"],
        "rejected",
        {},
        [{ step: "cancel_pipeline" }, { step: "erase_plan:5002", detail: { job: 5002 } }],
        { actor: "U0APPROVER", action: "rejected", detail: { reason: "no" } },
      ),
      await store.transition(
        request.id,
        ["awaiting_approval"],
        "applying",
        {},
        { step: "play_apply:1" },
        { actor: "U0OTHER", action: "approved" },
      ),
    ];
    expect(won?.status).toBe("rejected");
    expect(lost).toBeUndefined();
    expect((await store.pendingEffects()).map((e) => [e.step, e.intent])).toEqual([
      ["cancel_pipeline", {}],
      ["erase_plan:5002", { job: 5002 }],
    ]);
    expect(await store.listAudit(request.id)).toEqual([
      {
        id: expect.any(Number) as number,
        requestId: request.id,
        actor: "U0APPROVER",
        action: "rejected",
        detail: { reason: "no" },
        at: START.toISOString(),
      },
    ]);
  });

  it("records an effect's intent, then its result, and lists pending and watched ones", async () => {
    const request = await created();
    expect(await store.effect(request.id, "create_pipeline")).toBeUndefined();
    const intended = await store.intend(request.id, "create_pipeline", { ref: "main" });
    expect(intended).toMatchObject({ state: "intended", intent: { ref: "main" }, result: null });
    expect((await store.intend(request.id, "create_pipeline", { ref: "x" })).intent).toEqual({
      ref: "main",
    });
    clock.advance(1);
    await store.intend(request.id, "reply:applied");
    expect((await store.pendingEffects()).map((e) => e.step)).toEqual([
      "create_pipeline",
      "reply:applied",
    ]);
    const watchUntil = new Date(START.getTime() + 60_000).toISOString();
    const done = await store.complete(request.id, "create_pipeline", { id: 7, watchUntil });
    expect(done).toMatchObject({
      state: "done",
      result: { id: 7 },
      doneAt: clock.now().toISOString(),
    });
    expect((await store.pendingEffects()).map((e) => e.step)).toEqual(["reply:applied"]);
    expect(await store.watchedEffects("create_pipeline", START.toISOString())).toEqual([done]);
    expect(await store.watchedEffects("create_pipeline", watchUntil)).toEqual([]);
    // A result without an intent (recorded by a reconcile) is a done effect too.
    expect(await store.complete("unlock:general", "remove_lock", { ok: true })).toMatchObject({
      state: "done",
    });
  });

  it("acts on a delivery once, and forgets it after its time", async () => {
    expect(await store.firstDelivery("command:T1", 60_000)).toBe(true);
    expect(await store.firstDelivery("command:T1", 60_000)).toBe(false);
    expect(await store.firstDelivery("command:T2", 60_000)).toBe(true);
    clock.advance(60_001);
    expect(await store.firstDelivery("command:T1", 60_000)).toBe(true);
  });

  it("keeps the inventory: a VM, its update, its lease, notes, marks and removal", async () => {
    const vm = { ...WEB_01, address: "192.168.1.50", leaseUntil: null };
    const recorded = await store.inventory.record(vm);
    expect(recorded).toMatchObject({ ...vm, status: "live", createdAt: START.toISOString() });
    clock.advance(1_000);
    expect(
      await store.inventory.record({ ...vm, requestId: "vm-b", owner: "U0NEW" }),
    ).toMatchObject({
      requestId: "vm-b",
      owner: "U0NEW",
      createdAt: START.toISOString(),
    });
    await store.inventory.record({ ...vm, name: "db-01", owner: "U0OTHER", stateName: null });
    expect((await store.inventory.list()).map((v) => v.name)).toEqual(["db-01", "web-01"]);
    expect((await store.inventory.list({ owner: "U0OTHER" })).map((v) => v.name)).toEqual([
      "db-01",
    ]);
    await store.inventory.setLease("web-01", "2026-12-09T10:00:00.000Z");
    await store.inventory.note("web-01", "destroy failed");
    await store.inventory.checked(["web-01"]);
    expect(await store.inventory.get("web-01")).toMatchObject({
      leaseUntil: "2026-12-09T10:00:00.000Z",
      statusNote: "destroy failed",
      checkedAt: clock.now().toISOString(),
    });
    await store.inventory.mark("db-01", "gone", "its state vanished");
    await store.inventory.note("db-01", "ignored on a gone VM");
    expect(await store.inventory.get("db-01")).toMatchObject({
      status: "gone",
      statusNote: "its state vanished",
    });
    await store.inventory.seeStates(["vm-web-01", "hand-made", "hand-made"]);
    expect(await store.inventory.unmanagedStates()).toEqual(["hand-made"]);
    // A destroy asked before the VM was made (its name made again since) leaves it.
    await store.inventory.remove("web-01", new Date(START.getTime() - 1).toISOString());
    expect(await store.inventory.get("web-01")).toBeDefined();
    await store.inventory.remove("web-01", clock.now().toISOString());
    expect(await store.inventory.get("web-01")).toBeUndefined();
  });

  it("counts an approval once per person and plan job, and removes lapsed ones", async () => {
    const at = START.toISOString();
    const approval = { requestId: "vm-a", planJobId: 5001, user: "U0A", groups: ["S0OPS"], at };
    expect(await store.approvals.add(approval)).toBe(true);
    expect(await store.approvals.add(approval)).toBe(false);
    expect(await store.approvals.add({ ...approval, user: "U0B", groups: [] })).toBe(true);
    expect(await store.approvals.list("vm-a", 5001)).toEqual([
      approval,
      { ...approval, user: "U0B", groups: [] },
    ]);
    expect(await store.approvals.earlier("vm-a", 5001)).toBe(false);
    expect(await store.approvals.earlier("vm-a", 5002)).toBe(true);
    await store.approvals.remove("vm-a", 5001, ["U0A"]);
    expect((await store.approvals.list("vm-a", 5001)).map((a) => a.user)).toEqual(["U0B"]);
  });

  it("remembers who opened the Home tab once each, in the order they came, and the hash of the Home Slack took last", async () => {
    await store.homes.opened("U0REQ");
    await store.homes.opened("U0APPROVER");
    expect(await store.homes.viewHash("U0REQ")).toBeUndefined();
    await store.homes.published("U0REQ", "1712345678.abc");
    await store.homes.opened("U0REQ");
    expect(await store.homes.list()).toEqual(["U0REQ", "U0APPROVER"]);
    expect(await store.homes.has("U0APPROVER")).toBe(true);
    expect(await store.homes.has("U0OTHER")).toBe(false);
    expect(await store.homes.viewHash("U0REQ")).toBe("1712345678.abc");
    expect(await store.homes.viewHash("U0APPROVER")).toBeUndefined();
    expect(await store.homes.viewHash("U0OTHER")).toBeUndefined();
  });

  it("opens a destroy only while the VM is live and nothing is in flight (a lease's, only while that lease is the VM's), and extends a lease only while no destroy is", async () => {
    const ended = "2026-12-02T09:00:00.000Z";
    const later = "2026-12-09T10:00:00.000Z";
    await store.inventory.record({ ...WEB_01, leaseUntil: ended });
    const destroy = (key: string) =>
      newRequest({ kind: "destroy", spec: { ...SAMPLE_SPEC, name: "web-01" }, submissionKey: key });
    const lease = { name: "web-01", leaseUntil: ended };
    // The lease moved since the pass read it: nothing is opened, nothing written.
    await store.inventory.setLease("web-01", later);
    expect(await store.createDestroyRequest(destroy("lease:a"), lease)).toBeUndefined();
    expect(await store.findBySubmission("lease:a")).toBeUndefined();
    await store.inventory.setLease("web-01", ended);
    // Another request for the VM in flight: none either.
    const other = await created({ spec: { ...SAMPLE_SPEC, name: "web-01" } });
    expect(await store.createDestroyRequest(destroy("lease:b"), lease)).toBeUndefined();
    await moveTo(store, other.id, "failed");
    const audit = { actor: "vmbot", action: "requested", detail: {} };
    const opened = await store.createDestroyRequest(destroy("lease:c"), lease, audit);
    expect(opened).toMatchObject({ created: true, request: { kind: "destroy", status: "queued" } });
    expect((await store.listAudit(opened?.request.id)).map((e) => e.action)).toEqual(["requested"]);
    // Asked again (a restart): the same request, though it is itself in flight now.
    expect(await store.createDestroyRequest(destroy("lease:c"), lease, audit)).toEqual({
      request: opened?.request,
      created: false,
    });
    // The destroy in flight keeps the lease where it ended, and another destroy out.
    expect(await store.inventory.extendLease("web-01", later)).toBe("destroying");
    expect((await store.inventory.get("web-01"))?.leaseUntil).toBe(ended);
    expect(
      await store.createDestroyRequest(destroy("asked:1"), { name: "web-01" }),
    ).toBeUndefined();
    await moveTo(store, opened?.request.id ?? "", "rejected");
    const asked = await store.createDestroyRequest(destroy("asked:1"), { name: "web-01" });
    expect(asked?.created).toBe(true);
    await moveTo(store, asked?.request.id ?? "", "failed");
    expect(await store.inventory.extendLease("web-01", later)).toBe("extended");
    expect((await store.inventory.get("web-01"))?.leaseUntil).toBe(later);
    // A VM marked gone, or one vmbot does not know: no lease moves, none is opened.
    await store.inventory.mark("web-01", "gone", "its state vanished");
    expect(await store.inventory.extendLease("web-01", ended)).toBe("gone");
    expect(await store.inventory.extendLease("db-09", ended)).toBe("gone");
    const gone = { name: "web-01" };
    expect(await store.createDestroyRequest(destroy("lease:d"), gone)).toBeUndefined();
    expect((await store.inventory.get("web-01"))?.leaseUntil).toBe(later);
  });

  it("writes a create request only while no live VM and no create request on its way uses its name or address", async () => {
    const holding = ["queued", "planning", "awaiting_approval", "applying", "configuring"] as const;
    const guard = (name: string, address: string) => ({ statuses: holding, name, address });
    const ask = (name: string, ip: string) => newRequest({ spec: { ...SAMPLE_SPEC, name, ip } });
    const audit = { actor: "U0REQ", action: "requested", detail: {} };
    // A live VM holds its name and its address, whatever became of the request that made it.
    await store.inventory.record({
      ...WEB_01,
      spec: { ...SAMPLE_SPEC, ip: "10.0.0.7/24" },
      leaseUntil: null,
    });
    const sameName = ask("web-01", "10.0.0.8/24");
    expect(
      await store.createVmRequest(sameName, guard("web-01", "10.0.0.8"), audit),
    ).toBeUndefined();
    expect(await store.findBySubmission(sameName.submissionKey)).toBeUndefined();
    expect(await store.listAudit()).toEqual([]);
    expect(
      await store.createVmRequest(ask("db-01", "10.0.0.7/24"), guard("db-01", "10.0.0.7")),
    ).toBeUndefined();
    // A create request on its way holds them; a destroy or an extension of another VM does not.
    const asked = ask("db-01", "10.0.0.9/24");
    const first = await store.createVmRequest(asked, guard("db-01", "10.0.0.9"), audit);
    expect(first).toMatchObject({ created: true, request: { status: "queued", kind: "create" } });
    expect((await store.listAudit(first?.request.id)).map((e) => e.action)).toEqual(["requested"]);
    expect(
      await store.createVmRequest(ask("db-02", "10.0.0.9/16"), guard("db-02", "10.0.0.9")),
    ).toBeUndefined();
    for (const kind of ["destroy", "extend"] as const) {
      await created({ kind, spec: { ...SAMPLE_SPEC, name: "old-01", ip: "10.0.0.20/24" } });
    }
    const free = await store.createVmRequest(
      ask("old-01", "10.0.0.20/24"),
      guard("old-01", "10.0.0.20"),
    );
    expect(free?.created).toBe(true);
    // The same submission again (Slack's retry) is the request it made, held or not.
    expect(
      await store.createVmRequest(ask("db-01", "10.0.0.9/24"), guard("db-01", "10.0.0.9")),
    ).toBeUndefined();
    const again = { ...ask("db-01", "10.0.0.9/24"), submissionKey: asked.submissionKey };
    expect(await store.createVmRequest(again, guard("db-01", "10.0.0.9"))).toEqual({
      request: first?.request,
      created: false,
    });
    // Ended without a VM, a request lets them go; a VM gone from GitLab, or destroyed, too.
    await moveTo(store, first?.request.id ?? "", "rejected");
    expect(
      (await store.createVmRequest(ask("db-01", "10.0.0.9/24"), guard("db-01", "10.0.0.9")))
        ?.created,
    ).toBe(true);
    await store.inventory.mark("web-01", "gone", "its state vanished");
    expect(
      (await store.createVmRequest(ask("web-01", "10.0.0.8/24"), guard("web-01", "10.0.0.8")))
        ?.created,
    ).toBe(true);
    expect((await store.inventory.holding({ name: "web-01", address: "10.0.0.7" })).length).toBe(0);
    await store.inventory.mark("web-01", "live", null);
    expect(
      (await store.inventory.holding({ name: "x", address: "10.0.0.7" })).map((vm) => vm.name),
    ).toEqual(["web-01"]);
    await store.inventory.remove("web-01", clock.now().toISOString());
    expect(await store.inventory.holding({ name: "web-01", address: "10.0.0.7" })).toEqual([]);
  });

  it("writes a create request only while it fits its quota, given every VM held at the write", async () => {
    const holding = ["queued", "planning", "awaiting_approval", "applying", "configuring"] as const;
    const ask = (name: string, ip: string, requester = "U0REQ") =>
      newRequest({ requester, spec: { ...SAMPLE_SPEC, name, ip } });
    const seen: Holding[][] = [];
    const quota = (room: number): QuotaGuard => ({
      scopes: ["person:U0REQ"],
      fits(held) {
        seen.push([...held]);
        return held.filter((vm) => vm.owner === "U0REQ").length < room;
      },
    });
    const guard = (name: string, address: string, room: number) => ({
      statuses: holding,
      name,
      address,
      quota: quota(room),
    });
    // A live VM, a create request on its way for it (counted once), another's request.
    await store.inventory.record({ ...WEB_01, leaseUntil: null });
    await created({ spec: { ...SAMPLE_SPEC, name: "web-01" } });
    await created({
      requester: "U0OTHER",
      spec: { ...SAMPLE_SPEC, name: "db-07", ip: "10.0.0.7/24" },
    });
    const over = ask("db-01", "10.0.0.9/24");
    expect(await store.createVmRequest(over, guard("db-01", "10.0.0.9", 1))).toBeUndefined();
    expect(await store.findBySubmission(over.submissionKey)).toBeUndefined();
    expect(
      seen
        .at(-1)
        ?.map((vm) => [vm.owner, vm.spec.name])
        .sort(),
    ).toEqual([
      ["U0OTHER", "db-07"],
      ["U0REQ", "web-01"],
    ]);
    const fits = await store.createVmRequest(over, guard("db-01", "10.0.0.9", 2));
    expect(fits?.created).toBe(true);
    // The next one sees the one just written.
    const next = ask("db-02", "10.0.0.10/24");
    expect(await store.createVmRequest(next, guard("db-02", "10.0.0.10", 2))).toBeUndefined();
    expect(seen.at(-1)?.filter((vm) => vm.owner === "U0REQ")).toHaveLength(2);
  });

  it("moves a create request back onto its VM only while the VM is live, its own, and no destroy of it is in flight", async () => {
    // The request made web-01; its configure job failed.
    const made = await moveTo(store, (await created()).id, "failed");
    const retry = () =>
      store.transitionOnLiveVm("web-01", made.id, ["failed"], "configuring", {}, undefined, {
        actor: "U0REQ",
        action: "configure_retried",
        detail: {},
      });
    expect(await retry()).toBe("gone");
    await store.inventory.record({ ...WEB_01, requestId: "another", leaseUntil: null });
    expect(await retry()).toBe("gone");
    await store.inventory.record({ ...WEB_01, requestId: made.id, leaseUntil: null });
    const destroy = newRequest({ kind: "destroy", spec: { ...SAMPLE_SPEC, name: "web-01" } });
    const opened = await store.createDestroyRequest(destroy, { name: "web-01" });
    expect(opened?.created).toBe(true);
    expect(await retry()).toBe("destroying");
    expect((await store.getRequest(made.id))?.status).toBe("failed");
    expect(await store.listAudit(made.id)).toEqual([]);
    await moveTo(store, opened?.request.id ?? "", "rejected");
    const moved = await retry();
    expect(moved).toMatchObject({ id: made.id, status: "configuring" });
    expect((await store.listAudit(made.id)).map((entry) => entry.action)).toEqual([
      "configure_retried",
    ]);
    // Its configure job on its way: no destroy is opened, and no second move is made.
    const late = newRequest({ kind: "destroy", spec: { ...SAMPLE_SPEC, name: "web-01" } });
    expect(await store.createDestroyRequest(late, { name: "web-01" })).toBeUndefined();
    expect(await retry()).toBeUndefined();
  });

  it("takes writes while open, and says it is closed after", async () => {
    expect(await store.writable()).toEqual({ ok: true });
    expect(await store.isOpen()).toBe(true);
    await store.close();
    expect(await store.isOpen()).toBe(false);
    expect(await store.writable()).toEqual({ ok: false, reason: "the store is closed" });
  });
}

describe("the store's contract on SQLite", () => {
  contract((clock) =>
    Promise.resolve(asAsyncStore(openSqliteStore(":memory:", { clock: clock.now }))),
  );
});

describeWithPostgres("the store's contract on PostgreSQL", () => {
  const database = useDatabase();
  contract(async (clock) => {
    // Each case starts from empty tables, as each SQLite case starts from a new file.
    const admin = new pg.Client({ connectionString: database.url() });
    await admin.connect();
    try {
      await admin.query(
        "DO $$ BEGIN IF to_regclass('requests') IS NOT NULL THEN TRUNCATE requests, audit_log, effects, deliveries, heartbeat, vms, states_seen, approvals, leadership, homes; END IF; END $$",
      );
    } finally {
      await admin.end();
    }
    return openPostgresStore(database.url(), { clock: clock.now, replica: "replica-a" });
  });
});
