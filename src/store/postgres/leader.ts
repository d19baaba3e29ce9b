import type pg from "pg";
import type { Clock } from "../../clock.js";
import { inTransaction } from "./pool.js";
import { renewLiveness } from "./replicas.js";

/**
 * One leader among the replicas sharing a database, for the work only one may do (following
 * GitLab, lease timers, reminders, reconciliation). The leader holds a lease row for `ttlMs`
 * and renews it every `renewEveryMs`; when it stops renewing (it died, or paused), another
 * takes the lease once it has run out, with the epoch one higher. Every write the leader makes
 * goes through `fenced`, which checks in the write's own transaction that its epoch is still
 * the current one: a leader that paused past its lease and resumed writes nothing.
 *
 * Lease times are the replicas' clocks (kept in step by NTP, as Kubernetes nodes are); a skew
 * between them shortens or lengthens a failover by as much, never lets two leaders write.
 */

/** How long a lease lasts unless said (LEADER_TTL). */
export const DEFAULT_LEADER_TTL_MS = 15_000;

/** A write refused because this replica no longer leads (another took over since). */
export class FencedError extends Error {
  override name = "FencedError";
  constructor(
    readonly what: string,
    readonly epoch: number | undefined,
  ) {
    super(
      epoch === undefined
        ? `refused to ${what}: this replica does not lead`
        : `refused to ${what}: this replica's leadership (epoch ${epoch}) has passed to another`,
    );
  }
}

/** Runs `run` after `ms`; the answer cancels it. */
export type Schedule = (run: () => void, ms: number) => () => void;

const timers: Schedule = (run, ms) => {
  const timer = setTimeout(run, ms);
  timer.unref();
  return () => {
    clearTimeout(timer);
  };
};

export interface LeaderOptions {
  pool: pg.Pool;
  /** This replica's name (PostgresStore.replica). */
  replica: string;
  clock: Clock;
  /** What is led; one leader per name. */
  name?: string;
  ttlMs?: number;
  /** A third of the lease unless said: two renewals may fail before the lease runs out. */
  renewEveryMs?: number;
  schedule?: Schedule;
  /**
   * Milliseconds on a clock that moves with real time and nothing else (`performance.now` unless
   * said): how long ago a lease was taken or renewed, whatever the wall clock does meanwhile.
   */
  elapsed?: () => number;
  /** Told when this replica starts or stops leading. */
  onChange?: (leading: boolean, epoch: number | undefined) => void;
  /** Told when a renewal could not reach the database (the next one tries again). */
  onError?: (error: unknown) => void;
}

export interface Leader {
  /** One attempt: renews the lease this replica holds, or takes one that has run out. */
  step(): Promise<boolean>;
  /** Steps now and every `renewEveryMs` after, until `stop`. */
  start(): void;
  /** Stops stepping and gives the lease up, so another replica takes over at its next step. */
  stop(): Promise<void>;
  /** Whether this replica leads now: it holds a lease its own clock says has not run out. */
  isLeader(): boolean;
  /** The epoch of the lease this replica holds, if it holds one. */
  epoch(): number | undefined;
  /**
   * Runs `write` in one transaction that first checks (and holds, until it commits) that this
   * replica's epoch is still the current one; throws FencedError, writing nothing, when not.
   */
  fenced<T>(what: string, write: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  /**
   * Throws FencedError unless this replica's epoch is still the current one in the database: the
   * check before an effect outside it (a Slack post), which cannot be checked where it lands. As
   * with `fenced`, the lease row decides; and its answer counts only if it is read less than a
   * lease after the lease was last renewed, in real time, since it says who led when it was read.
   */
  confirm(what: string): Promise<void>;
  /**
   * Throws FencedError unless this replica holds a lease taken or renewed less than a lease ago,
   * in real time. Synchronous, asking no one: the last check, right as a request leaves, after
   * `confirm` answered and any wait since (a queue, a retry's backoff, a pause of the process).
   */
  stillHolds(what: string): void;
}

interface Held {
  epoch: number;
  /** When the lease runs out by this replica's clock: from before the write that set it. */
  until: number;
  /** When the write that set it was sent, by `LeaderOptions.elapsed`. */
  since: number;
}

/** A lease as the lease row gives it. */
type Leased = Omit<Held, "since">;

/**
 * The lease row's two writes, renewing the lease held and taking one that has run out, and
 * this replica's liveness (replicas.ts), renewed at each attempt for as long as a lease lasts.
 */
function leaseRow(pool: pg.Pool, name: string, replica: string, ttlMs: number) {
  async function renew(now: number, current: Held): Promise<Leased | undefined> {
    const { rows } = await pool.query<{ epoch: number }>(
      `UPDATE leadership SET expires_at = $3
     WHERE name = $1 AND holder = $2 AND epoch = $4 AND expires_at > $5 RETURNING epoch`,
      [name, replica, now + ttlMs, current.epoch, now],
    );
    return rows[0] === undefined ? undefined : { epoch: current.epoch, until: now + ttlMs };
  }

  async function acquire(now: number): Promise<Leased | undefined> {
    // Only a lease that has run out changes hands, and it does with the next epoch.
    const { rows } = await pool.query<{ epoch: number }>(
      `INSERT INTO leadership (name, holder, epoch, expires_at) VALUES ($1, $2, 1, $3)
     ON CONFLICT (name) DO UPDATE
       SET holder = excluded.holder, epoch = leadership.epoch + 1, expires_at = excluded.expires_at
       WHERE leadership.expires_at <= $4
     RETURNING epoch`,
      [name, replica, now + ttlMs, now],
    );
    return rows[0] === undefined ? undefined : { epoch: rows[0].epoch, until: now + ttlMs };
  }

  /** One attempt: this replica is alive, and renews the lease it holds or takes one. */
  async function attempt(now: number, current: Held | undefined): Promise<Leased | undefined> {
    await renewLiveness(pool, replica, now + ttlMs);
    const renewed = current === undefined ? undefined : await renew(now, current);
    return renewed ?? (await acquire(now));
  }

  return { attempt };
}

/**
 * The lease this replica holds, telling `onChange` when it starts or stops leading. When a
 * renewal fails, `expire` ends the lease once it runs out by this replica's clock, whether or
 * not the database answers again first, so the led work stops then and not at a later step.
 */
function holding(schedule: Schedule, onChange: LeaderOptions["onChange"]) {
  let held: Held | undefined;
  /** Cancels the watch for the end of a lease whose renewal failed. */
  let unwatch: (() => void) | undefined;

  const change = (next: Held | undefined) => {
    unwatch?.();
    unwatch = undefined;
    const was = held?.epoch;
    held = next;
    if (was !== next?.epoch) onChange?.(next !== undefined, next?.epoch);
  };

  const expire = (now: number) => {
    if (held === undefined) return;
    if (now >= held.until) {
      change(undefined);
      return;
    }
    if (unwatch !== undefined) return;
    const watched = held;
    unwatch = schedule(() => {
      unwatch = undefined;
      // The lease's time has passed by the timer: it has run out, whatever the clock lags.
      if (held === watched) change(undefined);
    }, watched.until - now);
  };

  return {
    get held() {
      return held;
    },
    change,
    expire,
  };
}

/**
 * The checks that this replica still leads, made against the lease row: `fenced` for a write to
 * the database, in the write's own transaction; `confirm` before an effect outside it, and
 * `stillHolds` as its request leaves.
 */
function fences(
  pool: pg.Pool,
  row: { name: string; replica: string; ttlMs: number },
  lease: ReturnType<typeof holding>,
  elapsed: () => number,
): Pick<Leader, "fenced" | "confirm" | "stillHolds"> {
  const { name, replica, ttlMs } = row;
  const { change } = lease;
  /** The epoch of the lease this replica holds; FencedError when it holds none. */
  const held = (what: string) => {
    const epoch = lease.held?.epoch;
    if (epoch === undefined) throw new FencedError(what, undefined);
    return epoch;
  };
  /** FencedError, and this replica follows, unless the lease row read named its `epoch`. */
  const current = (what: string, epoch: number, rowCount: number | null) => {
    if (rowCount === 1) return;
    if (lease.held?.epoch === epoch) change(undefined);
    throw new FencedError(what, epoch);
  };
  const stillCurrent = async (what: string, epoch: number) => {
    const { rowCount } = await pool.query(
      "SELECT 1 FROM leadership WHERE name = $1 AND holder = $2 AND epoch = $3",
      [name, replica, epoch],
    );
    current(what, epoch, rowCount);
  };
  /**
   * Opens a fenced write's transaction and checks its epoch in one round trip: `BEGIN` and the
   * lease row's read, FOR SHARE, sent together (a query of two statements takes no parameters:
   * the names are quoted by the client, the epoch is an integer). FOR SHARE holds the lease row
   * until the transaction ends: a takeover (an UPDATE of the row) waits for the write to commit,
   * so no write lands after a newer epoch.
   */
  const beginCurrent = (what: string, epoch: number) => async (client: pg.PoolClient) => {
    if (!Number.isSafeInteger(epoch)) throw new FencedError(what, epoch);
    const text = `BEGIN; SELECT 1 FROM leadership WHERE name = ${client.escapeLiteral(name)} AND holder = ${client.escapeLiteral(replica)} AND epoch = ${String(epoch)} FOR SHARE`;
    const results: unknown = await client.query(text);
    // Two statements, two results: anything else is a driver that answers otherwise, said as
    // such, not taken for a lost lead.
    if (!Array.isArray(results) || results.length !== 2) {
      throw new Error("the fence's BEGIN and lease read did not answer with two results");
    }
    current(what, epoch, (results[1] as pg.QueryResult).rowCount);
  };
  /**
   * FencedError unless the lease of `epoch` was taken or renewed less than a lease ago, in real
   * time. The row named the epoch when it was read, which may be long before its answer is read
   * here: a process paused with the answer in its socket resumes into a lease another has taken
   * since. The renewals, not this check, decide whether it still leads.
   */
  const answeredInTime = (what: string, epoch: number) => {
    const current = lease.held;
    if (current?.epoch !== epoch || elapsed() - current.since >= ttlMs)
      throw new FencedError(what, epoch);
  };
  return {
    async fenced(what, write) {
      const epoch = held(what);
      const written = await inTransaction(pool, write, beginCurrent(what, epoch));
      // The write stands, made under the lease; what would follow it (a call to GitLab) waits
      // for the new leader, which finds the write, if the answer came too late.
      answeredInTime(what, epoch);
      return written;
    },
    async confirm(what) {
      const epoch = held(what);
      await stillCurrent(what, epoch);
      answeredInTime(what, epoch);
    },
    stillHolds(what) {
      answeredInTime(what, held(what));
    },
  };
}

export function createLeader(options: LeaderOptions): Leader {
  const { pool, replica, clock } = options;
  const name = options.name ?? "tracker";
  const ttlMs = options.ttlMs ?? DEFAULT_LEADER_TTL_MS;
  const renewEveryMs = options.renewEveryMs ?? Math.floor(ttlMs / 3);
  const schedule = options.schedule ?? timers;
  const elapsed = options.elapsed ?? (() => performance.now());
  const lease = holding(schedule, options.onChange);
  const { change, expire } = lease;
  let cancel: (() => void) | undefined;
  let stepping: Promise<boolean> | undefined;

  const row = leaseRow(pool, name, replica, ttlMs);

  async function attempt(): Promise<boolean> {
    try {
      const since = elapsed();
      const leased = await row.attempt(clock().getTime(), lease.held);
      change(leased === undefined ? undefined : { ...leased, since });
    } catch (error) {
      // Unreachable: keep what is held until it runs out by this replica's clock, not longer.
      options.onError?.(error);
      expire(clock().getTime());
    }
    return leads();
  }

  const leads = () => lease.held !== undefined && clock().getTime() < lease.held.until;

  const step = () => {
    // One attempt at a time: a renewal never races this replica's own takeover.
    stepping ??= attempt().finally(() => {
      stepping = undefined;
    });
    return stepping;
  };

  const loop = () => {
    cancel = schedule(() => {
      void step().finally(() => {
        if (cancel !== undefined) loop();
      });
    }, renewEveryMs);
  };

  return {
    step,
    start() {
      if (cancel !== undefined) return;
      void step();
      loop();
    },
    async stop() {
      cancel?.();
      cancel = undefined;
      await stepping;
      const current = lease.held;
      change(undefined);
      if (current === undefined) return;
      await pool.query(
        "UPDATE leadership SET expires_at = 0 WHERE name = $1 AND holder = $2 AND epoch = $3",
        [name, replica, current.epoch],
      );
    },
    isLeader: leads,
    epoch: () => lease.held?.epoch,
    ...fences(pool, { name, replica, ttlMs }, lease, elapsed),
  };
}
