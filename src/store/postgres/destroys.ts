import { FINAL_STATUSES } from "../../requests/lifecycle.js";
import type { AsyncInventory, AsyncStore } from "../async.js";
import type { LeaseExtension } from "../inventory.js";
import { guardWrite, type Queryable, type Runner } from "./pool.js";
import { bySubmission, insertRequest, type MoveJournal } from "./requests.js";

/**
 * The writes that race over one VM, on PostgreSQL: a destroy request and an extension's move of
 * the lease (see ../sqlite-destroys.ts). Each takes the VM's row (`FOR UPDATE`) before its check,
 * so that on any replicas they are made one after the other and each sees the one before.
 */

/** The VM's status and lease, its row held for the transaction; undefined when there is none. */
async function heldVm(client: Queryable, name: string) {
  const { rows } = await client.query<{ status: string; lease_until: string | null }>(
    "SELECT status, lease_until FROM vms WHERE name = $1 FOR UPDATE",
    [name],
  );
  return rows[0];
}

/** Whether a request for the VM (of `kind` when given) is in flight. */
async function inFlight(client: Queryable, name: string, kind?: string): Promise<boolean> {
  const { rows } = await client.query(
    `SELECT 1 FROM requests
     WHERE spec ->> 'name' = $1 AND status <> ALL($2::text[]) AND ($3::text IS NULL OR kind = $3)
     LIMIT 1`,
    [name, FINAL_STATUSES, kind ?? null],
  );
  return rows.length > 0;
}

export function createPostgresDestroyRequest(
  pool: Runner,
  clock: () => Date,
  journal: MoveJournal,
): AsyncStore["createDestroyRequest"] {
  return (request, guard, audit) =>
    guardWrite("record a new request", () =>
      pool.transaction(async (client) => {
        const vm = await heldVm(client, guard.name);
        const existing = await bySubmission(client, request.submissionKey);
        if (existing !== undefined) return { request: existing, created: false };
        if (vm?.status !== "live") return undefined;
        if (guard.leaseUntil !== undefined && vm.lease_until !== guard.leaseUntil) return undefined;
        if (await inFlight(client, guard.name)) return undefined;
        const inserted = await insertRequest(client, clock, journal, request, audit);
        return inserted === undefined ? undefined : { request: inserted, created: true };
      }),
    );
}

export function createPostgresExtendLease(pool: Runner): AsyncInventory["extendLease"] {
  return (name, until) =>
    guardWrite(`extend the lease of the VM ${name}`, () =>
      pool.transaction(async (client): Promise<LeaseExtension> => {
        if ((await heldVm(client, name))?.status !== "live") return "gone";
        if (await inFlight(client, name, "destroy")) return "destroying";
        await client.query("UPDATE vms SET lease_until = $1 WHERE name = $2", [until, name]);
        return "extended";
      }),
    );
}
