import type { Queryable } from "./pool.js";

/**
 * Which replicas sharing the database are alive. Each renews its row at every attempt at the
 * lead (leader.ts), to as far ahead as a lease lasts, and marks itself gone when it closes its
 * store, its in-flight work finished. A claim on an effect held by a replica whose liveness has
 * passed is taken over at once (effects.ts), not only when the claim itself lapses: a replica
 * that died holds nothing up for longer than a lease. Times are milliseconds by the replicas'
 * clocks, as the lease's are.
 */

/** Renews this replica's liveness until `until`. */
export async function renewLiveness(db: Queryable, replica: string, until: number): Promise<void> {
  await db.query(
    `INSERT INTO replicas (name, alive_until) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET alive_until = excluded.alive_until`,
    [replica, until],
  );
}

/**
 * Says this replica is gone: what it still claims is taken over at once. A replica that never
 * tried to lead (a store opened to read or seed it) says so too, its row made for the purpose.
 */
export async function retireReplica(db: Queryable, replica: string): Promise<void> {
  await db.query(
    `INSERT INTO replicas (name, alive_until) VALUES ($1, 0)
     ON CONFLICT (name) DO UPDATE SET alive_until = 0`,
    [replica],
  );
}

/**
 * A condition on a claim's holder (`<replica>`, or `<replica>/<part>`): it names a replica whose
 * liveness has passed at `now`. A holder with no row (a replica that never tried to lead) is
 * taken as alive: its claim lapses on its own time.
 */
export function holderGone(claimedBy: string, now: string): string {
  return `EXISTS (SELECT 1 FROM replicas
    WHERE replicas.name = split_part(${claimedBy}, '/', 1) AND replicas.alive_until <= ${now})`;
}
