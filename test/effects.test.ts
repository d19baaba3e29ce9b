import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CanceledResultSchema, PostedResultSchema } from "../src/effect-results.js";
import { createEffects } from "../src/effects.js";
import { asAsyncStore } from "../src/store/async.js";
import { openSqliteStore } from "../src/store/sqlite.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function store() {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-effects-"));
  dirs.push(dir);
  return openSqliteStore(join(dir, "vmbot.sqlite"));
}

const never = () => Promise.reject(new Error("acted again"));

describe("an effect's recorded result", () => {
  it("is read back through the step's schema, without the reconciled mark", async () => {
    const s = store();
    s.intend("R1", "reply_applied");
    s.complete("R1", "reply_applied", { ts: "1700000000.000100", reconciled: true });
    const effects = createEffects({ store: asAsyncStore(s) });
    await expect(
      effects.once("R1", "reply_applied", { result: PostedResultSchema, act: never }),
    ).resolves.toEqual({ ts: "1700000000.000100" });
  });

  it("that is not one the step writes is refused, and the effect is not done again", async () => {
    const s = store();
    s.intend("R1", "cancel_pipeline");
    s.complete("R1", "cancel_pipeline", { status: 7 });
    const effects = createEffects({ store: asAsyncStore(s) });
    let acted = false;
    await expect(
      effects.once("R1", "cancel_pipeline", {
        result: CanceledResultSchema,
        act: () => {
          acted = true;
          return Promise.resolve({ status: "canceled", webUrl: "https://gitlab.example/p/1" });
        },
      }),
    ).rejects.toThrow("the recorded result of cancel_pipeline for R1 is not one that step writes");
    expect(acted).toBe(false);
  });

  it("is the acted result when the effect runs", async () => {
    const s = store();
    const effects = createEffects({ store: asAsyncStore(s) });
    const result = { status: "canceled", webUrl: "https://gitlab.example/p/1" };
    await expect(
      effects.once("R1", "cancel_pipeline", {
        result: CanceledResultSchema,
        act: () => Promise.resolve(result),
      }),
    ).resolves.toEqual(result);
    expect(s.effect("R1", "cancel_pipeline")?.result).toEqual(result);
  });
});
