import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/store/migrations.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { NewRequest } from "../../src/store/store.js";
import { moveTo } from "../support/lifecycle.js";
import { SAMPLE_SPEC } from "../support/requests.js";

const spec = SAMPLE_SPEC;

const newRequest = (submissionKey = "view:V1"): NewRequest => ({
  requester: "U0REQ",
  spec,
  notes: [],
  channel: "C0CHAN",
  submissionKey,
});

const dirs: string[] = [];
function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-store-"));
  dirs.push(dir);
  return join(dir, "nested", "vmbot.sqlite");
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the SQLite store", () => {
  it("records when a request entered its status: a move starts a stage, other writes do not", () => {
    let now = new Date("2026-12-02T10:00:00.000Z");
    const store = openSqliteStore(tempDb(), { clock: () => now });
    const { request } = store.createRequest(newRequest());
    expect(request.stageAt).toBe("2026-12-02T10:00:00.000Z");
    now = new Date("2026-12-02T10:01:00.000Z");
    store.transition(request.id, ["queued"], "planning");
    now = new Date("2026-12-02T10:02:00.000Z");
    store.updateRequest(request.id, { messageTs: "1.2" });
    expect(store.getRequest(request.id)?.stageAt).toBe("2026-12-02T10:01:00.000Z");
    now = new Date("2026-12-02T10:03:00.000Z");
    const moved = store.transition(request.id, ["planning"], "failed");
    expect(moved?.stageAt).toBe("2026-12-02T10:03:00.000Z");
    // The same status again (Plan again recording its new request) keeps the stage's start.
    now = new Date("2026-12-02T10:04:00.000Z");
    store.transition(request.id, ["failed"], "failed", { error: null });
    expect(store.getRequest(request.id)?.stageAt).toBe("2026-12-02T10:03:00.000Z");
    store.close();
  });

  it("creates the file and its folder on first run and applies every migration", () => {
    const path = tempDb();
    const store = openSqliteStore(path);
    store.close();
    const db = new Database(path, { readonly: true });
    expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    db.close();
  });

  it("keeps requests, their message and pipeline, and the audit log across a restart", () => {
    const path = tempDb();
    const first = openSqliteStore(path);
    const { request, created } = first.createRequest(newRequest());
    expect(created).toBe(true);
    expect(request).toMatchObject({
      status: "queued",
      requester: "U0REQ",
      spec,
      channel: "C0CHAN",
    });
    first.updateRequest(request.id, { messageTs: "1700000000.000100" });
    first.updateRequest(request.id, { pipelineId: 42, pipelineUrl: "https://gl/p/42" });
    first.audit({ requestId: request.id, actor: "U0REQ", action: "requested", detail: { a: 1 } });
    first.close();

    const second = openSqliteStore(path);
    expect(second.getRequest(request.id)).toMatchObject({
      messageTs: "1700000000.000100",
      pipelineId: 42,
      pipelineUrl: "https://gl/p/42",
      status: "queued",
    });
    expect(second.listActive().map((r) => r.id)).toEqual([request.id]);
    expect(second.listAudit(request.id)).toEqual([
      expect.objectContaining({ actor: "U0REQ", action: "requested", detail: { a: 1 } }),
    ]);
    second.close();
  });

  it("remembers who opened their Home tab, once each, across a reopen", () => {
    const path = tempDb();
    const first = openSqliteStore(path);
    first.homes.opened("U0REQ");
    first.homes.opened("U0APPROVER");
    first.homes.opened("U0REQ");
    first.close();
    const second = openSqliteStore(path);
    expect(second.homes.list()).toEqual(["U0REQ", "U0APPROVER"]);
    expect(second.homes.has("U0APPROVER")).toBe(true);
    expect(second.homes.has("U0OTHER")).toBe(false);
    second.close();
  });

  it("upgrades a database written by the first schema and keeps its requests", () => {
    const path = tempDb();
    const first = openSqliteStore(path);
    const { request } = first.createRequest(newRequest());
    first.close();
    const db = new Database(path);
    db.exec(
      "DROP TABLE homes; ALTER TABLE requests DROP COLUMN approvals; DROP TABLE approvals; DROP TABLE states_seen; DROP TABLE vms; DROP INDEX requests_vm_name; ALTER TABLE requests DROP COLUMN state_name; ALTER TABLE requests DROP COLUMN kind; " +
        "ALTER TABLE requests DROP COLUMN stage_times; ALTER TABLE requests DROP COLUMN failure; ALTER TABLE requests DROP COLUMN stage_at; DROP TABLE deliveries; DROP INDEX requests_behind; DROP TABLE heartbeat; ALTER TABLE requests DROP COLUMN revision; ALTER TABLE requests DROP COLUMN rendered_revision; ALTER TABLE requests DROP COLUMN rendered_hash; " +
        "ALTER TABLE requests DROP COLUMN review; ALTER TABLE requests DROP COLUMN decision; ALTER TABLE requests DROP COLUMN address; DROP TABLE effects;",
    );
    db.pragma("user_version = 1");
    db.close();

    const upgraded = openSqliteStore(path);
    expect(upgraded.getRequest(request.id)).toMatchObject({
      kind: "create",
      review: null,
      decision: null,
      approvals: null,
      stateName: null,
    });
    const decision = { kind: "approved" as const, by: "U0APPROVER", at: "2026-12-02T10:05:00Z" };
    expect(upgraded.updateRequest(request.id, { decision }).decision).toEqual(decision);
    upgraded.close();
  });

  it("records an effect's intent, then its result, and lists what a crash left pending", () => {
    const store = openSqliteStore(":memory:");
    const { request } = store.createRequest(newRequest());
    expect(store.effect(request.id, "create_pipeline")).toBeUndefined();
    const intended = store.intend(request.id, "create_pipeline", { ref: "main" });
    expect(intended).toMatchObject({ state: "intended", intent: { ref: "main" }, result: null });
    // A second intent keeps the first.
    expect(store.intend(request.id, "create_pipeline", { ref: "other" }).intent).toEqual({
      ref: "main",
    });
    store.intend(request.id, "reply:applied");
    expect(store.pendingEffects().map((e) => e.step)).toEqual(["create_pipeline", "reply:applied"]);
    const done = store.complete(request.id, "create_pipeline", { id: 7 });
    expect(done).toMatchObject({ state: "done", result: { id: 7 } });
    expect(done.doneAt).not.toBeNull();
    expect(store.pendingEffects().map((e) => e.step)).toEqual(["reply:applied"]);
    store.close();
  });

  it("records a transition's intent in the same write, and none when the transition loses", () => {
    const store = openSqliteStore(":memory:");
    const { request } = store.createRequest(newRequest());
    moveTo(store, request.id, "awaiting_approval");
    const won = store.transition(
      request.id,
      ["awaiting_approval"],
      "applying",
      {},
      { step: "play_apply:1" },
    );
    const lost = store.transition(
      request.id,
      ["awaiting_approval"],
      "rejected",
      {},
      { step: "cancel_pipeline" },
    );
    expect(won?.status).toBe("applying");
    expect(lost).toBeUndefined();
    expect(store.pendingEffects().map((e) => e.step)).toEqual(["play_apply:1"]);
    store.close();
  });

  it("writes a transition's audit entry and several intents with the move, and nothing when it loses", () => {
    const store = openSqliteStore(":memory:");
    const { request } = store.createRequest(newRequest());
    moveTo(store, request.id, "awaiting_approval");
    const won = store.transition(
      request.id,
      ["awaiting_approval"],
      "rejected",
      {},
      [{ step: "cancel_pipeline" }, { step: "erase_plan:5002" }],
      { actor: "U0APPROVER", action: "rejected" },
    );
    const lost = store.transition(
      request.id,
      ["awaiting_approval"],
      "applying",
      {},
      { step: "play_apply:1" },
      { actor: "U0OTHER", action: "approved" },
    );
    expect(won?.status).toBe("rejected");
    expect(lost).toBeUndefined();
    expect(store.pendingEffects().map((e) => e.step)).toEqual([
      "cancel_pipeline",
      "erase_plan:5002",
    ]);
    expect(store.listAudit(request.id).map((e) => [e.actor, e.action])).toEqual([
      ["U0APPROVER", "rejected"],
    ]);
    store.close();
  });

  it("parses a request's review once: read again unchanged it is the same record, frozen; changed, it is read anew", () => {
    const store = openSqliteStore(tempDb());
    const { request } = store.createRequest(newRequest());
    const review = {
      plan: {
        resources: [{ address: "proxmox_virtual_environment_vm.vm", action: "create" as const }],
        derivedCounts: { add: 1, change: 0, destroy: 0, replace: 0, import: 0 },
        noChanges: false,
        errors: [],
        outputChanges: [],
        notes: [],
      },
      planJobId: 7,
      planJobUrl: "https://gitlab.example.com/group/project/-/jobs/7",
      planFile: "uploaded" as const,
    };
    store.updateRequest(request.id, { review });
    const first = store.getRequest(request.id)!.review!;
    expect(first).toEqual(review);
    // Every pass lists the open requests: the review is handed out again, not parsed again.
    expect(store.listActive()[0]!.review).toBe(first);
    expect(store.getRequest(request.id)!.review).toBe(first);
    expect(Object.isFrozen(first.plan.resources[0])).toBe(true);
    // Another write that leaves the review as it was keeps it too.
    store.updateRequest(request.id, { messageTs: "1.2" });
    expect(store.getRequest(request.id)!.review).toBe(first);

    store.updateRequest(request.id, { review: { ...review, planFile: "failed" } });
    const second = store.getRequest(request.id)!.review!;
    expect(second).not.toBe(first);
    expect(second.planFile).toBe("failed");
    store.close();
  });

  it("creates one request for a form delivered twice", () => {
    const store = openSqliteStore(":memory:");
    const first = store.createRequest(newRequest("view:V9"));
    const again = store.createRequest(newRequest("view:V9"));
    expect(again).toEqual({ request: first.request, created: false });
    expect(store.listActive()).toHaveLength(1);
    store.close();
  });

  it("writes a new request's audit entry with it, and none for a form delivered again", () => {
    const store = openSqliteStore(":memory:");
    const entry = { actor: "U0REQ", action: "requested", detail: { rule: "roles.requesters" } };
    const first = store.createRequest(newRequest("view:V7"), entry);
    const again = store.createRequest(newRequest("view:V7"), entry);
    expect(again.created).toBe(false);
    expect(store.listAudit(first.request.id).map((e) => [e.actor, e.action, e.detail])).toEqual([
      ["U0REQ", "requested", { rule: "roles.requesters" }],
    ]);
    store.close();
  });

  it("leaves finished requests out of the active list", () => {
    const store = openSqliteStore(":memory:");
    const a = store.createRequest(newRequest("view:A")).request;
    const b = store.createRequest(newRequest("view:B")).request;
    store.transition(a.id, ["queued"], "failed", { error: "GitLab said no" });
    expect(store.listActive().map((r) => r.id)).toEqual([b.id]);
    expect(store.getRequest(a.id)?.error).toBe("GitLab said no");
    store.close();
  });

  it("finds the requests in a status that hold a VM's name or address, whatever the prefix", () => {
    const store = openSqliteStore(":memory:");
    const held = (name: string, ip: string, key: string) =>
      store.createRequest({ ...newRequest(key), spec: { ...spec, name, ip } }).request;
    const byName = held("web-01", "10.0.0.5/24", "view:A");
    const byAddress = held("db-01", "10.0.0.7/16", "view:B");
    const ended = held("web-01", "10.0.0.7/24", "view:C");
    held("other", "10.0.0.70/24", "view:D");
    store.transition(ended.id, ["queued"], "failed", { error: "GitLab said no" });

    const found = store.findHolding(["queued"], { name: "web-01", address: "10.0.0.7" });
    expect(found.map((r) => r.id)).toEqual([byName.id, byAddress.id]);
    expect(store.findHolding(["queued"], { name: "web-1", address: "10.0.0.0" })).toEqual([]);
    expect(store.findHolding(["ready"], { name: "web-01", address: "10.0.0.7" })).toEqual([]);
    expect(store.listHeld(["queued"]).map((r) => [r.requester, r.spec.name, r.spec.ip])).toEqual([
      ["U0REQ", "web-01", "10.0.0.5/24"],
      ["U0REQ", "db-01", "10.0.0.7/16"],
      ["U0REQ", "other", "10.0.0.70/24"],
    ]);
    store.close();
  });

  it("lets exactly one of two concurrent transitions from the same status win", () => {
    const store = openSqliteStore(":memory:");
    const { request } = store.createRequest(newRequest());
    moveTo(store, request.id, "awaiting_approval");
    const first = store.transition(request.id, ["awaiting_approval"], "applying");
    const second = store.transition(request.id, ["awaiting_approval"], "applying");
    expect(first?.status).toBe("applying");
    expect(second).toBeUndefined();
    expect(store.transition(request.id, ["applying"], "failed", { error: "boom" })).toMatchObject({
      status: "failed",
      error: "boom",
    });
    store.close();
  });

  it("refuses to update a request it does not have", () => {
    const store = openSqliteStore(":memory:");
    expect(() => store.updateRequest("vm-missing", { error: "x" })).toThrow(
      "No request vm-missing in the store.",
    );
    store.close();
  });

  it("refuses a database written by a newer vmbot", () => {
    const path = tempDb();
    openSqliteStore(path).close();
    const db = new Database(path);
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    expect(() => openSqliteStore(path)).toThrow(/newer than this vmbot knows/);
  });

  it("reports whether it is open", () => {
    const store = openSqliteStore(":memory:");
    expect(store.isOpen()).toBe(true);
    store.close();
    expect(store.isOpen()).toBe(false);
  });

  it("acts on a delivery once, across a reopen, and forgets it after its time", () => {
    const path = tempDb();
    let now = new Date("2026-12-02T10:00:00Z");
    const clock = () => now;
    const first = openSqliteStore(path, { clock });
    expect(first.firstDelivery("command:T1", 60_000)).toBe(true);
    expect(first.firstDelivery("command:T1", 60_000)).toBe(false);
    expect(first.firstDelivery("command:T2", 60_000)).toBe(true);
    first.close();

    const second = openSqliteStore(path, { clock });
    expect(second.firstDelivery("command:T1", 60_000)).toBe(false);
    now = new Date("2026-12-02T10:01:01Z");
    expect(second.firstDelivery("command:T1", 60_000)).toBe(true);
    second.close();
  });
});
