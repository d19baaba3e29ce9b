import { ADDRESS_SQL, HeldRowSchema, placeholders } from "./sqlite-held.js";
import { randomBytes } from "node:crypto";
import type Database from "better-sqlite3";
import { z } from "zod";
import { checkMove, FINAL_STATUSES, REQUEST_STATUSES } from "../requests/lifecycle.js";
import {
  DecisionSchema,
  FailureRecordSchema,
  PlanReviewRecordSchema,
  type PlanReviewRecord,
  ShownApprovalsSchema,
} from "../requests/records.js";
import { VmSpecSchema } from "../vm/spec.js";
import { guardWrite } from "./sqlite-checks.js";
import {
  REQUEST_KINDS,
  type NewRequest,
  type RequestPatch,
  type RequestRecord,
  type RequestStatus,
  type Store,
} from "./store.js";

/**
 * The requests table: one row per request, its status moved only through `transition` (the
 * table in requests/lifecycle.ts decides which moves exist), every change counted in `revision`.
 */

/** Built once: a schema built inside a transform would be built again for every row read. */
const NotesSchema = z.array(z.string());
const StageTimesSchema = z.partialRecord(z.enum(REQUEST_STATUSES), z.string());

const RequestRowSchema = z.object({
  id: z.string(),
  kind: z.enum(REQUEST_KINDS).optional(),
  status: z.enum(REQUEST_STATUSES),
  requester: z.string(),
  spec: z.string().transform((text) => VmSpecSchema.parse(JSON.parse(text))),
  notes: z.string().transform((text) => NotesSchema.parse(JSON.parse(text))),
  channel: z.string(),
  message_ts: z.string().nullable(),
  pipeline_id: z.number().int().nullable(),
  pipeline_url: z.string().nullable(),
  error: z.string().nullable(),
  review: z.string().nullable(),
  decision: z
    .string()
    .nullable()
    .transform((text) => (text === null ? null : DecisionSchema.parse(JSON.parse(text)))),
  address: z.string().nullable(),
  approvals: z
    .string()
    .nullish()
    .transform((text) =>
      text === null || text === undefined ? null : ShownApprovalsSchema.parse(JSON.parse(text)),
    ),
  failure: z
    .string()
    .nullish()
    .transform((text) =>
      text === null || text === undefined ? null : FailureRecordSchema.parse(JSON.parse(text)),
    ),
  created_at: z.string(),
  updated_at: z.string(),
  revision: z.number().int(),
  rendered_revision: z.number().int(),
  rendered_hash: z.string().nullable(),
  stage_at: z.string().nullable().optional(),
  state_name: z.string().nullable().optional(),
  stage_times: z
    .string()
    .nullish()
    .transform((text) =>
      text === null || text === undefined ? {} : StageTimesSchema.parse(JSON.parse(text)),
    ),
});

/** Reads a request row into its record. */
export type RowReader = (row: unknown) => RequestRecord;

/** Freezes an object and everything in it: a record shared between readers cannot be changed. */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/**
 * Reads request rows, parsing a row's review once: the tracker lists the open requests on every
 * pass, and a review, read back unchanged, is handed out again as it was parsed (frozen, as it
 * is shared) rather than parsed anew. At most `capacity` reviews are held, the least recently
 * read going first.
 */
export function createRowReader(capacity = 1_000): RowReader {
  const reviews = new Map<string, { text: string; review: PlanReviewRecord }>();
  const reviewOf = (id: string, text: string | null): PlanReviewRecord | null => {
    if (text === null) {
      reviews.delete(id);
      return null;
    }
    const known = reviews.get(id);
    reviews.delete(id);
    const review =
      known?.text === text
        ? known.review
        : deepFreeze(PlanReviewRecordSchema.parse(JSON.parse(text)));
    reviews.set(id, { text, review });
    if (reviews.size > capacity) {
      const oldest = reviews.keys().next();
      if (oldest.done !== true) reviews.delete(oldest.value);
    }
    return review;
  };
  return (row) => toRecord(row, reviewOf);
}

function toRecord(
  row: unknown,
  reviewOf: (id: string, text: string | null) => PlanReviewRecord | null,
): RequestRecord {
  const r = RequestRowSchema.parse(row);
  return {
    id: r.id,
    kind: r.kind ?? "create",
    status: r.status,
    requester: r.requester,
    spec: r.spec,
    notes: r.notes,
    channel: r.channel,
    messageTs: r.message_ts,
    pipelineId: r.pipeline_id,
    pipelineUrl: r.pipeline_url,
    error: r.error,
    review: reviewOf(r.id, r.review),
    decision: r.decision,
    approvals: r.approvals,
    address: r.address,
    stateName: r.state_name ?? null,
    failure: r.failure,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    revision: r.revision,
    renderedRevision: r.rendered_revision,
    renderedHash: r.rendered_hash,
    stageAt: r.stage_at ?? r.created_at,
    stageTimes: r.stage_times,
  };
}

/** An update's columns, the status included: only `transition` sets it. */
type StatusPatch = RequestPatch & { status?: RequestStatus };

const COLUMNS = {
  status: "status",
  messageTs: "message_ts",
  pipelineId: "pipeline_id",
  pipelineUrl: "pipeline_url",
  error: "error",
  review: "review",
  decision: "decision",
  approvals: "approvals",
  address: "address",
  failure: "failure",
  notes: "notes",
} as const satisfies Record<keyof StatusPatch, string>;

/** A request ID that is short enough to quote in Slack and sorts by creation time. */
export function newRequestId(now = Date.now()): string {
  return `vm-${now.toString(36)}-${randomBytes(4).toString("hex")}`;
}

/** One UPDATE of the patched columns, only when the status is among `from` if given. */
function updateRequestRow(
  db: Database.Database,
  now: string,
  id: string,
  patch: StatusPatch,
  from?: readonly RequestStatus[],
): boolean {
  const entries = (Object.entries(patch) as [keyof StatusPatch, unknown][]).filter(
    ([, value]) => value !== undefined,
  );
  const assignments = [
    ...entries.map(([key]) => `${COLUMNS[key]} = @${key}`),
    "updated_at = @now",
    "revision = revision + 1",
    // A new status starts a stage; the same status again (a retried move) keeps its start.
    ...(patch.status === undefined
      ? []
      : [
          "stage_at = CASE WHEN status = @status THEN stage_at ELSE @now END",
          "stage_times = CASE WHEN status = @status THEN stage_times ELSE json_set(COALESCE(stage_times, '{}'), '$.' || @status, @now) END",
        ]),
  ];
  const guard =
    from === undefined ? "" : ` AND status IN (${from.map((_, i) => `@from${i}`).join(", ")})`;
  const values = entries.map(([key, value]) => [
    key,
    ["review", "decision", "approvals", "notes", "failure"].includes(key) && value !== null
      ? JSON.stringify(value)
      : value,
  ]);
  const result = db
    .prepare(`UPDATE requests SET ${assignments.join(", ")} WHERE id = @id${guard}`)
    .run({
      ...Object.fromEntries(values),
      ...Object.fromEntries((from ?? []).map((status, i) => [`from${i}`, status])),
      now,
      id,
    });
  return result.changes === 1;
}

export type SqliteRequestReads = Pick<
  Store,
  | "getRequest"
  | "listActive"
  | "requestsForVm"
  | "findBySubmission"
  | "listByStatus"
  | "findHolding"
  | "listHeld"
  | "listBehind"
>;

/** The reads of the requests table, each row checked against its schema. */
export function createSqliteRequestReads(
  db: Database.Database,
  toRecord: RowReader = createRowReader(),
): SqliteRequestReads {
  // Reads whose SQL depends on how many statuses are asked for, each prepared once.
  const statements = new Map<string, Database.Statement>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  const selectById = db.prepare("SELECT * FROM requests WHERE id = ?");
  const selectBySubmission = db.prepare("SELECT * FROM requests WHERE submission_key = ?");
  const selectForVm = db.prepare(
    "SELECT * FROM requests WHERE json_extract(spec, '$.name') = ? ORDER BY created_at DESC, rowid DESC",
  );
  const finalList = FINAL_STATUSES.map((s) => `'${s}'`).join(", ");
  const selectActive = db.prepare(
    `SELECT * FROM requests WHERE status NOT IN (${finalList}) ORDER BY created_at, id`,
  );
  const selectBehind = db.prepare(
    "SELECT * FROM requests WHERE rendered_revision < revision AND message_ts IS NOT NULL ORDER BY updated_at LIMIT ?",
  );

  return {
    getRequest(id) {
      const row = selectById.get(id);
      return row === undefined ? undefined : toRecord(row);
    },

    listActive() {
      return selectActive.all().map(toRecord);
    },

    requestsForVm(name) {
      return selectForVm.all(name).map(toRecord);
    },

    findBySubmission(key) {
      const row = selectBySubmission.get(key);
      return row === undefined ? undefined : toRecord(row);
    },

    listByStatus(statuses) {
      if (statuses.length === 0) return [];
      return prepared(
        `SELECT * FROM requests WHERE status IN (${placeholders(statuses.length)}) ORDER BY created_at, id`,
      )
        .all(...statuses)
        .map(toRecord);
    },

    findHolding(statuses, vm) {
      if (statuses.length === 0) return [];
      return prepared(
        `SELECT * FROM requests WHERE kind = 'create' AND status IN (${placeholders(statuses.length)})
             AND (json_extract(spec, '$.name') = ? OR ${ADDRESS_SQL} = ?)
           ORDER BY created_at, rowid`,
      )
        .all(...statuses, vm.name, vm.address)
        .map(toRecord);
    },

    listHeld(statuses) {
      if (statuses.length === 0) return [];
      return prepared(
        `SELECT id, requester, spec FROM requests WHERE kind = 'create' AND status IN (${placeholders(statuses.length)}) ORDER BY created_at, rowid`,
      )
        .all(...statuses)
        .map((row) => HeldRowSchema.parse(row));
    },

    listBehind(limit) {
      return selectBehind.all(limit).map(toRecord);
    },
  };
}

export type SqliteRequestWrites = Pick<
  Store,
  "createRequest" | "updateRequest" | "transition" | "markRendered"
>;

/**
 * The writes of the requests table. A move writes its intents and its audit entry (through
 * `journal`) in the same transaction as the new status.
 */
export function createSqliteRequestWrites(
  db: Database.Database,
  clock: () => Date,
  journal: Pick<Store, "intend" | "audit">,
  toRecord: RowReader = createRowReader(),
): SqliteRequestWrites {
  const insertRequest = db.prepare(`
    INSERT INTO requests (id, kind, status, requester, spec, notes, channel, submission_key, state_name, decision, created_at, updated_at)
    VALUES (@id, @kind, 'queued', @requester, @spec, @notes, @channel, @submissionKey, @stateName, @decision, @now, @now)
    ON CONFLICT (submission_key) DO NOTHING`);
  const selectById = db.prepare("SELECT * FROM requests WHERE id = ?");
  const selectBySubmission = db.prepare("SELECT * FROM requests WHERE submission_key = ?");
  const markRendered = db.prepare(
    "UPDATE requests SET rendered_revision = ?, rendered_hash = ? WHERE id = ?",
  );
  const update = (id: string, patch: StatusPatch, from?: readonly RequestStatus[]) =>
    updateRequestRow(db, clock().toISOString(), id, patch, from);

  return {
    createRequest(request: NewRequest, entry) {
      const now = clock().toISOString();
      const id = newRequestId(clock().getTime());
      const changes = guardWrite("record a new request", () =>
        db.transaction(() => {
          const inserted = insertRequest.run({
            id,
            requester: request.requester,
            spec: JSON.stringify(request.spec),
            notes: JSON.stringify(request.notes),
            channel: request.channel,
            submissionKey: request.submissionKey,
            stateName: request.stateName ?? null,
            kind: request.kind ?? "create",
            decision: request.decision === undefined ? null : JSON.stringify(request.decision),
            now,
          }).changes;
          if (inserted === 1 && entry !== undefined) journal.audit({ ...entry, requestId: id });
          return inserted;
        })(),
      );
      return {
        request: toRecord(selectBySubmission.get(request.submissionKey)),
        created: changes === 1,
      };
    },

    updateRequest(id, patch) {
      // The type leaves the status out; a patch built at run time must too.
      if ("status" in patch) throw new Error("a request's status changes only through transition");
      if (!guardWrite(`update request ${id}`, () => update(id, patch))) {
        throw new Error(`No request ${id} in the store.`);
      }
      return toRecord(selectById.get(id));
    },

    transition(id, from, to, patch = {}, intent, entry) {
      checkMove(from, to);
      return guardWrite(`move request ${id} to ${to}`, () =>
        db.transaction(() => {
          if (!update(id, { ...patch, status: to }, from)) return undefined;
          const intents = intent === undefined ? [] : "step" in intent ? [intent] : intent;
          for (const each of intents) journal.intend(id, each.step, each.detail);
          if (entry !== undefined) journal.audit({ ...entry, requestId: id });
          return toRecord(selectById.get(id));
        })(),
      );
    },

    markRendered(id, revision, hash) {
      guardWrite(`record what the message of ${id} shows`, () =>
        markRendered.run(revision, hash, id),
      );
    },
  };
}
