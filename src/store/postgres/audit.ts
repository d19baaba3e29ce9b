import type pg from "pg";
import { z } from "zod";
import type { AsyncStore } from "../async.js";
import type { AuditEntry, AuditRecord, Writable } from "../store.js";
import { guardWrite, postgresProblem, type Queryable, type Runner } from "./pool.js";

/**
 * What people did (the audit log, kept for good), which Slack deliveries were already acted on
 * by any replica (kept as long as Slack may retry them), and the heartbeat that says whether the
 * database takes writes.
 */

const AuditRowSchema = z.object({
  id: z.number().int(),
  request_id: z.string().nullable(),
  actor: z.string(),
  action: z.string(),
  detail: z.record(z.string(), z.unknown()),
  at: z.string(),
});

function toAudit(row: unknown): AuditRecord {
  const r = AuditRowSchema.parse(row);
  return {
    id: r.id,
    requestId: r.request_id,
    actor: r.actor,
    action: r.action,
    detail: r.detail,
    at: r.at,
  };
}

export interface PostgresAudit extends Pick<AsyncStore, "audit" | "listAudit" | "firstDelivery"> {
  /** The audit entry written on a move's own connection, in its transaction. */
  auditWith: (db: Queryable, entry: AuditEntry) => Promise<void>;
}

export function createPostgresAudit(pool: Runner, clock: () => Date): PostgresAudit {
  const insert = async (db: Queryable, entry: AuditEntry) => {
    await db.query(
      "INSERT INTO audit_log (request_id, actor, action, detail, at) VALUES ($1, $2, $3, $4::jsonb, $5)",
      [
        entry.requestId,
        entry.actor,
        entry.action,
        JSON.stringify(entry.detail ?? {}),
        clock().toISOString(),
      ],
    );
  };
  return {
    auditWith: insert,

    async audit(entry) {
      await guardWrite(`audit ${entry.action}`, () => insert(pool, entry));
    },

    async listAudit(requestId) {
      const { rows } =
        requestId === undefined
          ? await pool.query("SELECT * FROM audit_log ORDER BY id")
          : await pool.query("SELECT * FROM audit_log WHERE request_id = $1 ORDER BY id", [
              requestId,
            ]);
      return rows.map(toAudit);
    },

    async firstDelivery(key, keepMs) {
      const now = clock();
      return guardWrite(`record the delivery ${key}`, () =>
        pool.transaction(async (client) => {
          await client.query("DELETE FROM deliveries WHERE seen_at < $1", [
            new Date(now.getTime() - keepMs).toISOString(),
          ]);
          // Of replicas recording one key at once, the unique key lets exactly one insert.
          const inserted = await client.query(
            "INSERT INTO deliveries (key, seen_at) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
            [key, now.toISOString()],
          );
          return inserted.rowCount === 1;
        }),
      );
    },
  };
}

/** How long a successful heartbeat write is trusted before the next check writes again. */
const TRUST_MS = 2_000;

/** Writes the heartbeat row: throws the database's refusal when it takes no write. */
export async function writeHeartbeat(db: Queryable, at: Date): Promise<void> {
  await db.query(
    "INSERT INTO heartbeat (id, at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET at = excluded.at",
    [at.toISOString()],
  );
}

/** The store's write probe: one heartbeat row, rewritten at most every TRUST_MS while it works. */
export function createPostgresProbe(
  pool: pg.Pool,
  clock: () => Date,
  isOpen: () => boolean,
): () => Promise<Writable> {
  let okAt = Number.NEGATIVE_INFINITY;
  return async () => {
    if (!isOpen()) return { ok: false, reason: "the store is closed" };
    const now = clock();
    if (now.getTime() - okAt < TRUST_MS) return { ok: true };
    try {
      await writeHeartbeat(pool, now);
      okAt = now.getTime();
      return { ok: true };
    } catch (error) {
      okAt = Number.NEGATIVE_INFINITY;
      return { ok: false, reason: `the store cannot be written: ${postgresProblem(error)}` };
    }
  };
}
