/**
 * Slack deliveries recorded on PostgreSQL: one statement on the request path, and the old ones
 * pruned beside it, a bounded batch at a time, at most once a minute per replica.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { PRUNE_EVERY_MS } from "../../../src/store/postgres/audit.js";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/store.js";
import { testClock } from "../../support/clock.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";
import { waitFor } from "../../support/wait.js";

const KEEP_MS = 60_000;

describeWithPostgres("deliveries on PostgreSQL", () => {
  const database = useDatabase();
  const clock = testClock(new Date("2026-12-02T10:00:00.000Z"));
  let store: PostgresStore;

  beforeAll(async () => {
    store = await openPostgresStore(database.url(), { replica: "replica-a", clock: clock.now });
  });
  afterAll(async () => {
    await store.close();
  });

  const keys = async () =>
    (await store.pool.query<{ key: string }>("SELECT key FROM deliveries ORDER BY key")).rows.map(
      (row) => row.key,
    );

  it("forgets deliveries older than their time once a later delivery comes, and never a recent one", async () => {
    for (const key of ["command:T1", "command:T2", "command:T3"]) {
      expect(await store.firstDelivery(key, KEEP_MS)).toBe(true);
    }
    clock.advance(KEEP_MS / 2);
    expect(await store.firstDelivery("command:T4", KEEP_MS)).toBe(true);
    clock.advance(Math.max(KEEP_MS, PRUNE_EVERY_MS) / 2 + 1);
    // T1–T3 are past their time, T4 is not; a repeat of T4 is still a repeat.
    expect(await store.firstDelivery("command:T4", KEEP_MS)).toBe(false);
    await waitFor(
      async () => ((await keys()).length === 1 ? true : undefined),
      "the old deliveries to be pruned",
    );
    expect(await keys()).toEqual(["command:T4"]);
    // A pruned delivery seen again is new.
    expect(await store.firstDelivery("command:T1", KEEP_MS)).toBe(true);
  });

  it("makes a prune that came due while the one before still ran, when that one ends", async () => {
    await store.pool.query("DELETE FROM deliveries");
    // The first prune's DELETE is slow: it ends only after the next prune has come due.
    const query = store.pool.query.bind(store.pool);
    const seam: { query: unknown } = store.pool;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    seam.query = async (...args: Parameters<typeof query>) => {
      if (!held && JSON.stringify(args[0]).startsWith('"DELETE FROM deliveries WHERE')) {
        held = true;
        await released;
      }
      return (query as (...a: unknown[]) => unknown)(...args);
    };
    try {
      clock.advance(PRUNE_EVERY_MS + KEEP_MS);
      expect(await store.firstDelivery("command:U1", KEEP_MS)).toBe(true);
      clock.advance(Math.max(KEEP_MS, PRUNE_EVERY_MS) + 1);
      expect(await store.firstDelivery("command:U2", KEEP_MS)).toBe(true);
      expect(held).toBe(true);
      release();
      await waitFor(
        async () => (JSON.stringify(await keys()) === '["command:U2"]' ? true : undefined),
        "the prune that came due meanwhile",
      );
    } finally {
      delete seam.query;
      release();
    }
  });
});
