/**
 * Effects on a store several replicas share: of replicas reaching one effect at once exactly one
 * acts, the others get its result; a replica that stopped holding an intent has it taken over,
 * reconciled with the outside world first.
 */
import { afterEach, expect, it } from "vitest";
import { PostedResultSchema } from "../../../src/effect-results.js";
import { createEffects } from "../../../src/effects.js";
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
});
