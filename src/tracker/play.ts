import { userMessage } from "../views/errors.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { GitlabPort, Job } from "../gitlab/gitlab.js";
import type { Effects } from "../effects.js";
import type { Logger } from "../logger.js";
import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import { checkingWords } from "../views/decision.js";
import { PlayedResultSchema } from "../effect-results.js";

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

export function createApprovalFinisher(deps: ApprovalFinisherDeps): ApprovalFinisher {
  return {
    settle: (request, apply) => settle(deps, request, apply),
    playApproved: (request, apply) => playApproved(deps, request, apply),
  };
}
