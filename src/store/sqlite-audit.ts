import type Database from "better-sqlite3";
import { z } from "zod";
import { guardWrite } from "./sqlite-checks.js";
import type { AuditEntry, AuditRecord, Store } from "./store.js";

/**
 * What people did (the audit log, kept for good) and which Slack deliveries were already acted
 * on (kept as long as Slack may retry them).
 */

const DetailSchema = z.record(z.string(), z.unknown());

const AuditRowSchema = z.object({
  id: z.number().int(),
  request_id: z.string().nullable(),
  actor: z.string(),
  action: z.string(),
  detail: z.string().transform((text) => DetailSchema.parse(JSON.parse(text))),
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

export type SqliteAudit = Pick<Store, "audit" | "listAudit" | "firstDelivery">;

export function createSqliteAudit(db: Database.Database, clock: () => Date): SqliteAudit {
  const insertAudit = db.prepare(
    "INSERT INTO audit_log (request_id, actor, action, detail, at) VALUES (?, ?, ?, ?, ?)",
  );
  const insertDelivery = db.prepare(
    "INSERT INTO deliveries (key, seen_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
  );
  const forgetDeliveries = db.prepare("DELETE FROM deliveries WHERE seen_at < ?");

  return {
    audit(entry: AuditEntry) {
      guardWrite(`audit ${entry.action}`, () =>
        insertAudit.run(
          entry.requestId,
          entry.actor,
          entry.action,
          JSON.stringify(entry.detail ?? {}),
          clock().toISOString(),
        ),
      );
    },

    listAudit(requestId) {
      const rows =
        requestId === undefined
          ? db.prepare("SELECT * FROM audit_log ORDER BY id").all()
          : db.prepare("SELECT * FROM audit_log WHERE request_id = ? ORDER BY id").all(requestId);
      return rows.map(toAudit);
    },

    firstDelivery(key, keepMs) {
      const now = clock();
      return guardWrite(`record the delivery ${key}`, () =>
        db.transaction(() => {
          forgetDeliveries.run(new Date(now.getTime() - keepMs).toISOString());
          return insertDelivery.run(key, now.toISOString()).changes === 1;
        })(),
      );
    },
  };
}
