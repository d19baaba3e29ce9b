import type { webApi } from "@slack/bolt";
import type { Clock } from "../clock.js";
import { createEffects, type EffectsOptions } from "../effects.js";
import { fencedSlackClient } from "../slack/fenced-client.js";
import type { Logger } from "../logger.js";
import { createLeader, FencedError, type Leader, type Schedule } from "../store/postgres/leader.js";
import { fencedPostgresStore, type PostgresStore } from "../store/postgres/store.js";
import { parsePostgresUrl } from "../store/postgres/url.js";
import {
  createWakeListener,
  createWakeNotifier,
  wakeThroughDatabase,
  type WakeListener,
} from "../store/postgres/wake.js";
import type { InventoryCheck } from "../tracker/inventory-check.js";
import type { Tracker } from "../tracker/tracker.js";
import { postgresHealth, sqliteHealth, type DatabaseHealth } from "./health.js";

/**
 * The work that must run once however many replicas share the store: following pipelines (the
 * tracker's passes, which also expire plans, remind of and end VM leases and recover what a
 * replica left half done), comparing the VMs with GitLab's Terraform states, and the unlocks a
 * crash interrupted. With SQLite the one process always does it; with PostgreSQL the replica
 * that leads (leader.ts) does, from when it takes the lead to when it loses or gives it up.
 */
export interface LedWork {
  tracker: Pick<Tracker, "start" | "stop" | "wake">;
  inventory: Pick<InventoryCheck, "start" | "stop">;
  /** Resumes the unlocks a crash interrupted. */
  resumeUnlocks(): Promise<void>;
}

export interface Leadership {
  /** The database's part of `/healthz`, with which replica leads where several share it. */
  database: DatabaseHealth;
  /** The HTTP server's wake for a GitLab hook: this replica's tracker, or the leader's. */
  wake: (pipelineId: number | undefined) => void;
  /** Starts the led work (SQLite), or starts taking part in leading (PostgreSQL). */
  start(): Promise<void>;
  /** Stops the led work; with PostgreSQL stops listening and gives the lead up. */
  stop(): Promise<void>;
}

/** Starts and stops the led work, one change at a time, in the order they were asked. */
function ledWork(work: LedWork, log: Logger) {
  let running = false;
  let resumed: Promise<void> = Promise.resolve();
  let changing: Promise<void> = Promise.resolve();
  const begin = () => {
    if (running) return;
    running = true;
    work.tracker.start();
    work.inventory.start();
    resumed = work.resumeUnlocks().catch((error: unknown) => {
      if (error instanceof FencedError) {
        log.info({ err: error }, "another replica leads: the interrupted unlocks are left to it");
        return;
      }
      log.warn({ err: error }, "could not resume interrupted unlocks");
    });
  };
  const end = async () => {
    if (!running) return;
    running = false;
    await work.tracker.stop();
    await work.inventory.stop();
    await resumed;
  };
  const then = (step: () => void | Promise<void>) => {
    changing = changing.then(step).catch((error: unknown) => {
      log.warn({ err: error }, "could not start or stop the leader's work");
    });
    return changing;
  };
  /**
   * Starts the led work; when it runs already (a lease of another epoch, taken after this
   * replica's lapsed unseen: it was paused, say), starts it again, so that it reads afresh what
   * another leader may have changed meanwhile.
   */
  const lead = async () => {
    await end();
    begin();
  };
  return { begin: () => then(lead), end: () => then(end) };
}

/**
 * The leader's fence for the led work's store, which is built before the leader: writes before
 * the leader is there are refused as a follower's would be.
 */
export function deferredFence(): Pick<Leader, "fenced" | "confirm" | "stillHolds"> & {
  lead(leader: Leader): void;
} {
  let current: Leader | undefined;
  return {
    lead(leader) {
      current = leader;
    },
    fenced(what, write) {
      return current === undefined
        ? Promise.reject(new FencedError(what, undefined))
        : current.fenced(what, write);
    },
    confirm(what) {
      return current === undefined
        ? Promise.reject(new FencedError(what, undefined))
        : current.confirm(what);
    },
    stillHolds(what) {
      if (current === undefined) throw new FencedError(what, undefined);
      current.stillHolds(what);
    },
  };
}

/**
 * PostgreSQL: what the led work writes through, each write refused once this replica's epoch has
 * passed (or before it leads): its store, its effects journal and its Slack client, and the fence
 * they share, which the leader takes when it is made.
 */
export function fencedLedWork(
  shared: PostgresStore,
  clock: Clock,
  crashPoint: Pick<EffectsOptions, "onCrashPoint">,
) {
  const fence = deferredFence();
  const store = fencedPostgresStore(shared, fence, clock);
  const effects = createEffects({
    store,
    claim: store.claim,
    release: store.release,
    renew: store.renew,
    ...crashPoint,
  });
  const ledClient = (token: string, options: (base: typeof fetch) => webApi.WebClientOptions) =>
    fencedSlackClient(token, options, fence);
  return { fence, app: { ledStore: store, ledEffects: effects, ledClient } };
}

/** One process on SQLite: it always leads. */
export function sqliteLeadership(
  store: Parameters<typeof sqliteHealth>[0],
  work: LedWork,
  log: Logger,
): Leadership {
  const led = ledWork(work, log);
  return {
    database: sqliteHealth(store),
    wake: (pipelineId) => {
      work.tracker.wake(pipelineId);
    },
    start: () => led.begin(),
    stop: () => led.end(),
  };
}

/**
 * A replica sharing PostgreSQL: it takes part in leading (a lease row, `LEADER_TTL`), runs the
 * led work while it leads, passes a GitLab hook to whichever replica leads through the
 * database's channel, and listens on it for the hooks others took.
 */
export function postgresLeadership(
  store: PostgresStore,
  options: {
    url: string;
    ttlMs: number;
    clock: Clock;
    /** The led work's store's fence, to be the leader's. */
    fence?: ReturnType<typeof deferredFence>;
    schedule?: Schedule;
  },
  work: LedWork,
  log: Logger,
): Leadership & { leader: Leader } {
  const leaderLog = log.child({ component: "leader" });
  const led = ledWork(work, log);
  const leader = createLeader({
    pool: store.pool,
    replica: store.replica,
    clock: options.clock,
    ttlMs: options.ttlMs,
    ...(options.schedule === undefined ? {} : { schedule: options.schedule }),
    onChange: (leading, epoch) => {
      if (leading) {
        leaderLog.info({ epoch }, "this replica leads: following pipelines");
        void led.begin();
      } else {
        leaderLog.info("this replica no longer leads");
        void led.end();
      }
    },
    onError: (error) => {
      leaderLog.warn({ err: error }, "could not renew or take the lead; trying again");
    },
  });
  options.fence?.lead(leader);
  const listener: WakeListener = createWakeListener({
    target: parsePostgresUrl(options.url),
    replica: store.replica,
    leads: () => leader.isLeader(),
    onWake: (pipelineId) => {
      work.tracker.wake(pipelineId);
    },
    onError: (error) => {
      leaderLog.warn({ err: error }, "the connection listening for GitLab's hooks was lost");
    },
  });
  return {
    leader,
    database: postgresHealth(store, leader),
    wake: wakeThroughDatabase(createWakeNotifier(store.pool), leaderLog),
    async start() {
      await listener.start();
      leader.start();
    },
    async stop() {
      await listener.stop();
      await leader.stop();
      await led.end();
    },
  };
}
