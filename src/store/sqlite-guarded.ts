import type Database from "better-sqlite3";
import { FINAL_STATUSES } from "../requests/lifecycle.js";
import { holdingsOf } from "./holdings.js";
import { guardWrite } from "./sqlite-checks.js";
import type { Inventory, LeaseExtension } from "./inventory.js";
import type { AuditEntry, DestroyGuard, HoldGuard, NewRequest, Store } from "./store.js";

type RequestWrites = Pick<Store, "createRequest" | "findBySubmission">;

/**
 * The writes that race over one VM, each its check and its write in one transaction: a create
 * request, made only while no live VM and no other create request on its way uses its name or
 * address, and while it fits its quotas; a destroy request, made only while the VM is live,
 * nothing else is in flight for it and (at a lease's end) its lease still ends then; and an
 * extension's move of the lease, or Retry configure's move of the VM's create request, each made
 * only while no destroy of the VM is in flight. So two people asking at once for one name or one
 * address make one request, two forms sent at once that only one fits in a quota make one, two
 * asking to destroy one VM make one, an owner who extends the lease as it ends gets the extension
 * or the destroy, never a destroy of a VM they were told they keep, and a VM's configure job is
 * never run again while it is being destroyed.
 */

const IN_FLIGHT = `status NOT IN (${FINAL_STATUSES.map((status) => `'${status}'`).join(", ")})`;

/**
 * A new request written in one transaction with its check: the request made for the same
 * submission is returned as it is, whatever the check would say; else it is written when `free`
 * says nothing stands in its way, and undefined, changing nothing, when something does.
 */
function guardedCreate<G>(
  db: Database.Database,
  requests: RequestWrites,
  free: (guard: G) => boolean,
) {
  return (request: NewRequest, guard: G, audit?: Omit<AuditEntry, "requestId">) =>
    guardWrite("record a new request", () =>
      db.transaction(() => {
        const existing = requests.findBySubmission(request.submissionKey);
        if (existing !== undefined) return { request: existing, created: false };
        return free(guard) ? requests.createRequest(request, audit) : undefined;
      })(),
    );
}

export function createSqliteVmRequest(
  db: Database.Database,
  requests: RequestWrites & Pick<Store, "findHolding" | "listHeld">,
  inventory: Pick<Inventory, "holding" | "list">,
): Store["createVmRequest"] {
  return guardedCreate(db, requests, (guard: HoldGuard) => {
    const vm = { name: guard.name, address: guard.address };
    return (
      inventory.holding(vm).length === 0 &&
      requests.findHolding(guard.statuses, vm).length === 0 &&
      (guard.quota?.fits(holdingsOf(inventory.list(), requests.listHeld(guard.statuses))) ?? true)
    );
  });
}

export function createSqliteDestroyRequest(
  db: Database.Database,
  requests: RequestWrites,
): Store["createDestroyRequest"] {
  const selectFree = db.prepare(`
    SELECT 1 FROM vms
    WHERE name = @name AND status = 'live' AND (@leaseUntil IS NULL OR lease_until = @leaseUntil)
      AND NOT EXISTS (
        SELECT 1 FROM requests
        WHERE json_extract(spec, '$.name') = @name
          AND ${IN_FLIGHT})`);
  return guardedCreate(
    db,
    requests,
    (guard: DestroyGuard) =>
      selectFree.get({ name: guard.name, leaseUntil: guard.leaseUntil ?? null }) !== undefined,
  );
}

/** Whether a destroy of the VM (its name the statement's one parameter) is in flight. */
const destroyingOf = (db: Database.Database) =>
  db.prepare(`
    SELECT 1 FROM requests
    WHERE kind = 'destroy' AND json_extract(spec, '$.name') = ? AND ${IN_FLIGHT}
    LIMIT 1`);

export function createSqliteExtendLease(db: Database.Database): Inventory["extendLease"] {
  const selectStatus = db.prepare<[string], { status: string }>(
    "SELECT status FROM vms WHERE name = ?",
  );
  const selectDestroying = destroyingOf(db);
  const updateLease = db.prepare("UPDATE vms SET lease_until = ? WHERE name = ?");
  return (name, until) =>
    guardWrite(`extend the lease of the VM ${name}`, () =>
      db.transaction((): LeaseExtension => {
        if (selectStatus.get(name)?.status !== "live") return "gone";
        if (selectDestroying.get(name) !== undefined) return "destroying";
        updateLease.run(until, name);
        return "extended";
      })(),
    );
}

export function createSqliteTransitionOnLiveVm(
  db: Database.Database,
  requests: Pick<Store, "transition">,
): Store["transitionOnLiveVm"] {
  const selectVm = db.prepare<[string], { status: string; request_id: string }>(
    "SELECT status, request_id FROM vms WHERE name = ?",
  );
  const selectDestroying = destroyingOf(db);
  return (vm, ...move) =>
    guardWrite(`move request ${move[0]} onto the VM ${vm}`, () =>
      db.transaction(() => {
        const row = selectVm.get(vm);
        if (row?.status !== "live" || row.request_id !== move[0]) return "gone";
        if (selectDestroying.get(vm) !== undefined) return "destroying";
        return requests.transition(...move);
      })(),
    );
}
