import pg from "pg";
import { z } from "zod";
import type { Logger } from "../../logger.js";
import type { Schedule } from "./leader.js";
import type { Queryable } from "./pool.js";
import type { PostgresTarget } from "./url.js";

/**
 * A GitLab hook reaches whichever replica the load balancer picks, but only the leader follows
 * pipelines (leader.ts). The replica that took the hook says so on a PostgreSQL channel
 * (`NOTIFY`); every replica listens on a connection of its own (`LISTEN`), and the one that leads
 * looks at GitLab at once instead of at its next poll.
 *
 * A payload is seen by every session of the database, whoever it logs in as: it holds a
 * pipeline's number and nothing else. A wake is only a hint (polling finds the same change a
 * little later), so one lost or delivered twice costs nothing but time.
 */

/** The channel, in the database vmbot's tables are in. */
export const WAKE_CHANNEL = "vmbot_wake";

const WakePayloadSchema = z.object({ pipelineId: z.number().int().positive().optional() });

/** The payload for a wake about `pipelineId` (none when it is not a pipeline's number). */
export function wakePayload(pipelineId?: number): string {
  const parsed = WakePayloadSchema.safeParse({ pipelineId });
  return JSON.stringify(parsed.success ? parsed.data : {});
}

/** The pipeline a payload names; undefined for none, or for a payload vmbot did not write. */
export function pipelineOfPayload(payload: string | undefined): number | undefined {
  try {
    const parsed = WakePayloadSchema.safeParse(JSON.parse(payload ?? "{}"));
    return parsed.success ? parsed.data.pipelineId : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Tells every replica listening that a hook arrived (about `pipelineId`, when it names one).
 * Rejects when the database cannot be reached: the caller logs it, and the leader's next poll
 * finds the change.
 */
export function createWakeNotifier(db: Queryable): (pipelineId?: number) => Promise<void> {
  return async (pipelineId) => {
    await db.query("SELECT pg_notify($1, $2)", [WAKE_CHANNEL, wakePayload(pipelineId)]);
  };
}

/**
 * The HTTP server's wake (serve.ts) for a replica sharing PostgreSQL: tells whichever replica
 * leads, this one included, through the channel. A wake that cannot be sent is logged and
 * otherwise let go: the leader's next poll finds the change.
 */
export function wakeThroughDatabase(
  notify: (pipelineId?: number) => Promise<void>,
  log: Pick<Logger, "warn">,
): (pipelineId: number | undefined) => void {
  return (pipelineId) => {
    notify(pipelineId).catch((error: unknown) => {
      log.warn(
        { err: error, pipelineId },
        "could not pass a GitLab hook on to the leading replica; its next poll will see the change",
      );
    });
  };
}

export interface WakeListenerOptions {
  /** The database's connection string, as the store's pool has it (url.ts). */
  target: Pick<PostgresTarget, "connectionString">;
  /** This replica's name: the listening connection shows as `vmbot <replica> wake`. */
  replica: string;
  /** Whether this replica leads now; a wake reaching one that does not is left alone. */
  leads: () => boolean;
  /**
   * A hook arrived somewhere (about `pipelineId` when it named one), or the connection came back
   * after it was lost and a wake may have been missed meanwhile (undefined).
   */
  onWake: (pipelineId: number | undefined) => void;
  /** The listening connection was lost or could not be made; it is tried again. */
  onError?: (error: unknown) => void;
  /** How long a new connection may take. */
  connectTimeoutMs?: number;
  /** The longest wait between two attempts to connect again (they start at 100 ms). */
  maxRetryMs?: number;
  schedule?: Schedule;
}

export interface WakeListener {
  /** Connects and listens; resolves once listening, or after the first attempt failed (it is tried again). */
  start(): Promise<void>;
  /** Whether the connection is up and listening now. */
  listening(): boolean;
  /** Stops listening and closes the connection; it is not made again. */
  stop(): Promise<void>;
}

const timers: Schedule = (run, ms) => {
  const timer = setTimeout(run, ms);
  timer.unref();
  return () => {
    clearTimeout(timer);
  };
};

/** A new connection, listening on the channel, that tells `on` of each wake and of its end. */
async function listeningClient(
  options: Pick<WakeListenerOptions, "target" | "replica" | "connectTimeoutMs">,
  on: {
    wake: (pipelineId: number | undefined) => void;
    lost: (client: pg.Client, error?: Error) => void;
  },
): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: options.target.connectionString,
    application_name: `vmbot ${options.replica} wake`,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    // A peer gone without a word (a node lost) is noticed by TCP, not left listening forever.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  client.on("notification", (message) => {
    if (message.channel === WAKE_CHANNEL) on.wake(pipelineOfPayload(message.payload));
  });
  // Ended before it was listening: this attempt fails (and is tried again).
  let gone: Error | undefined;
  client.on("error", (error) => {
    gone = error;
    on.lost(client, error);
  });
  client.on("end", () => {
    gone ??= new Error("the listening connection was closed");
    on.lost(client);
  });
  try {
    await client.connect();
    await client.query(`LISTEN ${WAKE_CHANNEL}`);
    if (gone !== undefined) throw gone;
  } catch (error) {
    client.end().catch(() => undefined);
    throw error;
  }
  return client;
}

/**
 * Listens for wakes on a connection of its own (a pooled connection cannot stay in LISTEN), made
 * again after the server ends it or the network drops it. A wake sent while it was down is not
 * delivered by PostgreSQL, so each reconnection counts as one wake.
 */
export function createWakeListener(options: WakeListenerOptions): WakeListener {
  const schedule = options.schedule ?? timers;
  const maxRetryMs = options.maxRetryMs ?? 5_000;
  let current: pg.Client | undefined;
  let stopped = false;
  let failures = 0;
  let everListened = false;
  let cancelRetry: (() => void) | undefined;
  let connecting: Promise<void> | undefined;

  const wake = (pipelineId: number | undefined) => {
    if (options.leads()) options.onWake(pipelineId);
  };

  const retry = () => {
    if (stopped || cancelRetry !== undefined) return;
    const wait = Math.min(maxRetryMs, 100 * 2 ** failures);
    failures += 1;
    cancelRetry = schedule(() => {
      cancelRetry = undefined;
      void connect();
    }, wait);
  };

  const lost = (client: pg.Client, error?: unknown) => {
    if (current !== client) return;
    current = undefined;
    options.onError?.(error ?? new Error("the listening connection was closed"));
    client.end().catch(() => undefined);
    retry();
  };

  async function open(): Promise<void> {
    const client = await listeningClient(options, {
      wake: (pipelineId) => {
        wake(pipelineId);
      },
      lost: (gone, error) => {
        lost(gone, error);
      },
    });
    if (stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    current = client;
    failures = 0;
    if (everListened) wake(undefined);
    everListened = true;
  }

  const connect = () => {
    connecting ??= open()
      .catch((error: unknown) => {
        options.onError?.(error);
        retry();
      })
      .finally(() => {
        connecting = undefined;
      });
    return connecting;
  };

  return {
    start() {
      stopped = false;
      return current === undefined ? connect() : Promise.resolve();
    },
    listening: () => current !== undefined,
    async stop() {
      stopped = true;
      cancelRetry?.();
      cancelRetry = undefined;
      await connecting;
      const client = current;
      current = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
