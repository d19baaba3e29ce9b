import type Database from "better-sqlite3";
import { z } from "zod";
import { guardWrite } from "./sqlite-checks.js";

/**
 * Approvals given on a plan: one row per approver and plan job, so an approval counts only for
 * the plan it was given on (a re-run plan is a new plan job, with none yet).
 */

export interface ApprovalRecord {
  requestId: string;
  planJobId: number;
  user: string;
  /** The policy groups the approver was in when they approved. */
  groups: string[];
  at: string;
}

export interface Approvals {
  /** Records an approval; the same person on the same plan again changes nothing (false). */
  add(approval: ApprovalRecord): boolean;
  /** The approvals of one plan job, oldest first. */
  list(requestId: string, planJobId: number): ApprovalRecord[];
  /** Whether approvals were given on an earlier plan job of the request. */
  earlier(requestId: string, planJobId: number): boolean;
  /** Removes approvals (lapsed ones). */
  remove(requestId: string, planJobId: number, users: readonly string[]): void;
}

export const APPROVALS_MIGRATION = `
  CREATE TABLE approvals (
    request_id  TEXT NOT NULL,
    plan_job_id INTEGER NOT NULL,
    user_id     TEXT NOT NULL,
    groups      TEXT NOT NULL DEFAULT '[]',
    at          TEXT NOT NULL,
    PRIMARY KEY (request_id, plan_job_id, user_id)
  );
  `;

const RowSchema = z.object({
  request_id: z.string(),
  plan_job_id: z.number().int(),
  user_id: z.string(),
  groups: z.string(),
  at: z.string(),
});

export function createSqliteApprovals(db: Database.Database): Approvals {
  const insert = db.prepare(
    "INSERT OR IGNORE INTO approvals (request_id, plan_job_id, user_id, groups, at) VALUES (?, ?, ?, ?, ?)",
  );
  const select = db.prepare(
    "SELECT * FROM approvals WHERE request_id = ? AND plan_job_id = ? ORDER BY at, user_id",
  );
  const selectEarlier = db.prepare(
    "SELECT 1 FROM approvals WHERE request_id = ? AND plan_job_id <> ? LIMIT 1",
  );
  const del = db.prepare(
    "DELETE FROM approvals WHERE request_id = ? AND plan_job_id = ? AND user_id = ?",
  );
  return {
    add: (a) =>
      guardWrite(`record the approval of ${a.requestId} by ${a.user}`, () =>
        insert.run(a.requestId, a.planJobId, a.user, JSON.stringify(a.groups), a.at),
      ).changes === 1,
    list: (requestId, planJobId) =>
      select.all(requestId, planJobId).map((raw) => {
        const row = RowSchema.parse(raw);
        return {
          requestId: row.request_id,
          planJobId: row.plan_job_id,
          user: row.user_id,
          groups: z.array(z.string()).parse(JSON.parse(row.groups)),
          at: row.at,
        };
      }),
    earlier: (requestId, planJobId) => selectEarlier.get(requestId, planJobId) !== undefined,
    remove(requestId, planJobId, users) {
      guardWrite(`remove lapsed approvals of ${requestId}`, () => {
        db.transaction(() => {
          for (const user of users) del.run(requestId, planJobId, user);
        })();
      });
    },
  };
}
