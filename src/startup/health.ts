import type { Health } from "../server.js";
import type { Leader } from "../store/postgres/leader.js";
import type { Writable } from "../store/store.js";

/**
 * The database's part of `/healthz`: which engine holds the store, whether it takes a write now,
 * and, where replicas share it, whether this one leads. Start-up hands one of these to the HTTP
 * server (serve.ts) for whichever store it opened.
 */
export interface DatabaseHealth {
  engine: "sqlite" | "postgres";
  /** Whether the database takes a write now; why not when it does not. */
  reachable(): Writable | Promise<Writable>;
  /** Set where several replicas share the database and one of them leads. */
  leadership?: { replica: string; leads(): boolean };
}

/** How long `/healthz` waits for the database before saying it did not answer. */
export const DATABASE_CHECK_MS = 2_000;

/** The embedded store: one process, no leadership. */
export function sqliteHealth(store: { writable(): Writable | Promise<Writable> }): DatabaseHealth {
  return { engine: "sqlite", reachable: () => store.writable() };
}

/** A PostgreSQL store several replicas share; `leader` once this replica takes part in leading. */
export function postgresHealth(
  store: { replica: string; writable(): Promise<Writable> },
  leader?: Pick<Leader, "isLeader">,
): DatabaseHealth {
  return {
    engine: "postgres",
    reachable: () => store.writable(),
    ...(leader === undefined
      ? {}
      : { leadership: { replica: store.replica, leads: () => leader.isLeader() } }),
  };
}

/** `check`, or its answer that it did not answer within `ms`. */
async function within(check: () => Writable | Promise<Writable>, ms: number): Promise<Writable> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Writable>((resolve) => {
    timer = setTimeout(() => {
      resolve({ ok: false, reason: `the database did not answer within ${ms / 1_000} s` });
    }, ms);
  });
  try {
    return await Promise.race([
      Promise.resolve()
        .then(check)
        .catch((error: unknown) => ({
          ok: false as const,
          reason: `the database cannot be reached: ${(error as Error).message}`,
        })),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `health` with the database's part added: a database that does not take a write makes the
 * answer 503 with its reason (unless something else already did); a replica that follows is as
 * healthy as the one that leads. Checks asked for at once share one look at the database.
 */
export function withDatabase(
  health: () => Health | Promise<Health>,
  database: DatabaseHealth,
  timeoutMs = DATABASE_CHECK_MS,
): () => Promise<Health> {
  let checking: Promise<Writable> | undefined;
  return async () => {
    checking ??= within(() => database.reachable(), timeoutMs).finally(() => {
      checking = undefined;
    });
    const reachable = await checking;
    const base = await health();
    const leadership =
      database.leadership === undefined
        ? {}
        : {
            leadership: {
              replica: database.leadership.replica,
              leader: database.leadership.leads(),
            },
          };
    const answer: Health = {
      ...base,
      database: { engine: database.engine, reachable: reachable.ok },
      ...leadership,
    };
    if (base.ok && !reachable.ok) return { ...answer, ok: false, reason: reachable.reason };
    return answer;
  };
}
