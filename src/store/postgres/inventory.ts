import { z } from "zod";
import { VmSpecSchema } from "../../vm/spec.js";
import type { AsyncApprovals, AsyncInventory } from "../async.js";
import { VM_STATUSES, type VmRecord } from "../inventory.js";
import { createPostgresExtendLease } from "./guarded.js";
import { guardWrite, type Runner } from "./pool.js";

/**
 * Every VM vmbot made and the approvals given on each plan job, on PostgreSQL: the same rows
 * and rules as the SQLite store's (inventory.ts, approvals.ts).
 */

const VmRowSchema = z.object({
  name: z.string(),
  request_id: z.string(),
  owner: z.string(),
  spec: VmSpecSchema,
  state_name: z.string().nullable(),
  address: z.string().nullable(),
  pipeline_id: z.number().int().nullable(),
  approved_by: z.string().nullable(),
  created_at: z.string(),
  lease_until: z.string().nullable(),
  status: z.enum(VM_STATUSES),
  status_note: z.string().nullable(),
  checked_at: z.string().nullable(),
});

function toVm(row: unknown): VmRecord {
  const r = VmRowSchema.parse(row);
  return {
    name: r.name,
    requestId: r.request_id,
    owner: r.owner,
    spec: r.spec,
    stateName: r.state_name,
    address: r.address,
    pipelineId: r.pipeline_id,
    approvedBy: r.approved_by,
    createdAt: r.created_at,
    leaseUntil: r.lease_until,
    status: r.status,
    statusNote: r.status_note,
    checkedAt: r.checked_at,
  };
}

/** The inventory's writes: the SQLite store's statements, in PostgreSQL's dialect. */
function vmWrites(
  pool: Runner,
  clock: () => Date,
): Pick<AsyncInventory, "mark" | "remove" | "setLease" | "note" | "checked"> {
  const write = async (what: string, sql: string, values: unknown[]) => {
    await guardWrite(what, () => pool.query(sql, values));
  };
  return {
    mark: (name, status, note) =>
      write(
        `mark the VM ${name} ${status}`,
        "UPDATE vms SET status = $1, status_note = $2, checked_at = $3 WHERE name = $4",
        [status, note, clock().toISOString(), name],
      ),
    remove: (name, askedAt) =>
      write(`remove the VM ${name}`, "DELETE FROM vms WHERE name = $1 AND created_at <= $2", [
        name,
        askedAt,
      ]),
    setLease: (name, until) =>
      write(`set the lease of the VM ${name}`, "UPDATE vms SET lease_until = $1 WHERE name = $2", [
        until,
        name,
      ]),
    note: (name, note) =>
      write(
        `note on the VM ${name}`,
        "UPDATE vms SET status_note = $1 WHERE name = $2 AND status = 'live'",
        [note, name],
      ),
    checked: (names) =>
      write(
        "record the inventory check",
        "UPDATE vms SET checked_at = $1 WHERE name = ANY($2::text[])",
        [clock().toISOString(), [...names]],
      ),
  };
}

export function createPostgresInventory(pool: Runner, clock: () => Date): AsyncInventory {
  const one = async (name: string) => {
    const { rows } = await pool.query("SELECT * FROM vms WHERE name = $1", [name]);
    return rows[0] === undefined ? undefined : toVm(rows[0]);
  };
  return {
    async record(vm) {
      // A new request for a live VM's name updated that VM: it keeps its creation time. Over a
      // VM that is gone, the name starts again.
      await guardWrite(`record the VM ${vm.name}`, () =>
        pool.query(
          `INSERT INTO vms (name, request_id, owner, spec, state_name, address, pipeline_id,
                            approved_by, created_at, lease_until)
           VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $10)
           ON CONFLICT (name) DO UPDATE SET
             request_id = excluded.request_id, owner = excluded.owner, spec = excluded.spec,
             state_name = excluded.state_name, address = excluded.address,
             pipeline_id = excluded.pipeline_id, approved_by = excluded.approved_by,
             lease_until = excluded.lease_until,
             created_at = CASE WHEN vms.status = 'live' THEN vms.created_at ELSE excluded.created_at END,
             status = 'live', status_note = NULL
           WHERE vms.request_id <> excluded.request_id OR vms.status <> 'live'`,
          [
            vm.name,
            vm.requestId,
            vm.owner,
            JSON.stringify(vm.spec),
            vm.stateName,
            vm.address,
            vm.pipelineId,
            vm.approvedBy,
            clock().toISOString(),
            vm.leaseUntil,
          ],
        ),
      );
      const recorded = await one(vm.name);
      if (recorded === undefined) throw new Error(`the VM ${vm.name} vanished`);
      return recorded;
    },
    get: one,
    extendLease: createPostgresExtendLease(pool),
    async list(options = {}) {
      const { rows } =
        options.owner === undefined
          ? await pool.query("SELECT * FROM vms ORDER BY created_at DESC, name")
          : await pool.query("SELECT * FROM vms WHERE owner = $1 ORDER BY created_at DESC, name", [
              options.owner,
            ]);
      return rows.map(toVm);
    },
    async holding(vm) {
      const { rows } = await pool.query(
        `SELECT * FROM vms WHERE status = 'live'
           AND (name = $1 OR split_part(spec ->> 'ip', '/', 1) = $2) ORDER BY name`,
        [vm.name, vm.address],
      );
      return rows.map(toVm);
    },
    ...vmWrites(pool, clock),
    async seeStates(names) {
      const at = clock().toISOString();
      await guardWrite("record the project's Terraform states", () =>
        pool.transaction(async (client) => {
          await client.query("DELETE FROM states_seen");
          await client.query(
            "INSERT INTO states_seen (name, seen_at) SELECT unnest($1::text[]), $2",
            [[...new Set(names)], at],
          );
        }),
      );
    },
    async unmanagedStates() {
      const { rows } = await pool.query(`
        SELECT name FROM states_seen
        WHERE name NOT IN (SELECT state_name FROM vms WHERE state_name IS NOT NULL)
          AND name NOT IN (SELECT state_name FROM requests WHERE state_name IS NOT NULL)
        ORDER BY name`);
      return rows.map((row) => z.object({ name: z.string() }).parse(row).name);
    },
  };
}

const ApprovalRowSchema = z.object({
  request_id: z.string(),
  plan_job_id: z.number().int(),
  user_id: z.string(),
  groups: z.array(z.string()),
  at: z.string(),
});

export function createPostgresApprovals(pool: Runner): AsyncApprovals {
  return {
    async add(a) {
      const { rowCount } = await guardWrite(
        `record the approval of ${a.requestId} by ${a.user}`,
        () =>
          pool.query(
            `INSERT INTO approvals (request_id, plan_job_id, user_id, groups, at)
             VALUES ($1, $2, $3, $4::jsonb, $5) ON CONFLICT DO NOTHING`,
            [a.requestId, a.planJobId, a.user, JSON.stringify(a.groups), a.at],
          ),
      );
      return rowCount === 1;
    },
    async list(requestId, planJobId) {
      const { rows } = await pool.query(
        `SELECT * FROM approvals WHERE request_id = $1 AND plan_job_id = $2
         ORDER BY at, user_id`,
        [requestId, planJobId],
      );
      return rows.map((raw) => {
        const row = ApprovalRowSchema.parse(raw);
        return {
          requestId: row.request_id,
          planJobId: row.plan_job_id,
          user: row.user_id,
          groups: row.groups,
          at: row.at,
        };
      });
    },
    async earlier(requestId, planJobId) {
      const { rowCount } = await pool.query(
        "SELECT 1 FROM approvals WHERE request_id = $1 AND plan_job_id <> $2 LIMIT 1",
        [requestId, planJobId],
      );
      return (rowCount ?? 0) > 0;
    },
    async remove(requestId, planJobId, users) {
      await guardWrite(`remove lapsed approvals of ${requestId}`, () =>
        pool.query(
          "DELETE FROM approvals WHERE request_id = $1 AND plan_job_id = $2 AND user_id = ANY($3::text[])",
          [requestId, planJobId, [...users]],
        ),
      );
    },
  };
}
