import { z } from "zod";
import { checkMove, FINAL_STATUSES, REQUEST_STATUSES } from "../../requests/lifecycle.js";
import {
  DecisionSchema,
  FailureRecordSchema,
  PlanReviewRecordSchema,
  ShownApprovalsSchema,
} from "../../requests/records.js";
import { VmSpecSchema } from "../../vm/spec.js";
import type { AsyncStore } from "../async.js";
import { newRequestId } from "../sqlite-requests.js";
import {
  REQUEST_KINDS,
  type AuditEntry,
  type NewRequest,
  type RequestPatch,
  type RequestRecord,
  type RequestStatus,
} from "../store.js";
import { guardWrite, type Queryable, type Runner } from "./pool.js";

/**
 * The requests table on PostgreSQL: the same rows and moves as the SQLite store's
 * (sqlite-requests.ts). A move is one conditional UPDATE (`status = ANY(from)`), so of two
 * replicas moving one request at once exactly one wins; its intents and audit entry are written
 * in the same transaction.
 */

const RequestRowSchema = z.object({
  id: z.string(),
  kind: z.enum(REQUEST_KINDS),
  status: z.enum(REQUEST_STATUSES),
  requester: z.string(),
  spec: VmSpecSchema,
  notes: z.array(z.string()),
  channel: z.string(),
  message_ts: z.string().nullable(),
  pipeline_id: z.number().int().nullable(),
  pipeline_url: z.string().nullable(),
  error: z.string().nullable(),
  review: PlanReviewRecordSchema.nullable(),
  decision: DecisionSchema.nullable(),
  address: z.string().nullable(),
  approvals: ShownApprovalsSchema.nullish().transform((value) => value ?? null),
  failure: FailureRecordSchema.nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  revision: z.number().int(),
  rendered_revision: z.number().int(),
  rendered_hash: z.string().nullable(),
  stage_at: z.string().nullable(),
  state_name: z.string().nullable(),
  stage_times: z.partialRecord(z.enum(REQUEST_STATUSES), z.string()).nullable(),
});

function toRecord(row: unknown): RequestRecord {
  const r = RequestRowSchema.parse(row);
  return {
    id: r.id,
    kind: r.kind,
    status: r.status,
    requester: r.requester,
    spec: r.spec,
    notes: r.notes,
    channel: r.channel,
    messageTs: r.message_ts,
    pipelineId: r.pipeline_id,
    pipelineUrl: r.pipeline_url,
    error: r.error,
    review: r.review,
    decision: r.decision,
    address: r.address,
    stateName: r.state_name,
    approvals: r.approvals,
    failure: r.failure,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    revision: r.revision,
    renderedRevision: r.rendered_revision,
    renderedHash: r.rendered_hash,
    stageAt: r.stage_at ?? r.created_at,
    stageTimes: r.stage_times ?? {},
  };
}

type StatusPatch = RequestPatch & { status?: RequestStatus };

const COLUMNS = {
  status: "status",
  messageTs: "message_ts",
  pipelineId: "pipeline_id",
  pipelineUrl: "pipeline_url",
  error: "error",
  review: "review",
  decision: "decision",
  address: "address",
  approvals: "approvals",
  failure: "failure",
  notes: "notes",
} as const satisfies Record<keyof StatusPatch, string>;

const JSON_COLUMNS = new Set<keyof StatusPatch>([
  "review",
  "decision",
  "approvals",
  "notes",
  "failure",
]);

/**
 * One UPDATE of the patched columns, only when the status is among `from` if given: the row
 * as it is after, or undefined when no row matched.
 */
async function updateRequestRow(
  db: Queryable,
  now: string,
  id: string,
  patch: StatusPatch,
  from?: readonly RequestStatus[],
): Promise<RequestRecord | undefined> {
  const entries = (Object.entries(patch) as [keyof StatusPatch, unknown][]).filter(
    ([, value]) => value !== undefined,
  );
  const values: unknown[] = [id, now];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const assignments = entries.map(([key, value]) =>
    JSON_COLUMNS.has(key) && value !== null
      ? `${COLUMNS[key]} = ${param(JSON.stringify(value))}::jsonb`
      : `${COLUMNS[key]} = ${param(value)}`,
  );
  assignments.push("updated_at = $2", "revision = revision + 1");
  if (patch.status !== undefined) {
    // A new status starts a stage; the same status again (a retried move) keeps its start.
    const status = param(patch.status);
    assignments.push(
      `stage_at = CASE WHEN status = ${status} THEN stage_at ELSE $2 END`,
      `stage_times = CASE WHEN status = ${status} THEN stage_times ELSE jsonb_set(COALESCE(stage_times, '{}'), ARRAY[${status}::text], to_jsonb($2::text)) END`,
    );
  }
  const guard = from === undefined ? "" : ` AND status = ANY(${param([...from])}::text[])`;
  const { rows } = await db.query(
    `UPDATE requests SET ${assignments.join(", ")} WHERE id = $1${guard} RETURNING *`,
    values,
  );
  return rows[0] === undefined ? undefined : toRecord(rows[0]);
}

export type PostgresRequests = Pick<
  AsyncStore,
  | "getRequest"
  | "listActive"
  | "requestsForVm"
  | "findBySubmission"
  | "listByStatus"
  | "findHolding"
  | "listHeld"
  | "listBehind"
  | "createRequest"
  | "updateRequest"
  | "transition"
  | "markRendered"
>;

/** What a move writes beside the new status, on the move's own connection. */
export interface MoveJournal {
  intend(
    db: Queryable,
    subject: string,
    step: string,
    detail?: Record<string, unknown>,
  ): Promise<unknown>;
  audit(db: Queryable, entry: Parameters<AsyncStore["audit"]>[0]): Promise<void>;
}

const rowsOf = async (pool: Runner, sql: string, values: unknown[] = []) =>
  (await pool.query(sql, values)).rows.map(toRecord);

/**
 * Inserts the request on `client` (in the caller's transaction), with `entry` audited; undefined
 * when one was already created for the same submission, which is left as it is.
 */
export async function insertRequest(
  client: Queryable,
  clock: () => Date,
  journal: MoveJournal,
  request: NewRequest,
  entry?: Omit<AuditEntry, "requestId">,
): Promise<RequestRecord | undefined> {
  const now = clock().toISOString();
  const id = newRequestId(clock().getTime());
  const { rows } = await client.query(
    `INSERT INTO requests (id, kind, status, requester, spec, notes, channel, submission_key, state_name, decision, created_at, updated_at)
     VALUES ($1, $2, 'queued', $3, $4::jsonb, $5::jsonb, $6, $7, $8, $9::jsonb, $10, $10)
     ON CONFLICT (submission_key) DO NOTHING RETURNING *`,
    [
      id,
      request.kind ?? "create",
      request.requester,
      JSON.stringify(request.spec),
      JSON.stringify(request.notes),
      request.channel,
      request.submissionKey,
      request.stateName ?? null,
      request.decision === undefined ? null : JSON.stringify(request.decision),
      now,
    ],
  );
  if (rows[0] === undefined) return undefined;
  if (entry !== undefined) await journal.audit(client, { ...entry, requestId: id });
  return toRecord(rows[0]);
}

/** The request created for the submission `key`, if one was. */
export async function bySubmission(
  client: Queryable,
  key: string,
): Promise<RequestRecord | undefined> {
  const { rows } = await client.query("SELECT * FROM requests WHERE submission_key = $1", [key]);
  return rows[0] === undefined ? undefined : toRecord(rows[0]);
}

/**
 * Creates the request, or returns the one already created for the same submission; `entry` (who
 * asked, under which rule) is audited in the same transaction, only when the request is new.
 */
async function createRequest(
  pool: Runner,
  clock: () => Date,
  journal: MoveJournal,
  request: NewRequest,
  entry?: Omit<AuditEntry, "requestId">,
): Promise<{ request: RequestRecord; created: boolean }> {
  const inserted = await guardWrite("record a new request", () =>
    pool.transaction((client) => insertRequest(client, clock, journal, request, entry)),
  );
  if (inserted !== undefined) return { request: inserted, created: true };
  const existing = await bySubmission(pool, request.submissionKey);
  if (existing === undefined) throw new Error(`the submission ${request.submissionKey} vanished`);
  return { request: existing, created: false };
}

/** The reads of the requests table, each row checked against its schema. */
function requestReads(
  pool: Runner,
): Pick<
  PostgresRequests,
  | "getRequest"
  | "listActive"
  | "requestsForVm"
  | "findBySubmission"
  | "listByStatus"
  | "findHolding"
  | "listHeld"
  | "listBehind"
> {
  const rows = (sql: string, values: unknown[] = []) => rowsOf(pool, sql, values);
  const one = async (sql: string, values: unknown[]) => (await rows(sql, values))[0];
  return {
    getRequest: (id) => one("SELECT * FROM requests WHERE id = $1", [id]),
    listActive: () =>
      rows("SELECT * FROM requests WHERE NOT (status = ANY($1::text[])) ORDER BY created_at, id", [
        [...FINAL_STATUSES],
      ]),
    requestsForVm: (name) =>
      rows("SELECT * FROM requests WHERE spec ->> 'name' = $1 ORDER BY created_at DESC, seq DESC", [
        name,
      ]),
    findBySubmission: (key) => one("SELECT * FROM requests WHERE submission_key = $1", [key]),
    listByStatus: async (statuses) =>
      statuses.length === 0
        ? []
        : rows("SELECT * FROM requests WHERE status = ANY($1::text[]) ORDER BY created_at, id", [
            [...statuses],
          ]),
    findHolding: async (statuses, vm) =>
      statuses.length === 0
        ? []
        : rows(
            `SELECT * FROM requests WHERE kind = 'create' AND status = ANY($1::text[])
               AND (spec ->> 'name' = $2 OR split_part(spec ->> 'ip', '/', 1) = $3)
             ORDER BY created_at, id`,
            [[...statuses], vm.name, vm.address],
          ),
    listHeld: async (statuses) =>
      statuses.length === 0
        ? []
        : (
            await pool.query<{ id: string; requester: string; spec: unknown }>(
              "SELECT id, requester, spec FROM requests WHERE kind = 'create' AND status = ANY($1::text[]) ORDER BY created_at, id",
              [[...statuses]],
            )
          ).rows.map((row: { id: string; requester: string; spec: unknown }) => ({
            id: row.id,
            requester: row.requester,
            spec: VmSpecSchema.parse(row.spec),
          })),
    listBehind: (limit) =>
      rows(
        "SELECT * FROM requests WHERE rendered_revision < revision AND message_ts IS NOT NULL ORDER BY updated_at, seq LIMIT $1",
        [limit],
      ),
  };
}

/**
 * The writes of the requests table. A move writes its intents and its audit entry (through
 * `journal`) on its own connection, in its transaction.
 */
/**
 * `transition`'s move on `client`, inside the caller's transaction: the conditional update, then
 * the intents and the audit entry when it moved. The caller has checked the move (`checkMove`).
 */
export async function moveRequest(
  client: Queryable,
  clock: () => Date,
  journal: MoveJournal,
  [id, from, to, patch = {}, intent, entry]: Parameters<AsyncStore["transition"]>,
): Promise<RequestRecord | undefined> {
  const moved = await updateRequestRow(
    client,
    clock().toISOString(),
    id,
    { ...patch, status: to },
    from,
  );
  if (moved === undefined) return undefined;
  const intents = intent === undefined ? [] : "step" in intent ? [intent] : intent;
  for (const each of intents) await journal.intend(client, id, each.step, each.detail);
  if (entry !== undefined) await journal.audit(client, { ...entry, requestId: id });
  return moved;
}

function requestWrites(
  pool: Runner,
  clock: () => Date,
  journal: MoveJournal,
): Pick<PostgresRequests, "createRequest" | "updateRequest" | "transition" | "markRendered"> {
  return {
    createRequest: (request, entry) => createRequest(pool, clock, journal, request, entry),

    async updateRequest(id, patch) {
      // The type leaves the status out; a patch built at run time must too.
      if ("status" in patch) throw new Error("a request's status changes only through transition");
      const updated = await guardWrite(`update request ${id}`, () =>
        updateRequestRow(pool, clock().toISOString(), id, patch),
      );
      if (updated === undefined) throw new Error(`No request ${id} in the store.`);
      return updated;
    },

    async transition(id, from, to, patch, intent, entry) {
      checkMove(from, to);
      return guardWrite(`move request ${id} to ${to}`, () =>
        pool.transaction((client) =>
          moveRequest(client, clock, journal, [id, from, to, patch, intent, entry]),
        ),
      );
    },

    async markRendered(id, revision, hash) {
      await guardWrite(`record what the message of ${id} shows`, () =>
        pool.query("UPDATE requests SET rendered_revision = $1, rendered_hash = $2 WHERE id = $3", [
          revision,
          hash,
          id,
        ]),
      );
    },
  };
}

export function createPostgresRequests(
  pool: Runner,
  clock: () => Date,
  journal: MoveJournal,
): PostgresRequests {
  return { ...requestReads(pool), ...requestWrites(pool, clock, journal) };
}
