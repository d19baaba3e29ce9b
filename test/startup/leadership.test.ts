/**
 * The led work on PostgreSQL, started and stopped as this replica's lease comes and goes: a
 * replica that takes a lease of a new epoch while its work still runs (its lease lapsed unseen,
 * the process paused) starts that work again, to read afresh what another leader may have
 * changed meanwhile.
 */
import { afterEach, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { postgresLeadership, type LedWork } from "../../src/startup/leadership.js";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/store.js";
import { testClock } from "../support/clock.js";
import { describeWithPostgres, useDatabase } from "../support/postgres.js";

const TTL = 3_000;
const log = createLogger({ level: "silent", redactor: createRedactor() });

/** Led work that only says what was asked of it, in order. */
function recordingWork(): LedWork & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    tracker: {
      start: () => asked.push("tracker start"),
      stop: () => {
        asked.push("tracker stop");
        return Promise.resolve();
      },
      wake: () => undefined,
    },
    inventory: {
      start: () => asked.push("inventory start"),
      stop: () => {
        asked.push("inventory stop");
        return Promise.resolve();
      },
    },
    resumeUnlocks: () => {
      asked.push("unlocks resumed");
      return Promise.resolve();
    },
  };
}

describeWithPostgres("the led work on PostgreSQL", () => {
  const database = useDatabase();
  const opened: PostgresStore[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  it("starts once when the lease is taken, and again when a lease of a new epoch follows one that lapsed unseen", async () => {
    const clock = testClock(new Date("2026-12-07T10:00:00.000Z"));
    const store = await openPostgresStore(database.url(), { clock: clock.now, replica: "led-a" });
    opened.push(store);
    const work = recordingWork();
    const leadership = postgresLeadership(
      store,
      { url: database.url(), ttlMs: TTL, clock: clock.now },
      work,
      log,
    );
    const started = ["tracker start", "inventory start", "unlocks resumed"];
    const stopped = ["tracker stop", "inventory stop"];
    const settled = () => leadership.stop().then(() => work.asked.splice(0));

    expect(await leadership.leader.step()).toBe(true);
    const first = leadership.leader.epoch();
    await expect.poll(() => work.asked.length).toBe(started.length);
    expect(work.asked).toEqual(started);

    // Renewed in time: the same lease, nothing started again.
    clock.advance(TTL / 3);
    expect(await leadership.leader.step()).toBe(true);
    expect(leadership.leader.epoch()).toBe(first);

    // Its next step comes after the lease ran out (the process was paused): the lease is taken
    // again, with the next epoch, and the work that never stopped starts again.
    clock.advance(TTL);
    expect(await leadership.leader.step()).toBe(true);
    expect(leadership.leader.epoch()).toBe(first! + 1);
    await expect.poll(() => work.asked.length).toBe(started.length + stopped.length + 3);
    expect(work.asked).toEqual([...started, ...stopped, ...started]);

    expect(await settled()).toEqual([...started, ...stopped, ...started, ...stopped]);
  });
});
