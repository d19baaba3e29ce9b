import type Database from "better-sqlite3";
import { FINAL_STATUSES } from "../requests/lifecycle.js";
import { guardWrite } from "./sqlite-checks.js";
import type { Inventory, LeaseExtension } from "./inventory.js";
import type { Store } from "./store.js";

/**
 * The two writes a lease's end and its owner's extension race on: the destroy request the end
 * opens, made only while the lease it ends is the VM's, and the extension's move of the lease,
 * made only while no destroy of the VM is in flight. Each is its check and its write in one
 * transaction, so that an owner who extends the lease as it ends gets one of the two, never a
 * destroy of a VM they were told they keep.
 */

const IN_FLIGHT = `status NOT IN (${FINAL_STATUSES.map((status) => `'${status}'`).join(", ")})`;

export function createSqliteLeaseEndRequest(
  db: Database.Database,
  requests: Pick<Store, "createRequest" | "findBySubmission">,
): Store["createLeaseEndRequest"] {
  const selectDue = db.prepare(`
    SELECT 1 FROM vms
    WHERE name = @name AND status = 'live' AND lease_until = @until
      AND NOT EXISTS (
        SELECT 1 FROM requests
        WHERE json_extract(spec, '$.name') = @name
          AND ${IN_FLIGHT})`);
  return (request, lease, audit) =>
    guardWrite("record a new request", () =>
      db.transaction(() => {
        const existing = requests.findBySubmission(request.submissionKey);
        if (existing !== undefined) return { request: existing, created: false };
        if (selectDue.get(lease) === undefined) return undefined;
        return requests.createRequest(request, audit);
      })(),
    );
}

export function createSqliteExtendLease(db: Database.Database): Inventory["extendLease"] {
  const selectStatus = db.prepare<[string], { status: string }>(
    "SELECT status FROM vms WHERE name = ?",
  );
  const selectDestroying = db.prepare(`
    SELECT 1 FROM requests
    WHERE kind = 'destroy' AND json_extract(spec, '$.name') = ? AND ${IN_FLIGHT}
    LIMIT 1`);
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
