/**
 * Effects on a store several replicas share: of replicas reaching one effect at once exactly one
 * acts, the others get its result; a replica that stopped holding an intent has it taken over,
 * reconciled with the outside world first.
 */
import { afterEach, expect, it } from "vitest";
import { z } from "zod";
import { PostedResultSchema } from "../../../src/effect-results.js";
import { createEffects, EffectFailedError } from "../../../src/effects.js";
import { createLeader } from "../../../src/store/postgres/leader.js";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/store.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";

describeWithPostgres("effects claimed on PostgreSQL", () => {
  const database = useDatabase();
  const opened: PostgresStore[] = [];
  const replica = async (name: string) => {
    const store = await openPostgresStore(database.url(), { replica: name });
    opened.push(store);
    return { store, effects: createEffects({ store, claim: store.claim, claimHoldMs: 1_000 }) };
  };
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  /** Two replicas whose claims would hold longer than a test: only a release or a result frees one. */
  const holdingPair = async (names: [string, string]) => {
    const open = async (name: string) => {
      const store = await openPostgresStore(database.url(), { replica: name });
      opened.push(store);
      const options = { store, claim: store.claim, release: store.release, claimHoldMs: 600_000 };
      return createEffects(options);
    };
    return [await open(names[0]), await open(names[1])] as const;
  };
  /** An act that fails when `fail` is called, and the acts attempted, by who attempted them. */
  const failingAct = () => {
    let fail: (error: Error) => void = () => undefined;
    const failing = new Promise<never>((_, reject) => {
      fail = reject;
    });
    const failNow = (error: Error) => {
      fail(error);
    };
    return { failing, fail: failNow, attempts: [] as string[] };
  };

  it("acts once for three replicas reaching one effect at once, each getting its result", async () => {
    const replicas = await Promise.all(["a", "b", "c"].map((name) => replica(`claim-${name}`)));
    let acted = 0;
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const results = replicas.map(({ effects }) =>
      effects.once("R1", "reply:ready", {
        result: PostedResultSchema,
        act: async () => {
          acted += 1;
          await held;
          return { ts: "1700000000.000100" };
        },
      }),
    );
    release();
    expect(await Promise.all(results)).toEqual(Array(3).fill({ ts: "1700000000.000100" }));
    expect(acted).toBe(1);
    const effect = await replicas[0]!.store.effect("R1", "reply:ready");
    expect(effect).toMatchObject({ state: "done", result: { ts: "1700000000.000100" } });
  });

  it("lets another replica act at once when the one holding the claim failed to, without waiting for the claim to lapse", async () => {
    // Only the claim's release lets the other act.
    const [first, second] = await holdingPair(["release-a", "release-b"]);
    const { failing, fail, attempts } = failingAct();
    const plan = (who: string, act: () => Promise<{ ts: string }>) => ({
      result: PostedResultSchema,
      reconcile: () => Promise.resolve(undefined),
      act: () => {
        attempts.push(who);
        return act();
      },
    });
    const failed = first.once(
      "R-release",
      "reply:ready",
      plan("a", () => failing),
    );
    await expect.poll(() => attempts).toEqual(["a"]);
    // The other replica reaches the effect while the first holds it, and waits.
    const retried = second.once(
      "R-release",
      "reply:ready",
      plan("b", () => Promise.resolve({ ts: "1700000000.000300" })),
    );
    fail(new Error("Slack did not answer"));
    await expect(failed).rejects.toThrow("Slack did not answer");
    expect(await retried).toEqual({ ts: "1700000000.000300" });
    expect(attempts).toEqual(["a", "b"]);
  });

  it("ends the step where the act failed when the plan settles it: a replica waiting for it finds it failed and does not act", async () => {
    const [first, second] = await holdingPair(["settle-a", "settle-b"]);
    const { failing, fail, attempts } = failingAct();
    const plan = (who: string, act: () => Promise<{ ts: string }>) => ({
      result: PostedResultSchema,
      failure: z.object({ failed: z.string() }),
      reconcile: () => Promise.resolve(undefined),
      act: () => {
        attempts.push(who);
        return act();
      },
      settle: (error: unknown) =>
        Promise.resolve({ failed: error instanceof Error ? error.message : "?" }),
    });
    const failed = first.once(
      "R-settle",
      "reply:ready",
      plan("a", () => failing),
    );
    await expect.poll(() => attempts).toEqual(["a"]);
    const waiting = second.once(
      "R-settle",
      "reply:ready",
      plan("b", () => Promise.resolve({ ts: "1700000000.000400" })),
    );
    fail(new Error("GitLab answered 500"));
    await expect(failed).rejects.toThrow("GitLab answered 500");
    const found = await waiting.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(found).toBeInstanceOf(EffectFailedError);
    expect((found as EffectFailedError).result).toEqual({ failed: "GitLab answered 500" });
    expect(attempts).toEqual(["a"]);
    const effect = await opened[0]!.effect("R-settle", "reply:ready");
    expect(effect).toMatchObject({ state: "done", result: { failed: "GitLab answered 500" } });
  });

  it("does not act when held up past its claim while another replica took the effect over", async () => {
    const held = await replica("held-a");
    const other = await replica("held-b");
    let resume: () => void = () => undefined;
    const heldUp = new Promise<void>((resolve) => {
      resume = resolve;
    });
    // The claim is granted, then the replica stops (paused, or starved) before it acts.
    const pausedEffects = createEffects({
      store: held.store,
      claim: async (...args) => {
        const claim = await held.store.claim(...args);
        await heldUp;
        return claim;
      },
      renew: held.store.renew,
      claimHoldMs: 1_000,
    });
    const acts: string[] = [];
    const plan = (who: string, ts: string) => ({
      result: PostedResultSchema,
      reconcile: () => Promise.resolve(undefined),
      act: () => {
        acts.push(who);
        return Promise.resolve({ ts });
      },
    });
    const paused = pausedEffects.once("R-held", "reply:ready", plan("a", "1700000000.000500"));
    await expect
      .poll(() => held.store.effect("R-held", "reply:ready"))
      .toMatchObject({ state: "intended" });
    // Its claim lapses; the other replica takes the effect over and acts.
    const otherEffects = createEffects({
      store: other.store,
      claim: other.store.claim,
      renew: other.store.renew,
      claimHoldMs: 1_000,
    });
    expect(
      await otherEffects.once("R-held", "reply:ready", plan("b", "1700000000.000600")),
    ).toEqual({ ts: "1700000000.000600" });
    resume();
    expect(await paused).toEqual({ ts: "1700000000.000600" });
    expect(acts).toEqual(["b"]);
  });

  it("acts on a claim it took a moment ago without asking the store again; one that came late, or a reconcile, is asked about", async () => {
    const { store } = await replica("renew-a");
    const renewals: string[] = [];
    const effectsWith = (claimDelayMs: number) =>
      createEffects({
        store,
        claim: async (...args) => {
          const answer = await store.claim(...args);
          await new Promise((resolve) => setTimeout(resolve, claimDelayMs));
          return answer;
        },
        renew: (subject, step, holdMs) => {
          renewals.push(subject);
          return store.renew(subject, step, holdMs);
        },
        claimHoldMs: 900,
      });
    const plan = (ts: string) => ({
      result: PostedResultSchema,
      reconcile: () => Promise.resolve(undefined),
      act: () => Promise.resolve({ ts }),
    });

    await effectsWith(0).once("R-fresh", "reply:ready", plan("1700000000.000800"));
    expect(renewals).toEqual([]);

    // The claim's answer took longer than a third of its hold: the store is asked.
    await effectsWith(400).once("R-late", "reply:ready", plan("1700000000.000801"));
    expect(renewals).toEqual(["R-late"]);

    // An intent a crash left: reconciled first, then the store is asked.
    await store.intend("R-left", "reply:ready");
    await effectsWith(0).once("R-left", "reply:ready", plan("1700000000.000802"));
    expect(renewals).toEqual(["R-late", "R-left"]);
    expect(await store.effect("R-left", "reply:ready")).toMatchObject({
      state: "done",
      result: { ts: "1700000000.000802" },
    });
  });

  it("holds its claim while an act runs longer than a claim holds: another replica waits for the result", async () => {
    const [first, second] = await Promise.all([replica("long-a"), replica("long-b")]);
    const effectsOf = (store: PostgresStore) =>
      createEffects({ store, claim: store.claim, renew: store.renew, claimHoldMs: 1_000 });
    const acts: string[] = [];
    let finish: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const long = effectsOf(first.store).once("R-long", "reply:ready", {
      result: PostedResultSchema,
      act: async () => {
        acts.push("a");
        await finished;
        return { ts: "1700000000.000700" };
      },
    });
    await expect.poll(() => acts).toEqual(["a"]);
    const waiting = effectsOf(second.store).once("R-long", "reply:ready", {
      result: PostedResultSchema,
      reconcile: () => Promise.resolve(undefined),
      act: () => {
        acts.push("b");
        return Promise.resolve({ ts: "1700000000.000800" });
      },
    });
    // Two and a half times as long as the claim holds unrenewed.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    finish();
    expect(await long).toEqual({ ts: "1700000000.000700" });
    expect(await waiting).toEqual({ ts: "1700000000.000700" });
    expect(acts).toEqual(["a"]);
  });

  it("takes over an intent whose replica stopped, reconciling before it acts", async () => {
    const gone = await replica("claim-gone");
    await gone.store.claim("R2", "reply:ready", 50, {});
    const { effects } = await replica("claim-next");
    let acted = 0;
    let looked = 0;
    const result = await effects.once("R2", "reply:ready", {
      result: PostedResultSchema,
      reconcile: () => {
        looked += 1;
        return Promise.resolve({ ts: "1700000000.000200" });
      },
      act: () => {
        acted += 1;
        return Promise.resolve({ ts: "1700000000.000300" });
      },
    });
    expect(result).toEqual({ ts: "1700000000.000200" });
    expect([looked, acted]).toEqual([1, 0]);
  });

  it("reconciles before it acts on an intent it left itself before a restart, and acts at once on one it records", async () => {
    // The claim says whether an intent stood before it: no read of the effect comes first.
    const before = await replica("claim-restarted");
    await before.store.claim("R-restart-left", "reply:ready", 600_000, {});
    const { effects } = await replica("claim-restarted");
    const calls: string[] = [];
    const plan = (ts: string) => ({
      result: PostedResultSchema,
      reconcile: () => {
        calls.push(`looked ${ts}`);
        return Promise.resolve(undefined);
      },
      act: () => {
        calls.push(`acted ${ts}`);
        return Promise.resolve({ ts });
      },
    });
    expect(await effects.once("R-restart-left", "reply:ready", plan("1700000000.000400"))).toEqual({
      ts: "1700000000.000400",
    });
    expect(await effects.once("R-restart-new", "reply:ready", plan("1700000000.000500"))).toEqual({
      ts: "1700000000.000500",
    });
    expect(calls).toEqual([
      "looked 1700000000.000400",
      "acted 1700000000.000400",
      "acted 1700000000.000500",
    ]);
  });

  /** One attempt at the lead by `store`'s replica, `ago` ms in the past: it renews its liveness. */
  const triedToLead = (store: PostgresStore, ago: number) =>
    createLeader({
      pool: store.pool,
      replica: store.replica,
      clock: () => new Date(Date.now() - ago),
      ttlMs: 3_000,
    }).step();

  it("takes over at once a claim, its own or its led work's, held by a replica whose liveness has passed", async () => {
    const dead = await replica("claim-dead");
    // Its last attempt at the lead was a minute ago: its liveness ran out 57 s ago.
    await triedToLead(dead.store, 60_000);
    const hour = 3_600_000;
    expect((await dead.store.claim("R3", "reply:ready", hour, {})).claimed).toBe(true);
    const led = await openPostgresStore(database.url(), { replica: "claim-dead/led" });
    opened.push(led);
    expect((await led.claim("R3", "reply:applied", hour, {})).claimed).toBe(true);
    const next = await replica("claim-after");
    expect(await next.store.claim("R3", "reply:ready", hour, {})).toMatchObject({
      claimed: true,
      holder: "claim-after",
    });
    expect(await next.store.claim("R3", "reply:applied", hour, {})).toMatchObject({
      claimed: true,
      holder: "claim-after",
    });
  });

  it("leaves a live replica's claim to it until the claim lapses", async () => {
    const live = await replica("claim-live");
    await triedToLead(live.store, 0);
    expect((await live.store.claim("R4", "reply:ready", 3_600_000, {})).claimed).toBe(true);
    const other = await replica("claim-other");
    expect(await other.store.claim("R4", "reply:ready", 3_600_000, {})).toMatchObject({
      claimed: false,
      holder: "claim-live",
      effect: { state: "intended" },
    });
  });

  it("takes over at once what a replica that closed its store still claimed", async () => {
    const closing = await replica("claim-closed");
    await triedToLead(closing.store, 0);
    expect((await closing.store.claim("R5", "reply:ready", 3_600_000, {})).claimed).toBe(true);
    await closing.store.close();
    const next = await replica("claim-after-close");
    expect((await next.store.claim("R5", "reply:ready", 3_600_000, {})).claimed).toBe(true);
  });

  it("takes over at once what a store that never tried to lead claimed, once it is closed", async () => {
    // A store opened to seed or read the database, not a bot: it has no liveness until it closes.
    const seeding = await openPostgresStore(database.url(), { replica: "claim-seeding" });
    expect((await seeding.claim("R6", "reply:ready", 3_600_000, {})).claimed).toBe(true);
    const other = await replica("claim-beside-seeding");
    expect((await other.store.claim("R6", "reply:ready", 3_600_000, {})).claimed).toBe(false);
    await seeding.close();
    expect((await other.store.claim("R6", "reply:ready", 3_600_000, {})).claimed).toBe(true);
  });
});
