import type { z } from "zod";
import type { Store } from "./store/store.js";

/**
 * Exactly-once outside effects. Each one records its intent in the store before acting and its
 * result after. After a crash, an intent without a result is first reconciled with the outside
 * world (did GitLab create the pipeline? is the reply in the thread?) and only repeated when the
 * effect is found not to have happened.
 */

export type EffectResult = Record<string, unknown>;

export interface EffectPlan<T extends EffectResult> {
  /** The result's schema: a result read back from the store is checked against it. */
  result: z.ZodType<T>;
  /**
   * Looks for the effect having already happened (only called after a crash left its intent
   * without a result): its result when it did, undefined when it did not.
   */
  reconcile?: () => Promise<T | undefined>;
  /** Performs the effect. */
  act: () => Promise<T>;
  /** Kept with the intent, for finishing the effect after a restart. */
  detail?: Record<string, unknown>;
  /**
   * The intent was recorded by this process a moment ago (together with a status move), not
   * left by a crash: nothing to reconcile.
   */
  fresh?: boolean;
}

/** Where a crash test may stop the process: just before an effect, or just after it. */
export type CrashPoint = `${string}:${"before" | "after"}`;

export interface Effects {
  /** Runs `plan` once for (subject, step): a done effect returns its recorded result. */
  once<T extends EffectResult>(subject: string, step: string, plan: EffectPlan<T>): Promise<T>;
}

export interface EffectsOptions {
  store: Store;
  /**
   * Fault injection for crash tests: called at each crash point with its name
   * (`create_pipeline:after`). The crash tests' entry (`test/support/crash-entry.ts`) kills the
   * process there.
   */
  onCrashPoint?: (point: CrashPoint) => void;
}

/** A result read back from the store, checked against the step's schema. */
function recordedResult<T extends EffectResult>(
  subject: string,
  step: string,
  result: EffectResult | null | undefined,
  plan: EffectPlan<T>,
): T {
  const parsed = plan.result.safeParse(result ?? {});
  if (!parsed.success) {
    throw new Error(`the recorded result of ${step} for ${subject} is not one that step writes`, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** `reply:applied` → `reply`: crash points name the kind of step, not its instance. */
const kind = (step: string) => step.split(":")[0] ?? step;

export function createEffects(options: EffectsOptions): Effects {
  const { store } = options;
  /** Effects running in this process: a second caller waits for the first, never acts too. */
  const running = new Map<string, Promise<EffectResult>>();
  const point = (step: string, moment: "before" | "after") =>
    options.onCrashPoint?.(`${kind(step)}:${moment}`);

  async function run<T extends EffectResult>(
    subject: string,
    step: string,
    plan: EffectPlan<T>,
  ): Promise<T> {
    const recorded = store.effect(subject, step);
    if (recorded?.state === "done") return recordedResult(subject, step, recorded.result, plan);
    if (recorded?.state === "intended" && plan.fresh !== true && plan.reconcile !== undefined) {
      const found = await plan.reconcile();
      if (found !== undefined) {
        store.complete(subject, step, { ...found, reconciled: true });
        return found;
      }
    }
    store.intend(subject, step, plan.detail);
    point(step, "before");
    const result = await plan.act();
    point(step, "after");
    store.complete(subject, step, result);
    return result;
  }

  return {
    once<T extends EffectResult>(subject: string, step: string, plan: EffectPlan<T>) {
      const key = `${subject}\u0000${step}`;
      const inflight = running.get(key);
      if (inflight !== undefined) return inflight as Promise<T>;
      const started = run(subject, step, plan).finally(() => {
        running.delete(key);
      });
      running.set(key, started);
      return started;
    },
  };
}
