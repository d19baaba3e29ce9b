import { z } from "zod";
import type { AsyncStore } from "../async.js";
import type { EffectRecord } from "../store.js";
import { guardWrite, type Queryable, type Runner } from "./pool.js";
import { holderGone } from "./replicas.js";

/**
 * The effects journal on PostgreSQL, shared by every replica. Beside the store's own intent and
 * result, an intent is claimed: the replica that recorded it (or took it over after its claim
 * lapsed, its replica gone) is the one that acts, so two replicas never both perform one effect.
 */

const JsonObject = z.record(z.string(), z.unknown());

const EffectRowSchema = z.object({
  subject: z.string(),
  step: z.string(),
  state: z.enum(["intended", "done"]),
  intent: JsonObject,
  result: JsonObject.nullable(),
  intended_at: z.string(),
  done_at: z.string().nullable(),
  claimed_by: z.string().nullable(),
  claimed_until: z.string().nullable(),
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

/** An intent as a replica claimed it, or found it claimed (or done) by another. */
export interface EffectClaim {
  /** True when this replica holds the claim now and is the one to act. */
  claimed: boolean;
  effect: EffectRecord;
  /** The replica holding the claim, when the effect is not done. */
  holder: string | null;
  /**
   * Whether an intent stood before this claim (left by a crash, or by a replica whose claim
   * lapsed): the effect may have happened. False only when this claim recorded the intent.
   */
  existed: boolean;
}

export interface PostgresEffects extends Pick<
  AsyncStore,
  "effect" | "intend" | "complete" | "watchedEffects" | "pendingEffects"
> {
  /**
   * Claims the effect for this replica for `holdMs`: recording its intent when there is none,
   * or taking over an intent whose claim lapsed (its replica stopped before the result). Of
   * replicas claiming at once exactly one gets it; a done effect is never claimed.
   */
  claim: (
    subject: string,
    step: string,
    holdMs: number,
    detail?: Record<string, unknown>,
  ) => Promise<EffectClaim>;
  /**
   * Gives up this replica's claim on an intent it failed to carry out, so that another replica
   * (waiting for it, or coming later) takes it over at once rather than when the claim lapses.
   */
  release: (subject: string, step: string) => Promise<void>;
  /**
   * Holds this replica's claim for `holdMs` more, from now: false when the claim is no longer
   * its own (it lapsed and another replica took the effect over, or the effect is done).
   */
  renew: (subject: string, step: string, holdMs: number) => Promise<boolean>;
  /** The intent written in a move's transaction, on its connection, claimed by this replica. */
  intendWith: (
    db: Queryable,
    subject: string,
    step: string,
    detail?: Record<string, unknown>,
  ) => Promise<unknown>;
}

/** How long an intent recorded without an explicit claim is held by the replica that wrote it. */
const DEFAULT_HOLD_MS = 5 * 60_000;

export function createPostgresEffects(
  pool: Runner,
  clock: () => Date,
  replica: string,
): PostgresEffects {
  const select = async (subject: string, step: string) => {
    const { rows } = await pool.query("SELECT * FROM effects WHERE subject = $1 AND step = $2", [
      subject,
      step,
    ]);
    return rows[0] === undefined ? undefined : toEffect(rows[0]);
  };
  const insertIntent = (
    db: Queryable,
    subject: string,
    step: string,
    detail: Record<string, unknown>,
    holdMs: number,
  ) => {
    const now = clock();
    return db.query(
      `INSERT INTO effects (subject, step, state, intent, intended_at, claimed_by, claimed_until)
       VALUES ($1, $2, 'intended', $3::jsonb, $4, $5, $6)
       ON CONFLICT (subject, step) DO NOTHING`,
      [
        subject,
        step,
        JSON.stringify(detail),
        now.toISOString(),
        replica,
        new Date(now.getTime() + holdMs).toISOString(),
      ],
    );
  };

  return {
    effect: select,

    async intend(subject, step, detail = {}) {
      await guardWrite(`record the intent ${step} of ${subject}`, () =>
        insertIntent(pool, subject, step, detail, DEFAULT_HOLD_MS),
      );
      const effect = await select(subject, step);
      if (effect === undefined) throw new Error(`the intent ${step} of ${subject} vanished`);
      return effect;
    },

    intendWith: (db, subject, step, detail = {}) =>
      insertIntent(db, subject, step, detail, DEFAULT_HOLD_MS),

    claim: claimEffect(pool, clock, replica),

    release: releaseClaim(pool, replica),
    renew: renewClaim(pool, clock, replica),

    async complete(subject, step, result) {
      const now = clock().toISOString();
      const { rows } = await guardWrite(`record the result of ${step} of ${subject}`, () =>
        pool.query(
          `INSERT INTO effects (subject, step, state, result, intended_at, done_at)
           VALUES ($1, $2, 'done', $3::jsonb, $4, $4)
           ON CONFLICT (subject, step) DO UPDATE
             SET state = 'done', result = excluded.result, done_at = excluded.done_at,
                 claimed_by = NULL, claimed_until = NULL
           RETURNING *`,
          [subject, step, JSON.stringify(result), now],
        ),
      );
      return toEffect(rows[0]);
    },

    async watchedEffects(step, now) {
      const { rows } = await pool.query(
        `SELECT * FROM effects WHERE step = $1 AND state = 'done'
           AND result ->> 'watchUntil' > $2 COLLATE "C" ORDER BY intended_at, seq`,
        [step, now],
      );
      return rows.map(toEffect);
    },

    async pendingEffects() {
      const { rows } = await pool.query(
        "SELECT * FROM effects WHERE state = 'intended' ORDER BY intended_at, seq",
      );
      return rows.map(toEffect);
    },
  };
}

/**
 * Claims an effect in one statement: inserts the intent, or takes over an intent whose claim
 * has lapsed (or is this replica's already). A done effect, or one another replica holds, is
 * left as it is.
 */
function claimEffect(pool: Runner, clock: () => Date, replica: string): PostgresEffects["claim"] {
  return async (subject, step, holdMs, detail = {}) => {
    const now = clock();
    const until = new Date(now.getTime() + holdMs).toISOString();
    // One statement: insert the intent, or take over an intent whose claim has lapsed, whose
    // replica is gone (replicas.ts), or that is ours already. A done effect, or one another
    // live replica holds, is left as it is.
    const { rows } = await guardWrite(`claim ${step} of ${subject}`, () =>
      pool.query(
        `INSERT INTO effects (subject, step, state, intent, intended_at, claimed_by, claimed_until)
         VALUES ($1, $2, 'intended', $3::jsonb, $4, $5, $6)
         ON CONFLICT (subject, step) DO UPDATE
           SET claimed_by = excluded.claimed_by, claimed_until = excluded.claimed_until
           WHERE effects.state = 'intended'
             AND (effects.claimed_by = excluded.claimed_by
                  OR effects.claimed_until IS NULL OR effects.claimed_until <= $4
                  OR ${holderGone("effects.claimed_by", "$7")})
         RETURNING *, (xmax = 0) AS inserted`,
        [subject, step, JSON.stringify(detail), now.toISOString(), replica, until, now.getTime()],
      ),
    );
    // xmax is 0 on a row the INSERT wrote, and set on one the ON CONFLICT branch updated.
    const won = rows[0] as { inserted?: unknown } | undefined;
    if (won !== undefined) {
      return {
        claimed: true,
        effect: toEffect(won),
        holder: replica,
        existed: won.inserted !== true,
      };
    }
    const { rows: current } = await pool.query(
      "SELECT * FROM effects WHERE subject = $1 AND step = $2",
      [subject, step],
    );
    const row = EffectRowSchema.parse(current[0]);
    return {
      claimed: false,
      effect: toEffect(row),
      holder: row.state === "done" ? null : row.claimed_by,
      existed: true,
    };
  };
}

/** Gives up this replica's claim on an intent still not done; a claim another holds is left. */
function releaseClaim(pool: Runner, replica: string): PostgresEffects["release"] {
  return async (subject, step) => {
    await guardWrite(`release the claim on ${step} of ${subject}`, () =>
      pool.query(
        `UPDATE effects SET claimed_by = NULL, claimed_until = NULL
         WHERE subject = $1 AND step = $2 AND state = 'intended' AND claimed_by = $3`,
        [subject, step, replica],
      ),
    );
  };
}

/** Holds this replica's claim on an intent longer; a claim another holds, or a done effect, is left. */
function renewClaim(pool: Runner, clock: () => Date, replica: string): PostgresEffects["renew"] {
  return async (subject, step, holdMs) => {
    const until = new Date(clock().getTime() + holdMs).toISOString();
    const { rowCount } = await guardWrite(`hold the claim on ${step} of ${subject}`, () =>
      pool.query(
        `UPDATE effects SET claimed_until = $4
         WHERE subject = $1 AND step = $2 AND state = 'intended' AND claimed_by = $3`,
        [subject, step, replica, until],
      ),
    );
    return rowCount === 1;
  };
}
