import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { randomBytes } from "node:crypto";
import Database from "better-sqlite3";
import { z } from "zod";
import { DecisionSchema, PlanReviewRecordSchema } from "../tracker/review.js";
import { VmSpecSchema } from "../vm/spec.js";
import { MIGRATIONS } from "./migrations.js";
import {
  FINAL_STATUSES,
  REQUEST_STATUSES,
  type AuditEntry,
  type AuditRecord,
  type EffectRecord,
  type NewRequest,
  type RequestPatch,
  type RequestRecord,
  type RequestStatus,
  type Store,
} from "./store.js";

const RequestRowSchema = z.object({
  id: z.string(),
  status: z.enum(REQUEST_STATUSES),
  requester: z.string(),
  spec: z.string().transform((text) => VmSpecSchema.parse(JSON.parse(text))),
  notes: z.string().transform((text) => z.array(z.string()).parse(JSON.parse(text))),
  channel: z.string(),
  message_ts: z.string().nullable(),
  pipeline_id: z.number().int().nullable(),
  pipeline_url: z.string().nullable(),
  error: z.string().nullable(),
  review: z
    .string()
    .nullable()
    .transform((text) => (text === null ? null : PlanReviewRecordSchema.parse(JSON.parse(text)))),
  decision: z
    .string()
    .nullable()
    .transform((text) => (text === null ? null : DecisionSchema.parse(JSON.parse(text)))),
  address: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

const AuditRowSchema = z.object({
  id: z.number().int(),
  request_id: z.string().nullable(),
  actor: z.string(),
  action: z.string(),
  detail: z.string().transform((text) => z.record(z.string(), z.unknown()).parse(JSON.parse(text))),
  at: z.string(),
});

const JsonObjectSchema = z
  .string()
  .transform((text) => z.record(z.string(), z.unknown()).parse(JSON.parse(text)));

const EffectRowSchema = z.object({
  subject: z.string(),
  step: z.string(),
  state: z.enum(["intended", "done"]),
  intent: JsonObjectSchema,
  result: JsonObjectSchema.nullable(),
  intended_at: z.string(),
  done_at: z.string().nullable(),
});

function toEffect(row: unknown): EffectRecord {
  const r = EffectRowSchema.parse(row);
  return {
    subject: r.subject,
    step: r.step,
    state: r.state,
    intent: r.intent,
    result: r.result,
    intendedAt: r.intended_at,
    doneAt: r.done_at,
  };
}

function toRecord(row: unknown): RequestRecord {
  const r = RequestRowSchema.parse(row);
  return {
    id: r.id,
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
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** A request ID that is short enough to quote in Slack and sorts by creation time. */
export function newRequestId(now = Date.now()): string {
  return `vm-${now.toString(36)}-${randomBytes(4).toString("hex")}`;
}

/** Applies pending migrations inside one transaction each. */
function migrate(db: Database.Database): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(
      `The database schema is version ${current}, newer than this vmbot knows (${MIGRATIONS.length}): upgrade vmbot or use another VMBOT_DB.`,
    );
  }
  MIGRATIONS.slice(current).forEach((sql, index) => {
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${current + index + 1}`);
    })();
  });
}

/** Opens (and creates on first run) the SQLite store at `path`; `:memory:` for a throwaway one. */
export function openSqliteStore(path: string, clock: () => Date = () => new Date()): Store {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  migrate(db);

  const insertRequest = db.prepare(`
    INSERT INTO requests (id, status, requester, spec, notes, channel, submission_key, created_at, updated_at)
    VALUES (@id, 'queued', @requester, @spec, @notes, @channel, @submissionKey, @now, @now)
    ON CONFLICT (submission_key) DO NOTHING`);
  const selectById = db.prepare("SELECT * FROM requests WHERE id = ?");
  const selectBySubmission = db.prepare("SELECT * FROM requests WHERE submission_key = ?");
  const finalList = FINAL_STATUSES.map((s) => `'${s}'`).join(", ");
  const selectActive = db.prepare(
    `SELECT * FROM requests WHERE status NOT IN (${finalList}) ORDER BY created_at, id`,
  );
  const insertAudit = db.prepare(
    "INSERT INTO audit_log (request_id, actor, action, detail, at) VALUES (?, ?, ?, ?, ?)",
  );
  const selectEffect = db.prepare("SELECT * FROM effects WHERE subject = ? AND step = ?");
  const insertIntent = db.prepare(
    `INSERT INTO effects (subject, step, state, intent, intended_at) VALUES (?, ?, 'intended', ?, ?)
     ON CONFLICT (subject, step) DO NOTHING`,
  );
  const completeEffect = db.prepare(
    `INSERT INTO effects (subject, step, state, result, intended_at, done_at) VALUES (@subject, @step, 'done', @result, @now, @now)
     ON CONFLICT (subject, step) DO UPDATE SET state = 'done', result = @result, done_at = @now`,
  );
  const selectPending = db.prepare(
    "SELECT * FROM effects WHERE state = 'intended' ORDER BY intended_at, rowid",
  );
  const insertDelivery = db.prepare(
    "INSERT INTO deliveries (key, seen_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
  );
  const forgetDeliveries = db.prepare("DELETE FROM deliveries WHERE seen_at < ?");
  const intend = (subject: string, step: string, detail: Record<string, unknown> = {}) => {
    insertIntent.run(subject, step, JSON.stringify(detail), clock().toISOString());
    return toEffect(selectEffect.get(subject, step));
  };
  const columns = {
    status: "status",
    messageTs: "message_ts",
    pipelineId: "pipeline_id",
    pipelineUrl: "pipeline_url",
    error: "error",
    review: "review",
    decision: "decision",
    address: "address",
    notes: "notes",
  } as const satisfies Record<keyof RequestPatch, string>;

  /** One UPDATE of the patched columns, only when the status is among `from` if given. */
  function update(id: string, patch: RequestPatch, from?: readonly RequestStatus[]): boolean {
    const entries = (Object.entries(patch) as [keyof RequestPatch, unknown][]).filter(
      ([, value]) => value !== undefined,
    );
    const assignments = [
      ...entries.map(([key]) => `${columns[key]} = @${key}`),
      "updated_at = @now",
    ];
    const guard =
      from === undefined ? "" : ` AND status IN (${from.map((_, i) => `@from${i}`).join(", ")})`;
    const values = entries.map(([key, value]) => [
      key,
      (key === "review" || key === "decision" || key === "notes") && value !== null
        ? JSON.stringify(value)
        : value,
    ]);
    const result = db
      .prepare(`UPDATE requests SET ${assignments.join(", ")} WHERE id = @id${guard}`)
      .run({
        ...Object.fromEntries(values),
        ...Object.fromEntries((from ?? []).map((status, i) => [`from${i}`, status])),
        now: clock().toISOString(),
        id,
      });
    return result.changes === 1;
  }

  return {
    createRequest(request: NewRequest) {
      const now = clock().toISOString();
      const id = newRequestId(clock().getTime());
      const { changes } = insertRequest.run({
        id,
        requester: request.requester,
        spec: JSON.stringify(request.spec),
        notes: JSON.stringify(request.notes),
        channel: request.channel,
        submissionKey: request.submissionKey,
        now,
      });
      return {
        request: toRecord(selectBySubmission.get(request.submissionKey)),
        created: changes === 1,
      };
    },

    getRequest(id) {
      const row = selectById.get(id);
      return row === undefined ? undefined : toRecord(row);
    },

    updateRequest(id, patch) {
      if (!update(id, patch)) throw new Error(`No request ${id} in the store.`);
      return toRecord(selectById.get(id));
    },

    transition(id, from, to, patch = {}, intent) {
      return db.transaction(() => {
        if (!update(id, { ...patch, status: to }, from)) return undefined;
        if (intent !== undefined) intend(id, intent.step, intent.detail);
        return toRecord(selectById.get(id));
      })();
    },

    effect(subject, step) {
      const row = selectEffect.get(subject, step);
      return row === undefined ? undefined : toEffect(row);
    },

    intend,

    complete(subject, step, result) {
      completeEffect.run({
        subject,
        step,
        result: JSON.stringify(result),
        now: clock().toISOString(),
      });
      return toEffect(selectEffect.get(subject, step));
    },

    pendingEffects() {
      return selectPending.all().map(toEffect);
    },

    listActive() {
      return selectActive.all().map(toRecord);
    },

    audit(entry: AuditEntry) {
      insertAudit.run(
        entry.requestId,
        entry.actor,
        entry.action,
        JSON.stringify(entry.detail ?? {}),
        clock().toISOString(),
      );
    },

    listAudit(requestId) {
      const rows =
        requestId === undefined
          ? db.prepare("SELECT * FROM audit_log ORDER BY id").all()
          : db.prepare("SELECT * FROM audit_log WHERE request_id = ? ORDER BY id").all(requestId);
      return rows.map((row): AuditRecord => {
        const r = AuditRowSchema.parse(row);
        return {
          id: r.id,
          requestId: r.request_id,
          actor: r.actor,
          action: r.action,
          detail: r.detail,
          at: r.at,
        };
      });
    },

    isOpen: () => db.open,

    firstDelivery(key, keepMs) {
      const now = clock();
      return db.transaction(() => {
        forgetDeliveries.run(new Date(now.getTime() - keepMs).toISOString());
        return insertDelivery.run(key, now.toISOString()).changes === 1;
      })();
    },

    close() {
      if (db.open) db.close();
    },
  };
}
