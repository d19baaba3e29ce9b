import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { randomBytes } from "node:crypto";
import Database from "better-sqlite3";
import { z } from "zod";
import { checkMove, FINAL_STATUSES, REQUEST_STATUSES } from "../requests/lifecycle.js";
import {
  DecisionSchema,
  FailureRecordSchema,
  PlanReviewRecordSchema,
} from "../requests/records.js";
import { VmSpecSchema } from "../vm/spec.js";
import { MIGRATIONS } from "./migrations.js";
import { claimStore, type StoreOwnership } from "./owner.js";
import { createSqliteApprovals } from "./approvals.js";
import { createSqliteInventory } from "./inventory.js";
import { checkIntegrity, createWriteProbe, guardWrite } from "./sqlite-checks.js";
import {
  REQUEST_KINDS,
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
  kind: z.enum(REQUEST_KINDS).optional(),
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
      text === null || text === undefined
        ? {}
        : z.partialRecord(z.enum(REQUEST_STATUSES), z.string()).parse(JSON.parse(text)),
    ),
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
    review: r.review,
    decision: r.decision,
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

export interface SqliteStoreOptions {
  clock?: () => Date;
  /**
   * Opens an existing store to read it (tooling, tests) while its bot runs: no lock, no
   * migration, and every write refused.
   */
  readOnly?: boolean;
}

/**
 * How long a write waits for a lock another program holds. One bot owns the store, so only an
 * outside program (an operator's open transaction) can hold it; better-sqlite3 waits on the event
 * loop, and Slack wants its answers within three seconds.
 */
const BUSY_TIMEOUT_MS = 1_000;

/** The database file, opened, checked and migrated, or an error that says why it cannot be. */
function openDatabase(path: string, readOnly: boolean): Database.Database {
  if (readOnly) return new Database(path, { readonly: true, fileMustExist: true });
  const db = new Database(path);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    if (path !== ":memory:") checkIntegrity(db, path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    migrate(db);
    return db;
  } catch (error) {
    db.close();
    const code = (error as { code?: unknown }).code;
    if (
      code === "SQLITE_NOTADB" ||
      (typeof code === "string" && code.startsWith("SQLITE_CORRUPT"))
    ) {
      throw new Error(
        `the store ${path} is damaged (${(error as Error).message}). Restore it from a backup, or move it aside to start with an empty store.`,
        { cause: error },
      );
    }
    throw error;
  }
}

/**
 * Opens (and creates on first run) the SQLite store at `path`; `:memory:` for a throwaway one.
 * A store on a file belongs to this process until it is closed: a second open of the same file
 * (here or in another process) throws StoreOwnedError. A damaged file, or one that cannot take
 * a write, is refused.
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const clock = options.clock ?? (() => new Date());
  const readOnly = options.readOnly === true;
  if (path !== ":memory:" && !readOnly) mkdirSync(dirname(path), { recursive: true });
  const ownership: StoreOwnership | undefined =
    path === ":memory:" || readOnly ? undefined : claimStore(path);
  let db: Database.Database;
  try {
    db = openDatabase(path, readOnly);
  } catch (error) {
    ownership?.release();
    throw error;
  }
  const probe = createWriteProbe(db, clock, BUSY_TIMEOUT_MS);
  if (!readOnly) {
    const first = probe();
    if (!first.ok) {
      db.close();
      ownership?.release();
      throw new Error(`${first.reason} (${path})`);
    }
  }

  const insertRequest = db.prepare(`
    INSERT INTO requests (id, kind, status, requester, spec, notes, channel, submission_key, state_name, created_at, updated_at)
    VALUES (@id, @kind, 'queued', @requester, @spec, @notes, @channel, @submissionKey, @stateName, @now, @now)
    ON CONFLICT (submission_key) DO NOTHING`);
  const selectById = db.prepare("SELECT * FROM requests WHERE id = ?");
  const selectBySubmission = db.prepare("SELECT * FROM requests WHERE submission_key = ?");
  const selectForVm = db.prepare(
    "SELECT * FROM requests WHERE json_extract(spec, '$.name') = ? ORDER BY created_at DESC, rowid DESC",
  );
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
  const audit = (entry: AuditEntry) => {
    guardWrite(`audit ${entry.action}`, () =>
      insertAudit.run(
        entry.requestId,
        entry.actor,
        entry.action,
        JSON.stringify(entry.detail ?? {}),
        clock().toISOString(),
      ),
    );
  };
  const insertDelivery = db.prepare(
    "INSERT INTO deliveries (key, seen_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
  );
  const forgetDeliveries = db.prepare("DELETE FROM deliveries WHERE seen_at < ?");
  const intend = (subject: string, step: string, detail: Record<string, unknown> = {}) => {
    guardWrite(`record the intent ${step} of ${subject}`, () =>
      insertIntent.run(subject, step, JSON.stringify(detail), clock().toISOString()),
    );
    return toEffect(selectEffect.get(subject, step));
  };
  const selectWatched = db.prepare(
    `SELECT * FROM effects WHERE step = ? AND state = 'done'
       AND json_extract(result, '$.watchUntil') > ? ORDER BY intended_at, rowid`,
  );
  const markRendered = db.prepare(
    "UPDATE requests SET rendered_revision = ?, rendered_hash = ? WHERE id = ?",
  );
  const selectBehind = db.prepare(
    "SELECT * FROM requests WHERE rendered_revision < revision AND message_ts IS NOT NULL ORDER BY updated_at LIMIT ?",
  );
  const columns = {
    status: "status",
    messageTs: "message_ts",
    pipelineId: "pipeline_id",
    pipelineUrl: "pipeline_url",
    error: "error",
    review: "review",
    decision: "decision",
    address: "address",
    failure: "failure",
    notes: "notes",
  } as const satisfies Record<keyof StatusPatch, string>;

  /** One UPDATE of the patched columns, only when the status is among `from` if given. */
  function update(id: string, patch: StatusPatch, from?: readonly RequestStatus[]): boolean {
    const entries = (Object.entries(patch) as [keyof StatusPatch, unknown][]).filter(
      ([, value]) => value !== undefined,
    );
    const assignments = [
      ...entries.map(([key]) => `${columns[key]} = @${key}`),
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
      (key === "review" || key === "decision" || key === "notes" || key === "failure") &&
      value !== null
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
    inventory: createSqliteInventory(db, clock),
    approvals: createSqliteApprovals(db),

    createRequest(request: NewRequest) {
      const now = clock().toISOString();
      const id = newRequestId(clock().getTime());
      const { changes } = guardWrite("record a new request", () =>
        insertRequest.run({
          id,
          requester: request.requester,
          spec: JSON.stringify(request.spec),
          notes: JSON.stringify(request.notes),
          channel: request.channel,
          submissionKey: request.submissionKey,
          stateName: request.stateName ?? null,
          kind: request.kind ?? "create",
          now,
        }),
      );
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
          for (const each of intents) intend(id, each.step, each.detail);
          if (entry !== undefined) audit({ ...entry, requestId: id });
          return toRecord(selectById.get(id));
        })(),
      );
    },

    effect(subject, step) {
      const row = selectEffect.get(subject, step);
      return row === undefined ? undefined : toEffect(row);
    },

    intend,

    complete(subject, step, result) {
      guardWrite(`record the result of ${step} of ${subject}`, () =>
        completeEffect.run({
          subject,
          step,
          result: JSON.stringify(result),
          now: clock().toISOString(),
        }),
      );
      return toEffect(selectEffect.get(subject, step));
    },

    watchedEffects(step, now) {
      return selectWatched.all(step, now).map(toEffect);
    },

    pendingEffects() {
      return selectPending.all().map(toEffect);
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
      return db
        .prepare(
          `SELECT * FROM requests WHERE status IN (${statuses.map(() => "?").join(", ")}) ORDER BY created_at, id`,
        )
        .all(...statuses)
        .map(toRecord);
    },

    audit,

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

    markRendered(id, revision, hash) {
      guardWrite(`record what the message of ${id} shows`, () =>
        markRendered.run(revision, hash, id),
      );
    },

    listBehind(limit) {
      return selectBehind.all(limit).map(toRecord);
    },

    writable: probe,

    isOpen: () => db.open,

    firstDelivery(key, keepMs) {
      const now = clock();
      return guardWrite(`record the delivery ${key}`, () =>
        db.transaction(() => {
          forgetDeliveries.run(new Date(now.getTime() - keepMs).toISOString());
          return insertDelivery.run(key, now.toISOString()).changes === 1;
        })(),
      );
    },

    close() {
      if (db.open) db.close();
      ownership?.release();
    },
  };
}
