import { userMessage } from "../views/errors.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { GitlabPort, Job } from "../gitlab/gitlab.js";
import { EffectFailedError, type Effects } from "../effects.js";
import type { Logger } from "../logger.js";
import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import { checkingWords } from "../views/decision.js";
import {
  NotPlayedResultSchema,
  PlayedResultSchema,
  type NotPlayedResult,
} from "../effect-results.js";

/**
 * Playing an approved plan's apply job, and what to believe when GitLab's answer is lost: the job
 * is read back, and GitLab's word decides. Only a definite refusal (4xx) releases an approval.
 */

/** What reading the apply job back says about a play whose answer was lost. */
export type PlayReadBack =
  | { kind: "played"; job: Job }
  | { kind: "not_played"; job: Job }
  | { kind: "unknown"; error: unknown };

/** Reads the apply job again after an uncertain answer: still `manual` means it was not played. */
export async function readBackPlay(gitlab: GitlabPort, jobId: number): Promise<PlayReadBack> {
  try {
    const job = await gitlab.job(jobId);
    return job.status === "manual" ? { kind: "not_played", job } : { kind: "played", job };
  } catch (error) {
    return { kind: "unknown", error };
  }
}

/** The journal step of one approval's play: the apply job's, or a destroy request's destroy job's. */
export const playStep = (request: RequestRecord) =>
  `${request.kind === "destroy" ? "play_destroy" : "play_apply"}:${request.decision?.at ?? ""}`;

/** Ends an approval's play step without a play, unless it was played meanwhile. */
class NotPlayed extends Error {}

/**
 * Ends the play step `step` of the request `subject` as not played, for an approval given back or
 * refused: true, changing nothing, when the job was played all the same. The step is ended
 * through the effects journal, which a run playing it (a click, a tracker pass, in this process
 * or on a replica holding its claim) finishes first, and which then answers with its result.
 */
export async function endUnplayed(
  effects: Effects,
  subject: string,
  step: string,
  ended: NotPlayedResult = { failed: true },
): Promise<boolean> {
  try {
    await effects.once(subject, step, {
      result: PlayedResultSchema,
      failure: NotPlayedResultSchema,
      fresh: true,
      act: () => Promise.reject(new NotPlayed()),
      settle: () => Promise.resolve(ended),
    });
    return true;
  } catch (error) {
    if (error instanceof NotPlayed || error instanceof EffectFailedError) return false;
    throw error;
  }
}

/** The audit's word for a played job of `request`: `apply_started`, `destroy_confirmed`… */
const playAction = (request: RequestRecord, what: "started" | "confirmed") =>
  `${request.kind === "destroy" ? "destroy" : "apply"}_${what}`;

export interface ApprovalFinisherDeps {
  store: AsyncStore;
  gitlab: GitlabPort;
  effects: Effects;
  log: Logger;
  render: (request: RequestRecord) => Promise<void>;
}

export interface ApprovalFinisher {
  /** Plays the apply job of an approved request whose job still waits as `manual`. */
  playApproved(request: RequestRecord, apply: Job): Promise<void>;
  /** Refuses the approval of a plan run again in GitLab since: back to planning, nothing played. */
  refuseRerun(request: RequestRecord): Promise<void>;
  /**
   * The apply job of an approval is no longer `manual`: it was played. Records it once (a play
   * whose answer was lost, or that a crash interrupted) and clears "checking with GitLab".
   */
  settle(request: RequestRecord, apply: Job): Promise<void>;
}

async function settle(
  deps: ApprovalFinisherDeps,
  request: RequestRecord,
  apply: Job,
): Promise<void> {
  const { store } = deps;
  const step = playStep(request);
  if ((await store.effect(request.id, step))?.state === "intended") {
    await store.complete(request.id, step, {
      jobId: apply.id,
      status: apply.status,
      confirmed: true,
    });
    await store.audit({
      requestId: request.id,
      actor: request.decision?.by ?? "vmbot",
      action: playAction(request, "confirmed"),
      detail: { jobId: apply.id, status: apply.status, playedBy: apply.user },
    });
  }
  if (request.error === null) return;
  const cleared = await store.transition(request.id, ["applying"], "applying", { error: null });
  if (cleared) await deps.render(cleared);
}

/** GitLab refused the play: released when the job still waits, settled if it was played. */
async function refused(
  deps: ApprovalFinisherDeps,
  request: RequestRecord,
  apply: Job,
  error: unknown,
): Promise<void> {
  const { store, log } = deps;
  const back = await readBackPlay(deps.gitlab, apply.id);
  if (back.kind === "played") {
    await settle(deps, request, back.job);
    return;
  }
  if (back.kind === "unknown") throw error;
  await store.complete(request.id, playStep(request), { failed: true, refused: true });
  const released = await store.transition(
    request.id,
    ["applying"],
    "awaiting_approval",
    { decision: null, error: null },
    undefined,
    {
      actor: "vmbot",
      action: "approval_released",
      detail: { jobId: apply.id, reason: userMessage(error) },
    },
  );
  log.warn(
    { err: error, requestId: request.id },
    "GitLab refused the apply job; approval released",
  );
  if (released) await deps.render(released);
}

async function playApproved(
  deps: ApprovalFinisherDeps,
  request: RequestRecord,
  apply: Job,
): Promise<void> {
  const { store, log } = deps;
  try {
    await deps.effects.once(request.id, playStep(request), {
      result: PlayedResultSchema,
      act: async () => {
        const played = await deps.gitlab.playJob(apply.id);
        log.info({ requestId: request.id, jobId: apply.id }, "played the approved apply job");
        await store.audit({
          requestId: request.id,
          actor: request.decision?.by ?? "vmbot",
          action: playAction(request, "started"),
          detail: { jobId: apply.id, playedLater: true },
        });
        return { jobId: apply.id, status: played.status };
      },
    });
    if (request.error !== null) {
      const cleared = await store.transition(request.id, ["applying"], "applying", { error: null });
      if (cleared) await deps.render(cleared);
    }
  } catch (error) {
    if (gitlabRefused(error)) {
      await refused(deps, request, apply, error);
      return;
    }
    // Unknown: the intent stays, the next pass reads the job again and settles it.
    if (request.error === null) {
      const checking = await store.transition(request.id, ["applying"], "applying", {
        error: checkingWords(),
      });
      if (checking) await deps.render(checking);
    }
    throw error;
  }
}

/**
 * The plan was run again in GitLab after it was approved: its apply job would apply a plan nobody
 * reviewed. The approval is refused (unless the job was played meanwhile) and the request goes
 * back to planning, where the new plan is read and posted for approval.
 */
async function refuseRerun(deps: ApprovalFinisherDeps, request: RequestRecord): Promise<void> {
  const ended = { abandoned: "rerun" };
  if (await endUnplayed(deps.effects, request.id, playStep(request), ended)) return;
  const moved = await deps.store.transition(
    request.id,
    ["applying"],
    "planning",
    { review: null, decision: null, error: null },
    undefined,
    { actor: "vmbot", action: "approval_refused", detail: { reason: "plan_rerun" } },
  );
  if (moved) await deps.render(moved);
}

export function createApprovalFinisher(deps: ApprovalFinisherDeps): ApprovalFinisher {
  return {
    settle: (request, apply) => settle(deps, request, apply),
    playApproved: (request, apply) => playApproved(deps, request, apply),
    refuseRerun: (request) => refuseRerun(deps, request),
  };
}
