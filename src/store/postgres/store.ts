import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type pg from "pg";
import type { AsyncStore } from "../async.js";
import { createPostgresAudit, createPostgresProbe, writeHeartbeat } from "./audit.js";
import { createPostgresHomes } from "./homes.js";
import { fencedRunner } from "./fenced.js";
import type { Leader } from "./leader.js";
import { createPostgresEffects, type PostgresEffects } from "./effects.js";
import { createPostgresApprovals, createPostgresInventory } from "./inventory.js";
import {
  createPostgresDestroyRequest,
  createPostgresTransitionOnLiveVm,
  createPostgresVmRequest,
} from "./guarded.js";
import { migratePostgres } from "./migrations.js";
import { createPool, poolRunner, postgresProblem, type Runner } from "./pool.js";
import { retireReplica } from "./replicas.js";
import { createPostgresRequests } from "./requests.js";
import { parsePostgresUrl } from "./url.js";

export interface PostgresStoreOptions {
  clock?: () => Date;
  /** This replica's name, in claims, migrations and pg_stat_activity; host and a random part unless said. */
  replica?: string;
}

/** The store several replicas share: the async store, plus what only a shared store needs. */
export type PostgresStore = AsyncStore &
  Pick<PostgresEffects, "claim" | "release" | "renew"> & {
    /** This replica's name. */
    readonly replica: string;
    /** The replica's connections, for the tracker's leadership (leader.ts). */
    readonly pool: pg.Pool;
  };

/** A replica's name: its host (a pod's name) and a random part, new at every start. */
export function newReplicaName(): string {
  return `${hostname()}-${randomBytes(3).toString("hex")}`;
}

/**
 * Connects to the PostgreSQL database at `url` (see url.ts), applies the migrations it lacks
 * (one replica does, the others wait for it) and checks that it takes a write. Throws an error
 * that says why it cannot, never quoting the password.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<PostgresStore> {
  const clock = options.clock ?? (() => new Date());
  const replica = options.replica ?? newReplicaName();
  const target = parsePostgresUrl(url);
  const pool = createPool(target, { applicationName: `vmbot ${replica}` });
  let open = true;
  const probe = createPostgresProbe(pool, clock, () => open);
  try {
    await migratePostgres(pool, replica, clock);
    // The first write itself, so that its refusal is named as PostgreSQL gave it.
    await writeHeartbeat(pool, clock());
  } catch (error) {
    open = false;
    await pool.end();
    throw new Error(`the database ${target.shown} cannot be used: ${postgresProblem(error)}`, {
      cause: error,
    });
  }

  return {
    replica,
    pool,
    ...postgresParts(poolRunner(pool), clock, replica),
    writable: probe,
    isOpen: () => Promise.resolve(open),
    async close() {
      if (!open) return;
      open = false;
      // Its work finished: what this replica still claims is another's to take over at once.
      await retireReplica(pool, replica).catch(() => undefined);
      await pool.end();
    },
  };
}

/** The store's statements, run where `runner` says: on the pool, or fenced by the leader. */
function postgresParts(runner: Runner, clock: () => Date, replica: string) {
  const effects = createPostgresEffects(runner, clock, replica);
  const log = createPostgresAudit(runner, clock);
  const journal = { intend: effects.intendWith, audit: log.auditWith };
  const requests = createPostgresRequests(runner, clock, journal);
  return {
    inventory: createPostgresInventory(runner, clock),
    approvals: createPostgresApprovals(runner),
    homes: createPostgresHomes(runner, clock),
    ...requests,
    createVmRequest: createPostgresVmRequest(runner, clock, journal),
    createDestroyRequest: createPostgresDestroyRequest(runner, clock, journal),
    transitionOnLiveVm: createPostgresTransitionOnLiveVm(runner, clock, journal),
    effect: effects.effect,
    intend: effects.intend,
    complete: effects.complete,
    claim: effects.claim,
    release: effects.release,
    renew: effects.renew,
    watchedEffects: effects.watchedEffects,
    pendingEffects: effects.pendingEffects,
    audit: log.audit,
    listAudit: log.listAudit,
    firstDelivery: log.firstDelivery,
  };
}

/**
 * The store as the led work uses it (leadership.ts): the same store, but every write is checked
 * against the leader's epoch in its own transaction and refused (FencedError) once another
 * replica leads, so a leader paused past its lease writes nothing when it resumes.
 */
export function fencedPostgresStore(
  store: PostgresStore,
  leader: Pick<Leader, "fenced">,
  clock: () => Date,
): PostgresStore {
  const parts = postgresParts(fencedRunner(store.pool, leader), clock, ledClaimant(store.replica));
  return { ...store, ...parts };
}

/**
 * The name the led work claims effects under: the replica's, marked as its leader's. The same
 * replica's listeners (an approval click) claim under the plain name, so that a tracker pass and
 * a click on one replica reaching one effect are two claimants, and only one of them acts.
 */
export const ledClaimant = (replica: string) => `${replica}/led`;
