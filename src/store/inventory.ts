import type Database from "better-sqlite3";
import { z } from "zod";
import { VmSpecSchema, type VmSpec } from "../vm/spec.js";
import { guardWrite } from "./sqlite-checks.js";
import { ADDRESS_SQL } from "./sqlite-held.js";
import { createSqliteExtendLease } from "./sqlite-guarded.js";

/**
 * Every VM vmbot made: recorded when Terraform has applied (the VM exists from then on, whatever
 * configure does), one row per VM name, and checked against GitLab's Terraform states now and
 * then (see src/tracker/inventory-check.ts).
 */

/** `live`: as vmbot made it; `gone`: its Terraform state vanished outside vmbot. */
export const VM_STATUSES = ["live", "gone"] as const;
export type VmStatus = (typeof VM_STATUSES)[number];

/** What came of an extension's move of a lease (`Inventory.extendLease`). */
export type LeaseExtension = "extended" | "gone" | "destroying";

export interface VmRecord {
  name: string;
  /** The request that made it (or last changed it). */
  requestId: string;
  /** Slack user ID of who asked for it. */
  owner: string;
  spec: VmSpec;
  /** Its Terraform state; null for a VM made before vmbot named states. */
  stateName: string | null;
  address: string | null;
  pipelineId: number | null;
  /** Slack user ID of who approved its plan, when someone did here. */
  approvedBy: string | null;
  createdAt: string;
  /** When its lease ends; null for none. */
  leaseUntil: string | null;
  status: VmStatus;
  /** Why it is not live, in words for people. */
  statusNote: string | null;
  /** When vmbot last compared it with GitLab's states. */
  checkedAt: string | null;
}

export type NewVm = Omit<VmRecord, "createdAt" | "status" | "statusNote" | "checkedAt">;

export interface Inventory {
  /**
   * Records a VM Terraform has applied. The same request again changes nothing new; a later
   * request for the same name (Terraform updated the VM in place) takes the row over.
   */
  record(vm: NewVm): VmRecord;
  get(name: string): VmRecord | undefined;
  /** Newest first; only `owner`'s when given. */
  list(options?: { owner?: string }): VmRecord[];
  /**
   * Live VMs named `name` or asked for at `address` (without its prefix): what holds a new
   * request's name and address until Terraform destroys the VM.
   */
  holding(vm: { name: string; address: string }): VmRecord[];
  /** Marks a VM gone (or live again) after comparing it with GitLab's states. */
  mark(name: string, status: VmStatus, note: string | null): void;
  /**
   * Takes a VM out once Terraform has destroyed it: only the VM made before `askedAt` (when the
   * destroy was asked), never one made again under its name since.
   */
  remove(name: string, askedAt: string): void;
  /** Sets when a VM's lease ends (null: none). */
  setLease(name: string, until: string | null): void;
  /**
   * Moves a VM's lease to `until` for an extension, in one transaction with the check that the
   * VM is live and no destroy request for it is in flight: "gone" or "destroying", changing
   * nothing, when it is not. Made one at a time with `createDestroyRequest` for the same VM.
   */
  extendLease(name: string, until: string): LeaseExtension;
  /** Notes something about a live VM (a failed destroy), or clears the note with null. */
  note(name: string, note: string | null): void;
  /** Records when the VMs were last compared with GitLab's states. */
  checked(names: readonly string[]): void;
  /** Keeps the project's Terraform state names as GitLab listed them last. */
  seeStates(names: readonly string[]): void;
  /**
   * The states GitLab listed last that no VM and no request of vmbot's names: made outside
   * vmbot (or by hand), shown to admins, never adopted.
   */
  unmanagedStates(): string[];
}

export const INVENTORY_MIGRATION = `
  CREATE TABLE vms (
    name        TEXT PRIMARY KEY,
    request_id  TEXT NOT NULL,
    owner       TEXT NOT NULL,
    spec        TEXT NOT NULL,
    state_name  TEXT,
    address     TEXT,
    pipeline_id INTEGER,
    approved_by TEXT,
    created_at  TEXT NOT NULL,
    lease_until TEXT,
    status      TEXT NOT NULL DEFAULT 'live',
    status_note TEXT,
    checked_at  TEXT
  );
  CREATE INDEX vms_owner ON vms (owner, created_at);
  `;

/** The project's Terraform states as GitLab listed them last. */
export const STATES_SEEN_MIGRATION = `
  CREATE TABLE states_seen (
    name    TEXT PRIMARY KEY,
    seen_at TEXT NOT NULL
  );
  `;

const VmRowSchema = z.object({
  name: z.string(),
  request_id: z.string(),
  owner: z.string(),
  spec: z.string().transform((text) => VmSpecSchema.parse(JSON.parse(text))),
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

/** Reading VMs: one by name, or all of them (or one person's), newest first. */
function sqliteVmReads(db: Database.Database): Pick<Inventory, "get" | "list" | "holding"> {
  const selectOne = db.prepare("SELECT * FROM vms WHERE name = ?");
  const selectAll = db.prepare("SELECT * FROM vms ORDER BY created_at DESC, name");
  const selectOwned = db.prepare(
    "SELECT * FROM vms WHERE owner = ? ORDER BY created_at DESC, name",
  );
  const selectHolding = db.prepare(
    `SELECT * FROM vms WHERE status = 'live' AND (name = ? OR ${ADDRESS_SQL} = ?) ORDER BY name`,
  );
  return {
    get(name) {
      const row = selectOne.get(name);
      return row === undefined ? undefined : toVm(row);
    },
    list(options = {}) {
      const rows = options.owner === undefined ? selectAll.all() : selectOwned.all(options.owner);
      return rows.map(toVm);
    },
    holding(vm) {
      return selectHolding.all(vm.name, vm.address).map(toVm);
    },
  };
}

/** Changing VMs: recording, marking, removing, leases, notes and when they were checked. */
function sqliteVmWrites(
  db: Database.Database,
  clock: () => Date,
): Pick<Inventory, "record" | "mark" | "remove" | "setLease" | "note" | "checked"> {
  // A new request for a live VM's name updated that VM: it keeps its creation time. Over a VM
  // that is gone, the name starts again.
  const upsert = db.prepare(`
    INSERT INTO vms (name, request_id, owner, spec, state_name, address, pipeline_id, approved_by,
                     created_at, lease_until)
    VALUES (@name, @requestId, @owner, @spec, @stateName, @address, @pipelineId, @approvedBy,
            @now, @leaseUntil)
    ON CONFLICT (name) DO UPDATE SET
      request_id = excluded.request_id, owner = excluded.owner, spec = excluded.spec,
      state_name = excluded.state_name, address = excluded.address,
      pipeline_id = excluded.pipeline_id, approved_by = excluded.approved_by,
      lease_until = excluded.lease_until,
      created_at = CASE WHEN vms.status = 'live' THEN vms.created_at ELSE excluded.created_at END,
      status = 'live', status_note = NULL
    WHERE vms.request_id <> excluded.request_id OR vms.status <> 'live'`);
  const selectOne = db.prepare("SELECT * FROM vms WHERE name = ?");
  const updateStatus = db.prepare(
    "UPDATE vms SET status = ?, status_note = ?, checked_at = ? WHERE name = ?",
  );
  const deleteVm = db.prepare("DELETE FROM vms WHERE name = ? AND created_at <= ?");
  const updateNote = db.prepare(
    "UPDATE vms SET status_note = ? WHERE name = ? AND status = 'live'",
  );
  const updateLease = db.prepare("UPDATE vms SET lease_until = ? WHERE name = ?");
  const updateChecked = db.prepare("UPDATE vms SET checked_at = ? WHERE name = ?");

  return {
    record(vm) {
      guardWrite(`record the VM ${vm.name}`, () =>
        upsert.run({
          ...vm,
          spec: JSON.stringify(vm.spec),
          now: clock().toISOString(),
        }),
      );
      return toVm(selectOne.get(vm.name));
    },
    mark(name, status, note) {
      guardWrite(`mark the VM ${name} ${status}`, () =>
        updateStatus.run(status, note, clock().toISOString(), name),
      );
    },
    remove(name, askedAt) {
      guardWrite(`remove the VM ${name}`, () => deleteVm.run(name, askedAt));
    },
    setLease(name, until) {
      guardWrite(`set the lease of the VM ${name}`, () => updateLease.run(until, name));
    },
    note(name, note) {
      guardWrite(`note on the VM ${name}`, () => updateNote.run(note, name));
    },
    checked(names) {
      const at = clock().toISOString();
      guardWrite("record the inventory check", () => {
        db.transaction(() => {
          for (const name of names) updateChecked.run(at, name);
        })();
      });
    },
  };
}

/** The project's Terraform states as GitLab listed them last, and those vmbot did not make. */
function sqliteStatesSeen(
  db: Database.Database,
  clock: () => Date,
): Pick<Inventory, "seeStates" | "unmanagedStates"> {
  const clearStates = db.prepare("DELETE FROM states_seen");
  const insertState = db.prepare("INSERT INTO states_seen (name, seen_at) VALUES (?, ?)");
  const selectUnmanaged = db.prepare(`
    SELECT name FROM states_seen
    WHERE name NOT IN (SELECT state_name FROM vms WHERE state_name IS NOT NULL)
      AND name NOT IN (SELECT state_name FROM requests WHERE state_name IS NOT NULL)
    ORDER BY name`);
  return {
    seeStates(names) {
      const at = clock().toISOString();
      guardWrite("record the project's Terraform states", () => {
        db.transaction(() => {
          clearStates.run();
          for (const name of new Set(names)) insertState.run(name, at);
        })();
      });
    },
    unmanagedStates() {
      return selectUnmanaged.all().map((row) => StateRowSchema.parse(row).name);
    },
  };
}

export function createSqliteInventory(db: Database.Database, clock: () => Date): Inventory {
  return {
    ...sqliteVmReads(db),
    ...sqliteVmWrites(db, clock),
    ...sqliteStatesSeen(db, clock),
    extendLease: createSqliteExtendLease(db),
  };
}

const StateRowSchema = z.object({ name: z.string() });
