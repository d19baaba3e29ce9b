import { createHash } from "node:crypto";
import { checkMove, FINAL_STATUSES } from "../../requests/lifecycle.js";
import type { AsyncInventory, AsyncStore } from "../async.js";
import type { LeaseExtension } from "../inventory.js";
import { VmSpecSchema } from "../../vm/spec.js";
import { holdingsOf } from "../holdings.js";
import type { AuditEntry, DestroyGuard, HoldGuard, Holding, NewRequest } from "../store.js";
import { guardWrite, type Queryable, type Runner } from "./pool.js";
import { bySubmission, insertRequest, moveRequest, type MoveJournal } from "./requests.js";

/**
 * The writes that race over one VM, on PostgreSQL (see ../sqlite-guarded.ts). A destroy request,
 * an extension's move of the lease and Retry configure's move take the VM's row (`FOR UPDATE`)
 * before their check; a
 * create request, whose name and address may have no row yet, takes the advisory locks of its
 * name, of its address and of each quota it counts against, which every create request's write
 * for any of them takes. So on any replicas they are made one after the other, each seeing the
 * one before (a statement's snapshot, under READ COMMITTED, is taken after the lock is held).
 */

/** The advisory locks' first key, vmbot's own ("vmb"): the second names a name, address or quota. */
const HOLD_LOCKS = 0x766d62;

/** A name's or an address's advisory lock key: the first 32 bits of its SHA-256. */
const holdKey = (what: string) => createHash("sha256").update(what).digest().readInt32BE(0);

/**
 * Takes the advisory locks of the guard's name and address, in the order of their keys (so that
 * two writes each waiting for the other's cannot be), held until the transaction ends. Writes for
 * other names and addresses take other locks, and go on side by side. One statement: `unnest`
 * hands the keys over in the array's order, and each row's lock is taken before the next row is.
 */
async function lockHolds(client: Queryable, guard: HoldGuard): Promise<void> {
  const scopes = (guard.quota?.scopes ?? []).map((scope) => `quota:${scope}`);
  const held = [`name:${guard.name}`, `ip:${guard.address}`, ...scopes];
  const keys = [...new Set(held.map(holdKey))].sort((a, b) => a - b);
  await client.query("SELECT pg_advisory_xact_lock($1, key) FROM unnest($2::int4[]) AS key", [
    HOLD_LOCKS,
    keys,
  ]);
}

/** The VM's status, lease and request, its row held for the transaction; undefined if none. */
async function heldVm(client: Queryable, name: string) {
  const { rows } = await client.query<{
    status: string;
    lease_until: string | null;
    request_id: string;
  }>("SELECT status, lease_until, request_id FROM vms WHERE name = $1 FOR UPDATE", [name]);
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

/** Whether a live VM or a create request in `guard.statuses` uses the guard's name or address. */
async function held(client: Queryable, guard: HoldGuard): Promise<boolean> {
  const { rows } = await client.query(
    `SELECT 1 FROM vms
     WHERE status = 'live' AND (name = $1 OR split_part(spec ->> 'ip', '/', 1) = $2)
     UNION ALL
     SELECT 1 FROM requests
     WHERE kind = 'create' AND status = ANY($3::text[])
       AND (spec ->> 'name' = $1 OR split_part(spec ->> 'ip', '/', 1) = $2)
     LIMIT 1`,
    [guard.name, guard.address, [...guard.statuses]],
  );
  return rows.length > 0;
}

/** Every VM held against the quotas: the live VMs, and create requests in `statuses`. */
async function holdings(client: Queryable, statuses: readonly string[]): Promise<Holding[]> {
  const vms = await client.query<{ owner: string; spec: unknown }>(
    "SELECT owner, spec FROM vms WHERE status = 'live'",
  );
  const coming = await client.query<{ id: string; requester: string; spec: unknown }>(
    "SELECT id, requester, spec FROM requests WHERE kind = 'create' AND status = ANY($1::text[])",
    [[...statuses]],
  );
  return holdingsOf(
    vms.rows.map((vm) => ({ owner: vm.owner, spec: VmSpecSchema.parse(vm.spec), status: "live" })),
    coming.rows.map((request) => ({ ...request, spec: VmSpecSchema.parse(request.spec) })),
  );
}

/**
 * A new request written in one transaction with its check: `lock` first takes what the check
 * reads (so that a write for the same thing waits for this one), then the request made for the
 * same submission is returned as it is, whatever the check would say; else it is written when
 * `free` says nothing stands in its way, and undefined, changing nothing, when something does.
 */
function guardedCreate<G, L>(
  pool: Runner,
  clock: () => Date,
  journal: MoveJournal,
  lock: (client: Queryable, guard: G) => Promise<L>,
  free: (client: Queryable, guard: G, locked: L) => Promise<boolean>,
) {
  return (request: NewRequest, guard: G, audit?: Omit<AuditEntry, "requestId">) =>
    guardWrite("record a new request", () =>
      pool.transaction(async (client) => {
        const locked = await lock(client, guard);
        const existing = await bySubmission(client, request.submissionKey);
        if (existing !== undefined) return { request: existing, created: false };
        if (!(await free(client, guard, locked))) return undefined;
        const inserted = await insertRequest(client, clock, journal, request, audit);
        return inserted === undefined ? undefined : { request: inserted, created: true };
      }),
    );
}

export function createPostgresVmRequest(
  pool: Runner,
  clock: () => Date,
  journal: MoveJournal,
): AsyncStore["createVmRequest"] {
  return guardedCreate(
    pool,
    clock,
    journal,
    lockHolds,
    async (client, guard: HoldGuard) =>
      !(await held(client, guard)) &&
      (guard.quota === undefined || guard.quota.fits(await holdings(client, guard.statuses))),
  );
}

export function createPostgresDestroyRequest(
  pool: Runner,
  clock: () => Date,
  journal: MoveJournal,
): AsyncStore["createDestroyRequest"] {
  return guardedCreate(
    pool,
    clock,
    journal,
    (client, guard: DestroyGuard) => heldVm(client, guard.name),
    async (client, guard, vm) =>
      vm?.status === "live" &&
      (guard.leaseUntil === undefined || vm.lease_until === guard.leaseUntil) &&
      !(await inFlight(client, guard.name)),
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

export function createPostgresTransitionOnLiveVm(
  pool: Runner,
  clock: () => Date,
  journal: MoveJournal,
): AsyncStore["transitionOnLiveVm"] {
  return (vm, ...move) => {
    const [id, from, to] = move;
    checkMove(from, to);
    return guardWrite(`move request ${id} onto the VM ${vm}`, () =>
      pool.transaction(async (client) => {
        const held = await heldVm(client, vm);
        if (held?.status !== "live" || held.request_id !== id) return "gone";
        if (await inFlight(client, vm, "destroy")) return "destroying";
        return moveRequest(client, clock, journal, move);
      }),
    );
  };
}
