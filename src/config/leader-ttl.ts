import { z } from "zod";
import { blankToUndefined } from "./fields.js";

/**
 * `LEADER_TTL`: how long the replica leading (with PostgreSQL, src/store/postgres/leader.ts)
 * keeps the lead without renewing it, so how long a dead leader's work waits before another
 * replica takes it over. The leader renews every third of it.
 */

/** Below this a slow renewal (a busy database, a garbage collection) loses the lead. */
export const MIN_LEADER_TTL_MS = 3_000;
/** Above this a replica that died leaves GitLab unwatched for longer than anyone waits. */
export const MAX_LEADER_TTL_MS = 300_000;

/** The lease leader.ts takes unless told (DEFAULT_LEADER_TTL_MS), written as an operator would. */
export const DEFAULT_LEADER_TTL = "15s";

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000 };

/** Milliseconds for `15s`, `1m`, `2500ms`; undefined for anything else. */
export function parseLeaderTtl(text: string): number | undefined {
  const match = /^(\d{1,7})(ms|s|m)$/.exec(text.trim().toLowerCase());
  if (match === null) return undefined;
  return Number(match[1]) * (UNITS[match[2] ?? ""] ?? Number.NaN);
}

export const LEADER_ENV = {
  LEADER_TTL: z.preprocess(
    blankToUndefined,
    z
      .string()
      .default(DEFAULT_LEADER_TTL)
      .transform((value, ctx) => {
        const ms = parseLeaderTtl(value);
        if (ms === undefined || ms < MIN_LEADER_TTL_MS || ms > MAX_LEADER_TTL_MS) {
          ctx.addIssue({
            code: "custom",
            message: `must be a duration from ${MIN_LEADER_TTL_MS / 1_000}s to ${MAX_LEADER_TTL_MS / 60_000}m, like 15s or 1m (how long another replica waits before taking over from a leader that stopped)`,
          });
          return z.NEVER;
        }
        return ms;
      }),
  ),
};
