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
});
