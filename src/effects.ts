import type { z } from "zod";
import type { AsyncStore } from "./store/async.js";
import type { EffectRecord } from "./store/store.js";
import type { PostgresEffects } from "./store/postgres/effects.js";

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
   * What a failed act ends the step with: recorded as its result (done) in place of giving up the
   * claim, so that a run waiting for the step (another replica's, or this one's led work) finds
   * it failed (EffectFailedError) rather than taking it over and acting again. Undefined, or no
   * `settle`, leaves the step to be taken over and tried again.
   */
  settle?: (error: unknown) => Promise<EffectResult | undefined>;
  /** The schema of what `settle` records. */
  failure?: z.ZodType<EffectResult>;
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
  store: AsyncStore;
  /**
   * On a store several replicas share (PostgreSQL): claims an effect's intent for this replica,
   * so that of replicas reaching one effect at once exactly one acts; the others wait for its
   * result, or take the effect over (reconciling first) once the claim lapses, its replica gone.
   */
  claim?: PostgresEffects["claim"];
  /** Gives up this replica's claim on an effect whose act failed, for another to retry at once. */
  release?: PostgresEffects["release"];
  /**
   * Holds this replica's claim longer: asked just before it acts, unless the claim was taken a
   * moment ago (a replica held up past its claim, paused or slow, finds another took the effect
   * over, and does not act too), and while it acts, so that an act taking longer than the claim
   * holds is not taken over meanwhile.
   */
  renew?: PostgresEffects["renew"];
  /** How long a claim holds before another replica may take the effect over; 2 minutes. */
  claimHoldMs?: number;
  /**
   * Fault injection for crash tests: called at each crash point with its name
   * (`create_pipeline:after`). The crash tests' entry (`test/support/crash-entry.ts`) kills the
   * process there.
   */
  onCrashPoint?: (point: CrashPoint) => void;
}

/** A step that ended as failed (`EffectPlan.settle`), found so by a run that did not act. */
export class EffectFailedError extends Error {
  override name = "EffectFailedError";
  constructor(
    readonly step: string,
    /** What the failed run recorded, checked against the step's `failure` schema. */
    readonly result: EffectResult,
  ) {
    super(`${step} ended as failed`);
  }
}

/**
 * A result read back from the store, checked against the step's schema; EffectFailedError when
 * it is the failure the step records instead.
 */
function recordedResult<T extends EffectResult>(
  subject: string,
  step: string,
  result: EffectResult | null | undefined,
  plan: EffectPlan<T>,
): T {
  const parsed = plan.result.safeParse(result ?? {});
  const failure = parsed.success ? undefined : plan.failure?.safeParse(result ?? {});
  if (failure?.success === true) throw new EffectFailedError(step, failure.data);
  if (!parsed.success) {
    throw new Error(`the recorded result of ${step} for ${subject} is not one that step writes`, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** How long a replica's claim on an effect holds, and how often another looks at it meanwhile. */
const CLAIM_HOLD_MS = 2 * 60_000;
const CLAIM_POLL_MS = 250;

/** `reply:applied` → `reply`: crash points name the kind of step, not its instance. */
const kind = (step: string) => step.split(":")[0] ?? step;

/**
 * Claims the effect for this replica, or finds it done by another. While another replica
 * holds it, waits: for its result, or for its claim to lapse, when this one takes it over.
 * `existed`: an intent stood before the claim (left by a crash, or by the replica it took over).
 */
async function claimed(
  options: EffectsOptions,
  holdMs: number,
  subject: string,
  step: string,
  detail?: Record<string, unknown>,
): Promise<{ done?: EffectRecord; tookOver: boolean; existed: boolean; askedAt: number }> {
  const claim = options.claim;
  let waited = false;
  for (;;) {
    const askedAt = performance.now();
    const answer = await claim?.(subject, step, holdMs, detail);
    if (answer === undefined || answer.claimed) {
      return { tookOver: waited, existed: answer?.existed ?? false, askedAt };
    }
    if (answer.effect.state === "done") {
      return { done: answer.effect, tookOver: false, existed: true, askedAt };
    }
    waited = true;
    await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
  }
}

/** Whether this replica's claim still holds, held for as long again; true without claims. */
async function stillClaimed(
  options: EffectsOptions,
  subject: string,
  step: string,
  holdMs: number,
): Promise<boolean> {
  const renew = options.renew;
  if (options.claim === undefined || renew === undefined) return true;
  return renew(subject, step, holdMs);
}

/**
 * Whether a claim asked for at `askedAt` (by the monotonic clock) holds without asking the
 * store: less than a third of its hold has passed since, the time at which `holdClaim` renews it.
 * The store's answer would say no more: a replica held up after it can still act late, and one
 * that takes the effect over reconciles first for that reason.
 */
function justClaimed(askedAt: number | undefined, holdMs: number): boolean {
  return askedAt !== undefined && performance.now() - askedAt < holdMs / 3;
}

/**
 * Renews the claim every third of its hold while the act runs. A renewal that fails (the store
 * out of reach) is tried again at the next; the act goes on either way, as it would have without
 * renewals.
 */
function holdClaim(
  options: EffectsOptions,
  subject: string,
  step: string,
  holdMs: number,
): ReturnType<typeof setInterval> | undefined {
  const renew = options.renew;
  if (options.claim === undefined || renew === undefined) return undefined;
  const timer = setInterval(() => {
    renew(subject, step, holdMs).catch(() => undefined);
  }, holdMs / 3);
  timer.unref();
  return timer;
}

export function createEffects(options: EffectsOptions): Effects {
  const { store } = options;
  const holdMs = options.claimHoldMs ?? CLAIM_HOLD_MS;
  /** Effects running in this process: a second caller waits for the first, never acts too. */
  const running = new Map<string, Promise<EffectResult>>();
  const point = (step: string, moment: "before" | "after") =>
    options.onCrashPoint?.(`${kind(step)}:${moment}`);

  async function run<T extends EffectResult>(
    subject: string,
    step: string,
    plan: EffectPlan<T>,
  ): Promise<T> {
    // Whether the effect may have happened already: its intent was left by a crash, or by a
    // replica whose claim this one takes over. With claims, the claim says so (one round trip
    // fewer than reading the effect first); a done effect is never claimed, and is read then.
    let left = false;
    if (options.claim === undefined) {
      const recorded = await store.effect(subject, step);
      if (recorded?.state === "done") return recordedResult(subject, step, recorded.result, plan);
      left = recorded?.state === "intended" && plan.fresh !== true;
    }
    for (;;) {
      // When this replica asked for the claim it now holds, if nothing (a reconcile) came after.
      let claimedAt: number | undefined;
      if (options.claim !== undefined) {
        const claim = await claimed(options, holdMs, subject, step, plan.detail);
        if (claim.done !== undefined) return recordedResult(subject, step, claim.done.result, plan);
        left ||= (claim.existed && plan.fresh !== true) || claim.tookOver;
        claimedAt = claim.askedAt;
      }
      if (left && plan.reconcile !== undefined) {
        claimedAt = undefined;
        const found = await plan.reconcile();
        if (found !== undefined) {
          await store.complete(subject, step, { ...found, reconciled: true });
          return found;
        }
      }
      if (options.claim === undefined) await store.intend(subject, step, plan.detail);
      if (justClaimed(claimedAt, holdMs) || (await stillClaimed(options, subject, step, holdMs))) {
        return acted(subject, step, plan);
      }
      // Held up past its claim: another replica took the effect over, and may have acted.
      left = true;
    }
  }

  /** Acts, holding the claim while it does, and records the result. */
  async function acted<T extends EffectResult>(
    subject: string,
    step: string,
    plan: EffectPlan<T>,
  ): Promise<T> {
    point(step, "before");
    const holding = holdClaim(options, subject, step, holdMs);
    let result: T;
    try {
      result = await plan.act();
    } catch (error) {
      clearInterval(holding);
      const ended = await plan.settle?.(error);
      if (ended !== undefined) await store.complete(subject, step, ended);
      // Not done here: another replica may try (reconciling first) without waiting for the claim.
      else await options.release?.(subject, step).catch(() => undefined);
      throw error;
    }
    clearInterval(holding);
    point(step, "after");
    await store.complete(subject, step, result);
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
