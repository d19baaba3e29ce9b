import type { Approvals } from "./approvals.js";
import type { Homes } from "./homes.js";
import type { Inventory } from "./inventory.js";
import type { RequestStatus } from "../requests/lifecycle.js";
import type {
  Decision,
  FailureRecord,
  PlanReviewRecord,
  ShownApprovals,
} from "../requests/records.js";
import type { VmSpec } from "../vm/spec.js";

export {
  FINAL_STATUSES,
  REQUEST_STATUSES,
  TransitionError,
  type RequestStatus,
} from "../requests/lifecycle.js";

/**
 * What a request does to its VM: create (or update) it, destroy it, or extend its lease past the
 * maximum (approved in the channel; no pipeline).
 */
export const REQUEST_KINDS = ["create", "destroy", "extend"] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

export interface RequestRecord {
  id: string;
  kind: RequestKind;
  status: RequestStatus;
  /** Slack user ID of who asked. */
  requester: string;
  spec: VmSpec;
  /** Things worth telling the requester about their input, e.g. a name folded to lower case. */
  notes: string[];
  channel: string;
  messageTs: string | null;
  pipelineId: number | null;
  pipelineUrl: string | null;
  /** What went wrong, in words for people; set when status is failed. */
  error: string | null;
  /** The plan as reviewed, once Terraform has planned. */
  review: PlanReviewRecord | null;
  /** Who approved or rejected the plan, and when. */
  decision: Decision | null;
  /** A destroy request's approvals as its message shows them (a plan's are in its review). */
  approvals: ShownApprovals | null;
  /** Which job failed, why, and the next step taken, when status is failed (or was). */
  failure: FailureRecord | null;
  /** The VM's address once Terraform has applied (from the apply job's vm_ip.txt). */
  address: string | null;
  /**
   * The VM's Terraform state name, fixed when the request was made (TF_STATE_NAME_TEMPLATE);
   * null for requests made before vmbot named states, whose pipelines used the pipeline's own.
   */
  stateName: string | null;
  createdAt: string;
  updatedAt: string;
  /** When the request entered its current status (its creation, before any move). */
  stageAt: string;
  /** When it last entered each status it has been in (none recorded before a first move). */
  stageTimes: Partial<Record<RequestStatus, string>>;
  /** Counts the request's changes: every update adds one. */
  revision: number;
  /** The revision the request message in Slack last showed. */
  renderedRevision: number;
  /** A digest of what the request message last showed, when the bot knows it. */
  renderedHash: string | null;
}

export interface NewRequest {
  requester: string;
  spec: VmSpec;
  notes: string[];
  channel: string;
  /** Identifies one form submission, so a repeated delivery creates nothing new. */
  submissionKey: string;
  /** The VM's Terraform state name; none leaves the pipeline's own. */
  stateName?: string | null;
  /** Create unless said. */
  kind?: RequestKind;
  /**
   * Decided when the request is made, not by a click: a destroy vmbot plays without approval at
   * a lease's end (VM_LEASE_ON_EXPIRY=destroy). Stored with the request, in the same write.
   */
  decision?: Decision;
}

/**
 * What an update may change. Never the status: that changes only through `Store.transition`,
 * which the transition table (requests/lifecycle.ts) guards.
 */
export type RequestPatch = Partial<
  Pick<
    RequestRecord,
    | "messageTs"
    | "pipelineId"
    | "pipelineUrl"
    | "error"
    | "review"
    | "decision"
    | "approvals"
    | "address"
    | "failure"
    | "notes"
  >
>;

export interface AuditEntry {
  requestId: string | null;
  /** Slack user ID, or "vmbot" for what the bot did on its own. */
  actor: string;
  action: string;
  detail?: Record<string, unknown>;
}

export interface AuditRecord extends Required<AuditEntry> {
  id: number;
  at: string;
}

/**
 * One outside effect (a pipeline created, a message posted, a job played, a lock removed): its
 * intent is recorded before the bot acts and its result after, so that after a crash an intent
 * without a result is reconciled with the outside world instead of being repeated blindly.
 */
export interface EffectRecord {
  /** What the effect belongs to: a request ID, or e.g. `unlock:general`. */
  subject: string;
  /** What it does, e.g. `create_pipeline`, `reply:applied`. */
  step: string;
  state: "intended" | "done";
  /** What the bot needs to finish or reconcile it after a restart. */
  intent: Record<string, unknown>;
  /** What came of it, once done. */
  result: Record<string, unknown> | null;
  intendedAt: string;
  doneAt: string | null;
}

/** A write the store could not make (disk full, file read-only or damaged, lock held). */
export class StoreWriteError extends Error {
  override name = "StoreWriteError";
  constructor(
    /** What was being written, e.g. "update request vm-…". */
    readonly what: string,
    /** Why, in words for an operator. */
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(`the store could not ${what}: ${reason}`, options);
  }
}

/** Whether the store can take a write now, and why not. */
export type Writable = { ok: true } | { ok: false; reason: string };

export interface TransitionIntent {
  step: string;
  detail?: Record<string, unknown>;
}

/** A request's VM as the checks of a new one need it: who asked, and its spec. */
export interface HeldVm {
  id: string;
  requester: string;
  spec: VmSpec;
}

/**
 * What must still hold of the VM a destroy request is for when it is written: the VM live and,
 * for the request a lease's end opens, its lease still ending `leaseUntil`.
 */
export interface DestroyGuard {
  name: string;
  leaseUntil?: string;
}

/**
 * What no live VM and no create request in one of `statuses` may use when a create request is
 * written: its VM's name, and its address (without the prefix).
 */
export interface HoldGuard {
  statuses: readonly RequestStatus[];
  name: string;
  address: string;
  /** The quotas the request was checked against, checked again with what is held at the write. */
  quota?: QuotaGuard;
}

/** A VM someone holds against their quotas: live in the inventory, or asked for and on its way. */
export interface Holding {
  owner: string;
  spec: VmSpec;
}

/**
 * A create request's quota check, made again inside its write: so that two forms sent at once by
 * one person (or by two people sharing a group quota) cannot both fit the room only one leaves.
 */
export interface QuotaGuard {
  /**
   * The quotas the request counts against, as `person:<user>` or `group:<group>`: writes that
   * share one are made one after the other.
   */
  scopes: readonly string[];
  /**
   * Whether the request still fits, given every VM held at the write (live VMs, and create
   * requests in the guard's statuses whose VM is not live yet).
   */
  fits(held: readonly Holding[]): boolean;
}

/** Persistence behind one small interface; SQLite by default (see sqlite.ts). */
export interface Store {
  /** Every VM vmbot made. */
  readonly inventory: Inventory;
  /** Approvals given on each plan job. */
  readonly approvals: Approvals;
  /** Who has opened vmbot's Home tab. */
  readonly homes: Homes;
  /**
   * Creates the request, or returns the one already created for the same submission. `audit`,
   * when given, is written in the same transaction, only when the request is new.
   */
  createRequest(
    request: NewRequest,
    audit?: Omit<AuditEntry, "requestId">,
  ): { request: RequestRecord; created: boolean };
  /**
   * Creates a destroy request, as `createRequest` does, in one transaction with the check that
   * the VM `guard.name` is live, no request for it is in flight and, when `guard.leaseUntil` is
   * given, its lease still ends then. Undefined, changing nothing, when one of those no longer
   * holds: another destroy was asked for first, or the owner extended the lease after the pass
   * read it. The request already created for the same submission is returned whatever the check
   * says. Made one at a time with another for the same VM and with `inventory.extendLease`.
   */
  createDestroyRequest(
    request: NewRequest,
    guard: DestroyGuard,
    audit?: Omit<AuditEntry, "requestId">,
  ): { request: RequestRecord; created: boolean } | undefined;
  /**
   * Creates a create request, as `createRequest` does, in one transaction with the check that no
   * live VM and no create request in `guard.statuses` uses its name or address, and that the
   * request still fits its quotas (`guard.quota`). Undefined, changing nothing, when one does or
   * it does not: another request for them, or against the same quota, was written first. The
   * request already created for the same submission is returned whatever the check says. Made one
   * at a time with every other such write for the same name, address or quota, on any replica.
   */
  createVmRequest(
    request: NewRequest,
    guard: HoldGuard,
    audit?: Omit<AuditEntry, "requestId">,
  ): { request: RequestRecord; created: boolean } | undefined;
  getRequest(id: string): RequestRecord | undefined;
  updateRequest(id: string, patch: RequestPatch): RequestRecord;
  /**
   * Moves a request to `to` only if its status is one of `from`, in one conditional update, so
   * that of two concurrent attempts (two Approve clicks) exactly one wins. Undefined for the loser.
   * Throws TransitionError, changing nothing, when the transition table does not list a move from
   * one of `from` to `to`.
   */
  transition(
    id: string,
    from: readonly RequestStatus[],
    to: RequestStatus,
    patch?: RequestPatch,
    /** Effects to record as intended in the same transaction, when the move happens. */
    intent?: TransitionIntent | readonly TransitionIntent[],
    /** An audit entry for the move, written in the same transaction (who approved, rejected). */
    audit?: Omit<AuditEntry, "requestId">,
  ): RequestRecord | undefined;
  /**
   * Moves a create request whose VM exists back onto that VM (Retry configure), as `transition`
   * does, in one transaction with the check that the VM `vm` is live, still this request's, and
   * that no destroy of it is in flight: made one at a time with `createDestroyRequest` for the
   * same VM, so that a destroy and a rerun of the VM's configure job are never both on their way.
   * `"gone"` or `"destroying"`, changing nothing, when the check fails.
   */
  transitionOnLiveVm(
    vm: string,
    ...move: Parameters<Store["transition"]>
  ): RequestRecord | undefined | "gone" | "destroying";
  /** Requests that are not in a final status, oldest first. */
  listActive(): RequestRecord[];
  /** The requests for a VM of this name, newest first. */
  requestsForVm(name: string): RequestRecord[];
  /** The request a form submission (its `submissionKey`) created, if it did. */
  findBySubmission(key: string): RequestRecord | undefined;
  /** Requests in one of `statuses`, oldest first. */
  listByStatus(statuses: readonly RequestStatus[]): RequestRecord[];
  /**
   * Create requests in one of `statuses` whose VM is named `name` or whose address (without its
   * prefix) is `address`, oldest first: matched by the store, without reading every held request.
   */
  findHolding(
    statuses: readonly RequestStatus[],
    vm: { name: string; address: string },
  ): RequestRecord[];
  /** What create requests in one of `statuses` hold, read without the rest of each request. */
  listHeld(statuses: readonly RequestStatus[]): HeldVm[];
  audit(entry: AuditEntry): void;
  effect(subject: string, step: string): EffectRecord | undefined;
  /** Records the intent, or returns the record already there (intended or done). */
  intend(subject: string, step: string, detail?: Record<string, unknown>): EffectRecord;
  /** Records the result of an intended (or unrecorded) effect. */
  complete(subject: string, step: string, result: Record<string, unknown>): EffectRecord;
  /**
   * Done effects of `step` whose result asks for a watch (`watchUntil`, ISO 8601) that has not
   * ended at `now`: e.g. a pipeline create whose first attempt may still land in GitLab.
   */
  watchedEffects(step: string, now: string): EffectRecord[];
  /** Effects intended and not done, oldest first: what a restart must reconcile. */
  pendingEffects(): EffectRecord[];
  listAudit(requestId?: string): AuditRecord[];
  /** Records that the request message now shows `revision` of the request (digest `hash`). */
  markRendered(id: string, revision: number, hash: string): void;
  /** Requests with a message that shows an older revision than the store holds, oldest first. */
  listBehind(limit: number): RequestRecord[];
  /**
   * A cheap write (a heartbeat row), at most every few seconds while writes succeed: whether
   * the store can take writes, and why not.
   */
  writable(): Writable;
  isOpen(): boolean;
  close(): void;
  /**
   * Records that the delivery `key` (e.g. a slash command's trigger_id) was acted on: true the
   * first time, false for a repeat seen within `keepMs`. Older keys are forgotten.
   */
  firstDelivery(key: string, keepMs: number): boolean;
}
