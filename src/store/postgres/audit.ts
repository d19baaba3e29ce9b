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
  const prune = deliveryPruner(pool);
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
      const forgetBefore = new Date(now.getTime() - keepMs).toISOString();
      // One statement, one round trip: a new key is inserted; a key seen longer ago than keepMs
      // (not yet pruned) is taken as new and seen again now; a recent one is left as it is and
      // returns no row. Of replicas recording one key at once, the unique key lets exactly one
      // insert, and the others find it recent.
      const recorded = await guardWrite(`record the delivery ${key}`, () =>
        pool.query(
          `INSERT INTO deliveries (key, seen_at) VALUES ($1, $2)
           ON CONFLICT (key) DO UPDATE SET seen_at = excluded.seen_at
           WHERE deliveries.seen_at < $3
           RETURNING key`,
          [key, now.toISOString(), forgetBefore],
        ),
      );
      prune.due(now, forgetBefore);
      return recorded.rowCount === 1;
    },
  };
}

/** How often a replica prunes the deliveries it no longer needs, and how many rows at most. */
export const PRUNE_EVERY_MS = 60_000;
export const PRUNE_BATCH = 5_000;

/**
 * Forgets deliveries older than Slack's retries, off the request path: at most once every
 * PRUNE_EVERY_MS, PRUNE_BATCH rows at a time, started after a delivery is recorded and not
 * awaited by it. Correctness does not depend on it (firstDelivery takes an old key as new
 * whether or not it was pruned): it only keeps the table small, so a prune that fails (the
 * database away, the store closing) is simply the next one's to do.
 */
function deliveryPruner(pool: Runner) {
  let lastMs = Number.NEGATIVE_INFINITY;
  let running = false;
  // A prune that came due while one still ran: made when that one ends, not dropped.
  let waiting: string | undefined;
  const run = (forgetBefore: string) => {
    running = true;
    pool
      .query(
        `DELETE FROM deliveries WHERE key IN
           (SELECT key FROM deliveries WHERE seen_at < $1 ORDER BY seen_at LIMIT $2)`,
        [forgetBefore, PRUNE_BATCH],
      )
      .catch(() => undefined)
      .finally(() => {
        running = false;
        const next = waiting;
        waiting = undefined;
        if (next !== undefined) run(next);
      });
  };
  return {
    due(now: Date, forgetBefore: string) {
      if (now.getTime() - lastMs < PRUNE_EVERY_MS) return;
      lastMs = now.getTime();
      if (running) waiting = forgetBefore;
      else run(forgetBefore);
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
