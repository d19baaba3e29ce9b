import type { PipelineEffectDeps } from "./deps.js";
import { ErasedResultSchema } from "../effect-results.js";
import { VmbotError } from "../errors.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { Job } from "../gitlab/gitlab.js";
import type { RequestRecord } from "../store/store.js";
import { eraseRefusedWords } from "../views/decision.js";
import { userMessage } from "../views/errors.js";

/**
 * Deleting a closed request's plans. GitLab leaves a manual job playable after a cancel, and the
 * apply job applies whatever `tfplan` the plan job left, so every plan of the pipeline loses its
 * artifacts: the one vmbot posted, one Terraform finished before vmbot read it, and one run again
 * by hand in GitLab.
 */

export type EraseDeps = PipelineEffectDeps;

/** The journal step that deletes one plan job's artifacts. */
export const eraseStep = (jobId: number) => `erase_plan:${jobId}`;

/** Deletes the plan job's artifacts once; a lost answer is settled by reading the job back. */
async function erase(deps: EraseDeps, request: RequestRecord, jobId: number, fresh: boolean) {
  const { store, gitlab } = deps;
  const gone = async () => !(await gitlab.job(jobId)).hasArtifacts;
  return deps.effects.once(request.id, eraseStep(jobId), {
    result: ErasedResultSchema,
    fresh,
    detail: { jobId },
    reconcile: async () => ((await gone()) ? { erased: true } : undefined),
    act: async () => {
      try {
        await gitlab.eraseJobArtifacts(jobId);
      } catch (error) {
        if (gitlabRefused(error) || !(await gone())) throw error;
      }
      await store.audit({
        requestId: request.id,
        actor: "vmbot",
        action: "plan_erased",
        detail: { jobId },
      });
      return { erased: true };
    },
  });
}

export async function eraseOrSay(
  deps: EraseDeps,
  request: RequestRecord,
  jobId: number,
  fresh: boolean,
) {
  const { store, log } = deps;
  try {
    await erase(deps, request, jobId, fresh);
  } catch (error) {
    if (!gitlabRefused(error)) {
      log.warn({ err: error, requestId: request.id }, "could not delete the plan's artifacts yet");
      return;
    }
    // Refused (e.g. the token is not a Maintainer): said once, in the thread and the audit.
    await store.complete(request.id, eraseStep(jobId), {
      refused: error instanceof VmbotError ? error.code : "refused",
    });
    await store.audit({
      requestId: request.id,
      actor: "vmbot",
      action: "plan_erase_refused",
      detail: { jobId, reason: userMessage(error) },
    });
    log.warn(
      { err: error, requestId: request.id },
      "GitLab refused to delete the plan's artifacts",
    );
    await deps.post(request, "erase_refused", eraseRefusedWords(userMessage(error)));
  }
}

/**
 * Deletes the artifacts of every plan job of a closed request's pipeline not yet deleted (a
 * destroy's pipeline has no plan to apply). A deletion GitLab refused is not tried again.
 */
export async function eraseEveryPlan(deps: EraseDeps, request: RequestRecord, jobs: Job[]) {
  if (request.kind === "destroy") return;
  for (const job of jobs) {
    if (job.name !== deps.config.gitlab.jobs.plan || !job.hasArtifacts) continue;
    if ((await deps.store.effect(request.id, eraseStep(job.id)))?.state === "done") continue;
    await eraseOrSay(deps, request, job.id, false);
  }
}
