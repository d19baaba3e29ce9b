import type Database from "better-sqlite3";
import { z } from "zod";
import { guardWrite } from "./sqlite-checks.js";
import type { EffectRecord, Store } from "./store.js";

/**
 * The effects journal: one row per outside effect (subject and step), written as an intent before
 * the call and completed with its result after, so a restart knows what may have happened.
 */

/** Built once: a schema built inside a transform would be built again for every row read. */
const ObjectSchema = z.record(z.string(), z.unknown());
const JsonObjectSchema = z.string().transform((text) => ObjectSchema.parse(JSON.parse(text)));

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

export type SqliteEffects = Pick<
  Store,
  "effect" | "intend" | "complete" | "watchedEffects" | "pendingEffects"
>;

export function createSqliteEffects(db: Database.Database, clock: () => Date): SqliteEffects {
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
  const selectWatched = db.prepare(
    `SELECT * FROM effects WHERE step = ? AND state = 'done'
       AND json_extract(result, '$.watchUntil') > ? ORDER BY intended_at, rowid`,
  );

  return {
    effect(subject, step) {
      const row = selectEffect.get(subject, step);
      return row === undefined ? undefined : toEffect(row);
    },

    intend(subject, step, detail = {}) {
      guardWrite(`record the intent ${step} of ${subject}`, () =>
        insertIntent.run(subject, step, JSON.stringify(detail), clock().toISOString()),
      );
      return toEffect(selectEffect.get(subject, step));
    },

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
  };
}
