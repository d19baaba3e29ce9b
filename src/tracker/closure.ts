import { systemClock, type Clock } from "../clock.js";
import { userMessage } from "../views/errors.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { Job } from "../gitlab/gitlab.js";
import type { RequestRecord, TransitionIntent } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import {
  lateApplyEndWords,
  lateApplyWords,
  lateDestroyEndWords,
  lateDestroyWords,
} from "../views/decision.js";
import { destroyExpiredWords } from "../views/destroy.js";
import { extensionExpiredWords } from "../views/extend.js";
import { CanceledResultSchema } from "../effect-results.js";
import { eraseEveryPlan, eraseOrSay, eraseStep, type EraseDeps } from "./plan-erase.js";
import { madeVm, vmAddress } from "./vm-made.js";
import {
  cancelFailedWords,
  expiredWords,
  notCanceledWords,
  ttlWords,
} from "../views/request-notes.js";

/**
 * What follows a rejection or an expiry. Canceling the pipeline is not enough: GitLab leaves a
 * manual job playable after a cancel, so vmbot also deletes the plan jobs' artifacts (the
 * `tfplan` the apply job takes), and keeps following the pipeline: an apply played in GitLab
 * afterwards is posted loudly in the request's thread, with who played it, and audited.
 */

/** The journal step that keeps a closed request's pipeline followed. */
export const WATCH_STEP = "watch_apply";
/** How long a closed request's pipeline is followed when nobody plays its apply job. */
const WATCH_MS = 30 * 24 * 3_600_000;
const CLOSED = new Set(["rejected", "expired", "withdrawn"]);
/** Job states a cancel stops: none left means the pipeline has nothing more to cancel. */
const CANCELABLE = new Set([
  "created",
  "waiting_for_resource",
  "preparing",
  "pending",
  "running",
  "scheduled",
]);
/** The apply job was played (it is, or was, on its way to a runner). */
const PLAYED = new Set([
  "waiting_for_resource",
  "preparing",
  "pending",
  "running",
  "success",
  "failed",
]);
const FINISHED = new Set(["success", "failed", "canceled"]);

/** The effects a rejection or an expiry records with its move: all finished even after a crash. */
export function closeIntents(request: RequestRecord): TransitionIntent[] {
  if (request.pipelineId === null) return [];
  const intents: TransitionIntent[] = [{ step: "cancel_pipeline" }];
  if (request.review !== null) {
    intents.push({
      step: eraseStep(request.review.planJobId),
      detail: { jobId: request.review.planJobId },
    });
  }
  intents.push({ step: WATCH_STEP });
  return intents;
}

/**
 * Whether a request ended without doing what it asked, its pipeline still followed: rejected,
 * expired or withdrawn; or a destroy that failed or was canceled, whose destroy job can still be
 * played again by hand in GitLab.
 */
export const isClosed = (request: RequestRecord) =>
  CLOSED.has(request.status) || (request.kind === "destroy" && DESTROY_ENDED.has(request.status));

const DESTROY_ENDED = new Set(["failed", "canceled"]);

/**
 * The watch a destroy that failed or was canceled records with its move: its pipeline stays
 * followed, and a destroy job played by hand afterwards is reported (the job that already ended,
 * `endedJobId`, is not).
 */
export function destroyWatch(endedJobId: number | undefined): TransitionIntent {
  return { step: WATCH_STEP, detail: endedJobId === undefined ? {} : { endedJobId } };
}

export interface ClosureDeps extends EraseDeps {
  render: (request: RequestRecord) => Promise<void>;
  now?: Clock | undefined;
}

export interface Closure {
  /**
   * Cancels the pipeline and deletes the plan's artifacts of a request just closed (`fresh`: the
   * intents were recorded with the move a moment ago). Returns what the decider should hear.
   */
  close(request: RequestRecord, fresh: boolean): Promise<string[]>;
  /** Expires a plan that outlived PLAN_TTL, and closes it. Undefined when it had moved on. */
  expire(request: RequestRecord): Promise<RequestRecord | undefined>;
  /** Cancels and deletions left unfinished (a crash, an unanswered call). */
  finishPending(): Promise<void>;
  /** Closed requests whose pipelines are still followed. */
  watched(): Promise<RequestRecord[]>;
  /** Reads a closed request's jobs: reports an apply played after the close. */
  follow(request: RequestRecord, jobs: Job[]): Promise<void>;
  /** The closed request's pipeline no longer exists: nothing more to follow. */
  forget(request: RequestRecord): Promise<void>;
}

/** Cancels the pipeline once; a lost answer is settled by reading the jobs back. */
async function cancel(
  deps: ClosureDeps,
  request: RequestRecord,
  pipelineId: number,
  fresh: boolean,
) {
  const { gitlab } = deps;
  const settled = async () =>
    (await gitlab.pipelineJobs(pipelineId)).every((job) => !CANCELABLE.has(job.status));
  // One shape however it ends: the status and address GitLab gives when read back.
  const readBack = async () => {
    const read = await gitlab.pipeline(pipelineId);
    return { status: read.status, webUrl: read.webUrl };
  };
  return deps.effects.once(request.id, "cancel_pipeline", {
    result: CanceledResultSchema,
    fresh,
    reconcile: async () => ((await settled()) ? readBack() : undefined),
    act: async () => {
      try {
        await gitlab.cancelPipeline(pipelineId);
      } catch (error) {
        // The answer was lost: GitLab's jobs say whether the cancel took effect.
        if (gitlabRefused(error) || !(await settled())) throw error;
      }
      // GitLab answers 200 to a cancel whatever the state: read it back to be sure.
      return readBack();
    },
  });
}

async function close(deps: ClosureDeps, request: RequestRecord, fresh: boolean): Promise<string[]> {
  const problems: string[] = [];
  const pipelineId = request.pipelineId;
  if (pipelineId === null) return problems;
  try {
    const after = await cancel(deps, request, pipelineId, fresh);
    if (!["canceled", "manual", "skipped", "failed", "success"].includes(after.status)) {
      problems.push(notCanceledWords(after.status, after.webUrl));
    }
  } catch (error) {
    deps.log.warn({ err: error, requestId: request.id }, "could not cancel the pipeline");
    problems.push(cancelFailedWords(gitlabRefused(error), userMessage(error)));
  }
  if (request.review !== null) await eraseOrSay(deps, request, request.review.planJobId, fresh);
  // A plan Terraform finished before vmbot read it, or one run again in GitLab, is deleted too.
  try {
    await eraseEveryPlan(deps, request, await deps.gitlab.pipelineJobs(pipelineId));
  } catch (error) {
    deps.log.warn({ err: error, requestId: request.id }, "could not read the pipeline's plans yet");
  }
  return problems;
}

/** Posts once per job and step, and audits the first time only. */
async function report(
  deps: ClosureDeps,
  request: RequestRecord,
  step: string,
  text: string,
  action: string,
  job: Job,
) {
  const { store, log } = deps;
  const firstTime = (await store.effect(request.id, `reply_${step}`)) === undefined;
  if (firstTime) {
    await store.audit({
      requestId: request.id,
      actor: "vmbot",
      action,
      detail: { jobId: job.id, status: job.status, playedBy: job.user },
    });
    log.warn(
      { requestId: request.id, jobId: job.id, playedBy: job.user, status: job.status },
      `apply job of a ${request.status} request: ${action}`,
    );
  }
  await deps.post(request, step, text);
}

const expiryWords = (request: RequestRecord, ttlMs: number) => {
  if (request.kind === "destroy") return destroyExpiredWords(request.spec.name, ttlWords(ttlMs));
  if (request.kind === "extend") return extensionExpiredWords(request.spec.name, ttlWords(ttlMs));
  return expiredWords(ttlMs);
};

async function expire(deps: ClosureDeps, request: RequestRecord) {
  const expired = await deps.store.transition(
    request.id,
    ["awaiting_approval"],
    "expired",
    {
      error: expiryWords(request, deps.config.planTtlMs),
    },
    closeIntents(request),
    { actor: "vmbot", action: "expired" },
  );
  if (expired === undefined) return undefined;
  await deps.render(expired);
  await close(deps, expired, true);
  return expired;
}

async function finishPending(deps: ClosureDeps) {
  const { store, log } = deps;
  for (const effect of await store.pendingEffects()) {
    const cancelStep = effect.step === "cancel_pipeline";
    if (!cancelStep && !effect.step.startsWith("erase_plan:")) continue;
    const request = await store.getRequest(effect.subject);
    if (request === undefined || request.pipelineId === null) {
      await store.complete(effect.subject, effect.step, { abandoned: "no pipeline" });
      continue;
    }
    if (cancelStep) {
      await cancel(deps, request, request.pipelineId, false).catch((error: unknown) => {
        log.warn({ err: error, requestId: request.id }, "could not cancel a closed pipeline");
      });
    } else {
      await eraseOrSay(deps, request, Number(effect.step.slice("erase_plan:".length)), false);
    }
  }
}

async function watched(store: AsyncStore): Promise<RequestRecord[]> {
  const found: RequestRecord[] = [];
  for (const effect of await store.pendingEffects()) {
    if (effect.step !== WATCH_STEP) continue;
    const request = await store.getRequest(effect.subject);
    if (request !== undefined && isClosed(request) && request.pipelineId !== null) {
      found.push(request);
    }
  }
  return found;
}

/** What the thread and the audit say of a job played after the close, and of its end. */
function lateReports(request: RequestRecord, job: Job, erased: boolean) {
  if (request.kind === "destroy") {
    return {
      played: lateDestroyWords(request, job),
      playedAction: "destroy_after_close",
      ended: lateDestroyEndWords(request, job),
      endedAction:
        job.status === "success"
          ? "vm_destroyed_outside_approval"
          : `destroy_after_close_${job.status}`,
    };
  }
  return {
    played: lateApplyWords(request, job, erased),
    playedAction: "apply_after_close",
    ended: lateApplyEndWords(request, job),
    endedAction: `apply_after_close_${job.status}`,
  };
}

async function follow(deps: ClosureDeps, now: Clock, request: RequestRecord, jobs: Job[]) {
  const { store } = deps;
  await eraseEveryPlan(deps, request, jobs);
  // A destroy request's manual job is its destroy job: one played after the close is reported.
  const { jobs: names } = deps.config.gitlab;
  const manual = request.kind === "destroy" ? names.destroy : names.apply;
  const found = jobs.find((job) => job.name === manual);
  // The destroy job that failed or was canceled as the request ended is not news; a new run is.
  const endedJobId = (await store.effect(request.id, WATCH_STEP))?.intent.endedJobId;
  const apply = found !== undefined && found.id === endedJobId ? undefined : found;
  if (apply !== undefined && (PLAYED.has(apply.status) || apply.status === "canceled")) {
    const erased =
      request.review !== null &&
      (await store.effect(request.id, eraseStep(request.review.planJobId)))?.result?.erased ===
        true;
    const late = lateReports(request, apply, erased);
    if (PLAYED.has(apply.status)) {
      await report(deps, request, `late_apply:${apply.id}`, late.played, late.playedAction, apply);
    }
    if (
      FINISHED.has(apply.status) &&
      (await store.effect(request.id, `reply_late_apply:${apply.id}`))
    ) {
      const endStep = `late_apply_end:${apply.id}`;
      if (request.kind === "destroy" && apply.status === "success") {
        // Terraform destroyed the VM, approved or not: it leaves the list (before the reply,
        // so a crash between the two finds it gone and says so once).
        await store.inventory.remove(request.spec.name, request.createdAt);
      } else if (
        request.kind === "create" &&
        apply.status === "success" &&
        (await store.effect(request.id, `reply_${endStep}`))?.state !== "done"
      ) {
        // Terraform made the VM, approved or not: it is listed, holds its name and address, and
        // can be destroyed with /vm destroy, as the reply says (recorded before the reply).
        const address = await vmAddress(deps, apply.id);
        await store.inventory.record(madeVm(deps.config, request, address, now()));
      }
      await report(deps, request, endStep, late.ended, late.endedAction, apply);
    }
  }
  const since = Date.parse(request.decision?.at ?? request.updatedAt);
  // A canceled apply that was never played can still be played (GitLab retries it as a
  // new job): followed until one that was played has ended.
  const ended =
    found === undefined ||
    (apply !== undefined &&
      FINISHED.has(apply.status) &&
      (await store.effect(request.id, `reply_late_apply:${apply.id}`)) !== undefined);
  if (ended || now().getTime() - since > WATCH_MS) {
    await store.complete(request.id, WATCH_STEP, { applyStatus: apply?.status ?? null });
  }
}

export function createClosure(deps: ClosureDeps): Closure {
  const now = deps.now ?? systemClock;
  return {
    close: (request, fresh) => close(deps, request, fresh),
    expire: (request) => expire(deps, request),
    finishPending: () => finishPending(deps),
    watched: () => watched(deps.store),
    follow: (request, jobs) => follow(deps, now, request, jobs),
    async forget(request) {
      await deps.store.complete(request.id, WATCH_STEP, { abandoned: "pipeline gone" });
    },
  };
}
