/**
 * One leader among replicas, fenced: two leaders in one process on the run's PostgreSQL, each
 * with its own pool, on one clock the test moves (a pause is a leader the test stops stepping).
 */
import pg from "pg";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createLeader, FencedError, type Leader } from "../../../src/store/postgres/leader.js";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/store.js";
import { testClock, type TestClock } from "../../support/clock.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";
import { waitFor } from "../../support/wait.js";

const TTL = 3_000;
const RENEW = 1_000;

describeWithPostgres("leadership with fencing", () => {
  const database = useDatabase();
  let clock: TestClock;
  let stores: PostgresStore[];
  let names = 0;
  /** Real time as the leaders measure how long ago they renewed: moved by the cases. */
  let elapsed = 0;

  beforeEach(async () => {
    clock = testClock(new Date("2026-12-02T10:00:00.000Z"));
    stores = await Promise.all(
      ["replica-a", "replica-b"].map((replica) =>
        openPostgresStore(database.url(), { clock: clock.now, replica }),
      ),
    );
    names += 1;
  });
  afterEach(async () => {
    await Promise.all(stores.map((store) => store.close()));
  });

  /** A leader on store `index`'s pool; each case leads something of its own. */
  const leader = (index: number, changes: string[] = []) => {
    const store = stores[index];
    if (store === undefined) throw new Error(`no store ${index}`);
    return createLeader({
      pool: store.pool,
      replica: store.replica,
      clock: clock.now,
      name: `tracker-${names}`,
      ttlMs: TTL,
      renewEveryMs: RENEW,
      elapsed: () => elapsed,
      onChange: (leading, epoch) => changes.push(`${leading ? "leads" : "follows"} ${epoch ?? ""}`),
    });
  };

  /** A fenced write: an audit entry by `who`, on the leader's own transaction. */
  const write = (who: Leader, actor: string) =>
    who.fenced("audit a leader's write", (client) =>
      client.query(
        "INSERT INTO audit_log (request_id, actor, action, detail, at) VALUES (NULL, $1, 'led', '{}', $2)",
        [`${names}:${actor}`, clock.now().toISOString()],
      ),
    );
  /** This case's fenced writes that landed, by who made them. */
  const written = async () =>
    ((await stores[0]?.listAudit()) ?? [])
      .filter((e) => e.action === "led" && e.actor.startsWith(`${names}:`))
      .map((e) => e.actor.slice(`${names}:`.length));

  it("lets one of two replicas lead, and keeps it leading while it renews", async () => {
    const [a, b] = [leader(0), leader(1)];
    const first = await Promise.all([a.step(), b.step()]);
    expect(first.filter(Boolean)).toHaveLength(1);
    const [winner, other] = first[0] ? [a, b] : [b, a];
    expect(winner.epoch()).toBe(1);
    for (let renewal = 0; renewal < 10; renewal += 1) {
      clock.advance(RENEW);
      expect(await winner.step()).toBe(true);
      expect(await other.step()).toBe(false);
    }
    expect(winner.epoch()).toBe(1);
    expect(other.isLeader()).toBe(false);
    await write(winner, "winner");
    await expect(write(other, "other")).rejects.toBeInstanceOf(FencedError);
    expect(await written()).toEqual(["winner"]);
  });

  it("hands over within the lease when the leader stops renewing, and fences the paused one's writes", async () => {
    const changes: string[] = [];
    const [a, b] = [leader(0, changes), leader(1)];
    expect(await a.step()).toBe(true);
    expect(await b.step()).toBe(false);
    const lastRenewal = clock.now().getTime();
    await write(a, "a before the pause");

    // A pauses (no more renewals); B keeps trying at its own pace.
    let tookOverAt: number | undefined;
    while (tookOverAt === undefined) {
      clock.advance(RENEW);
      if (clock.now().getTime() - lastRenewal > TTL + RENEW) throw new Error("B never took over");
      if (await b.step()) tookOverAt = clock.now().getTime();
    }
    expect(tookOverAt - lastRenewal).toBeLessThanOrEqual(TTL);
    expect(b.epoch()).toBe(2);
    // By its own clock, A knows its lease ran out; its writes are refused all the same.
    expect(a.isLeader()).toBe(false);
    await expect(write(a, "a after the pause")).rejects.toThrow(
      "this replica's leadership (epoch 1) has passed to another",
    );
    await write(b, "b");
    // A resumes: it finds the lease taken and follows.
    expect(await a.step()).toBe(false);
    expect(a.epoch()).toBeUndefined();
    expect(changes).toEqual(["leads 1", "follows "]);
    expect(await written()).toEqual(["a before the pause", "b"]);
  });

  it("fences a paused leader's write even when its clock still says it leads", async () => {
    const [a, b] = [leader(0), leader(1)];
    await a.step();
    // B's clock runs ahead of A's (or A paused): B takes the lease while A still thinks it holds it.
    clock.advance(TTL);
    expect(await b.step()).toBe(true);
    clock.advance(-TTL);
    expect(a.isLeader()).toBe(true);
    await expect(write(a, "a")).rejects.toBeInstanceOf(FencedError);
    expect(a.isLeader()).toBe(false);
    expect(await written()).toEqual([]);
  });

  it("confirms before a Slack post only while the lease row names its epoch", async () => {
    const [a, b] = [leader(0), leader(1)];
    await a.step();
    await a.confirm("post to Slack");
    await expect(b.confirm("post to Slack")).rejects.toThrow("this replica does not lead");

    // B takes the lease while A's clock still says A holds it (A paused, or its clock lags).
    clock.advance(TTL);
    expect(await b.step()).toBe(true);
    clock.advance(-TTL);
    expect(a.isLeader()).toBe(true);
    await expect(a.confirm("post to Slack")).rejects.toThrow(
      "refused to post to Slack: this replica's leadership (epoch 1) has passed to another",
    );
    expect(a.isLeader()).toBe(false);
    await b.confirm("post to Slack");
  });

  it("refuses a confirmation whose answer is read a lease or more after its last renewal, in real time", async () => {
    const [a, b] = [leader(0), leader(1)];
    await a.step();
    // The row is read while A leads; A pauses before reading the answer, past its lease (its
    // wall clock, say, stepped back meanwhile: real time is what counts).
    const confirming = a.confirm("post to Slack");
    elapsed += TTL;
    await expect(confirming).rejects.toThrow(
      "refused to post to Slack: this replica's leadership (epoch 1) has passed to another",
    );
    // Nobody took the lease meanwhile: A's next renewal finds it still its own, and it confirms.
    expect(await a.step()).toBe(true);
    await a.confirm("post to Slack");
    expect(await b.step()).toBe(false);
  });

  it("says it still holds, as a request leaves, only less than a lease after its last renewal", async () => {
    const [a, b] = [leader(0), leader(1)];
    expect(() => {
      a.stillHolds("post to Slack");
    }).toThrow("refused to post to Slack: this replica does not lead");
    await a.step();
    await a.confirm("post to Slack");
    elapsed += TTL - 1;
    a.stillHolds("post to Slack");
    // Confirmed, then stood still past its lease before the request left: no database asked.
    elapsed += 1;
    expect(() => {
      a.stillHolds("post to Slack");
    }).toThrow(
      "refused to post to Slack: this replica's leadership (epoch 1) has passed to another",
    );
    // Renewed, it holds again; once B has the lease and A has found so, it never does.
    expect(await a.step()).toBe(true);
    a.stillHolds("post to Slack");
    clock.advance(TTL);
    elapsed += TTL;
    expect(await b.step()).toBe(true);
    expect(await a.step()).toBe(false);
    expect(() => {
      a.stillHolds("post to Slack");
    }).toThrow(FencedError);
    b.stillHolds("post to Slack");
  });

  it("keeps a write whose answer is read after its lease ran out, and refuses what would follow it", async () => {
    const a = leader(0);
    await a.step();
    const writing = write(a, "late");
    elapsed += TTL;
    await expect(writing).rejects.toBeInstanceOf(FencedError);
    // Made under the lease, the write stands: whoever leads next finds it.
    expect(await written()).toEqual(["late"]);
  });

  it("gives the lease up when stopped, so another leads at its next step", async () => {
    const [a, b] = [leader(0), leader(1)];
    await a.step();
    await a.stop();
    expect(a.isLeader()).toBe(false);
    expect(await b.step()).toBe(true);
    expect(b.epoch()).toBe(2);
  });

  it("renews at a third of the lease on its schedule until stopped", async () => {
    const scheduled: { run: () => void; ms: number; canceled: boolean }[] = [];
    const store = stores[0];
    if (store === undefined) throw new Error("no store");
    const a = createLeader({
      pool: store.pool,
      replica: store.replica,
      clock: clock.now,
      name: `tracker-${names}`,
      ttlMs: TTL,
      schedule: (run, ms) => {
        const timer = { run, ms, canceled: false };
        scheduled.push(timer);
        return () => {
          timer.canceled = true;
        };
      },
    });
    a.start();
    await a.step();
    expect(a.isLeader()).toBe(true);
    expect(scheduled.map((timer) => timer.ms)).toEqual([TTL / 3]);
    for (let renewal = 1; renewal <= 6; renewal += 1) {
      clock.advance(TTL / 3);
      scheduled.at(-1)?.run();
      await waitForSchedule(scheduled, renewal + 1);
      expect(a.isLeader()).toBe(true);
    }
    await a.stop();
    expect(scheduled.at(-1)?.canceled).toBe(true);
  });

  it("stops leading when its lease runs out by its own clock while its renewals fail", async () => {
    const changes: string[] = [];
    const errors: unknown[] = [];
    const scheduled: { run: () => void; ms: number; canceled: boolean }[] = [];
    // Its own pool, which the test closes: every renewal after that fails.
    const pool = new pg.Pool({ connectionString: database.url(), max: 1 });
    const a = createLeader({
      pool,
      replica: "replica-a",
      clock: clock.now,
      name: `tracker-${names}`,
      ttlMs: TTL,
      renewEveryMs: RENEW,
      schedule: (run, ms) => {
        const timer = { run, ms, canceled: false };
        scheduled.push(timer);
        return () => {
          timer.canceled = true;
        };
      },
      onChange: (leading, epoch) => changes.push(`${leading ? "leads" : "follows"} ${epoch ?? ""}`),
      onError: (error) => errors.push(error),
    });
    expect(await a.step()).toBe(true);
    await pool.end();

    clock.advance(RENEW);
    expect(await a.step()).toBe(true);
    expect(errors).toHaveLength(1);
    // It watches for the end of its lease: what is left of it by its own clock.
    expect(scheduled.map((timer) => timer.ms)).toEqual([TTL - RENEW]);
    clock.advance(RENEW);
    expect(await a.step()).toBe(true);
    expect(scheduled).toHaveLength(1);
    expect(changes).toEqual(["leads 1"]);

    // The lease runs out with no step in between: it stops leading then.
    clock.advance(TTL - 2 * RENEW);
    scheduled[0]?.run();
    expect(a.isLeader()).toBe(false);
    expect(a.epoch()).toBeUndefined();
    expect(changes).toEqual(["leads 1", "follows "]);
  });

  it("stops leading at a failed renewal that finds its lease already run out", async () => {
    const changes: string[] = [];
    const pool = new pg.Pool({ connectionString: database.url(), max: 1 });
    const a = createLeader({
      pool,
      replica: "replica-a",
      clock: clock.now,
      name: `tracker-${names}`,
      ttlMs: TTL,
      renewEveryMs: RENEW,
      schedule: () => () => undefined,
      onChange: (leading, epoch) => changes.push(`${leading ? "leads" : "follows"} ${epoch ?? ""}`),
      onError: () => undefined,
    });
    expect(await a.step()).toBe(true);
    await pool.end();
    // Paused past its lease, then its renewal fails: it follows at once.
    clock.advance(TTL);
    expect(await a.step()).toBe(false);
    expect(a.epoch()).toBeUndefined();
    expect(changes).toEqual(["leads 1", "follows "]);
  });
});

/** Waits until the leader has scheduled its next renewal (its step done). */
async function waitForSchedule(scheduled: readonly unknown[], count: number): Promise<void> {
  await waitFor(() => (scheduled.length >= count ? true : undefined), `renewal ${count}`);
}
