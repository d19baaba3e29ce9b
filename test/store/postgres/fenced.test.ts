/**
 * The led work's store on PostgreSQL: every write it makes is checked against the leader's
 * epoch in the write's own transaction. Two replicas in one process on the run's PostgreSQL,
 * each with its own pool, on one clock the test moves (a pause is a leader the test stops
 * stepping).
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { createLeader, FencedError } from "../../../src/store/postgres/leader.js";
import {
  fencedPostgresStore,
  openPostgresStore,
  type PostgresStore,
} from "../../../src/store/postgres/store.js";
import { testClock, type TestClock } from "../../support/clock.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";
import { SAMPLE_SPEC } from "../../support/requests.js";

const TTL = 3_000;

describeWithPostgres("the led work's store, fenced by the leader's epoch", () => {
  const database = useDatabase();
  let clock: TestClock;
  let stores: PostgresStore[];
  let cases = 0;

  beforeEach(async () => {
    clock = testClock(new Date("2026-12-02T10:00:00.000Z"));
    // Names a pod or a person may give: the fence's check quotes them itself (it is sent with
    // BEGIN, as a query of two statements, which takes no parameters).
    stores = await Promise.all(
      ["replica-a's", "replica-b\\'; --"].map((replica) =>
        openPostgresStore(database.url(), { clock: clock.now, replica }),
      ),
    );
    cases += 1;
  });
  afterEach(async () => {
    await Promise.all(stores.map((store) => store.close()));
  });

  const storeOf = (index: number) => {
    const store = stores[index];
    if (store === undefined) throw new Error(`no store ${index}`);
    return store;
  };
  const leaderOn = (index: number) =>
    createLeader({
      pool: storeOf(index).pool,
      replica: storeOf(index).replica,
      clock: clock.now,
      name: `fenced-${cases}`,
      ttlMs: TTL,
    });
  const entry = (requestId: string, action: string) => ({
    requestId,
    actor: "vmbot",
    action,
  });

  it("writes while it leads, and once another leads refuses every write, even one its clock allows", async () => {
    const [a, b] = [leaderOn(0), leaderOn(1)];
    expect(await a.step()).toBe(true);
    const led = fencedPostgresStore(storeOf(0), a, clock.now);
    const { request } = await storeOf(0).createRequest({
      requester: "U0REQ",
      spec: SAMPLE_SPEC,
      notes: [],
      channel: "C0CHAN",
      submissionKey: `view:fenced-${cases}`,
    });
    expect(request.status).toBe("queued");

    // While it leads, the led work's writes land.
    const moved = await led.transition(request.id, ["queued"], "planning");
    expect(moved).toMatchObject({ status: "planning", revision: request.revision + 1 });
    await led.audit(entry(request.id, "led before the pause"));

    // B's clock runs ahead of A's (or A paused): B takes the lease while A still thinks it leads.
    clock.advance(TTL);
    expect(await b.step()).toBe(true);
    clock.advance(-TTL);
    expect(a.isLeader()).toBe(true);

    await expect(led.audit(entry(request.id, "led after the pause"))).rejects.toBeInstanceOf(
      FencedError,
    );
    await expect(
      led.transition(request.id, ["planning"], "awaiting_approval"),
    ).rejects.toBeInstanceOf(FencedError);
    await expect(led.updateRequest(request.id, { pipelineId: 4242 })).rejects.toBeInstanceOf(
      FencedError,
    );
    // It now knows it does not lead; its reads still answer, and show nothing it tried to write.
    expect(a.isLeader()).toBe(false);
    expect(await led.getRequest(request.id)).toEqual(moved);

    // The new leader's led work writes; the replica's other work (its listeners) is not fenced.
    const ledByB = fencedPostgresStore(storeOf(1), b, clock.now);
    await ledByB.audit(entry(request.id, "led by the new leader"));
    await storeOf(0).audit(entry(request.id, "a listener's write"));
    expect((await storeOf(1).listAudit(request.id)).map((e) => e.action)).toEqual([
      "led before the pause",
      "led by the new leader",
      "a listener's write",
    ]);
  });

  it("claims the led work's effects apart from the same replica's listeners: of the two reaching one effect, one acts", async () => {
    const a = leaderOn(0);
    expect(await a.step()).toBe(true);
    const led = fencedPostgresStore(storeOf(0), a, clock.now);
    const subject = `vm-led-${cases}`;

    // A click on the replica claims the play; its own tracker pass reaches the same effect.
    const listener = await storeOf(0).claim(subject, "play_apply:1", 60_000);
    const replica = storeOf(0).replica;
    expect(listener).toMatchObject({ claimed: true, holder: replica });
    const tracker = await led.claim(subject, "play_apply:1", 60_000);
    expect(tracker).toMatchObject({ claimed: false, holder: replica });

    // And the other way round: what the tracker claimed first, a click waits for.
    const first = await led.claim(subject, "play_apply:2", 60_000);
    expect(first).toMatchObject({ claimed: true, holder: `${replica}/led` });
    expect(await storeOf(0).claim(subject, "play_apply:2", 60_000)).toMatchObject({
      claimed: false,
      holder: `${replica}/led`,
    });
  });
});
