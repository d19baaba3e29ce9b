import type { PipelineEffectDeps } from "./deps.js";
import { userMessage } from "../views/errors.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { Job } from "../gitlab/gitlab.js";
import type { RequestRecord } from "../store/store.js";
import { retryNotTakenWords, retryStartedWords } from "../views/failure.js";
import { RetriedResultSchema } from "../effect-results.js";

/**
 * Retry configure: the failed configure job is run again through GitLab's job retry
 * (`POST /projects/:id/jobs/:job_id/retry`), which creates a NEW job in the same pipeline; the
 * tracker then follows that job like the first one. The retry is one effect in the journal, keyed
 * by the failed job: an answer lost after GitLab took it is settled by reading the pipeline's jobs
 * (a newer configure job means it was taken), never by retrying a second time.
 */

/** The journal step of one retry (the request's `attempt`-th) of a failed configure job. */
export const retryStep = (failedJobId: number, attempt: number) =>
  `retry_configure:${failedJobId}:${attempt}`;

export type RetryOutcome =
  | { kind: "started"; job: { id: number; webUrl: string } }
  /** GitLab did not take it (it refused, or reading back shows no new job): nothing changed. */
  | { kind: "not_started"; why: string }
  /** No answer, and the pipeline could not be read either: the tracker settles it. */
  | { kind: "unknown" };

export type ConfigureRetryDeps = PipelineEffectDeps;

export interface ConfigureRetry {
  /**
   * Retries the configure job `failedJobId` of a request already moved to configuring, once.
   * `fresh`: the intent was recorded with that move a moment ago.
   */
  run(
    request: RequestRecord,
    failedJobId: number,
    by: string,
    fresh: boolean,
  ): Promise<RetryOutcome>;
  /** GitLab did not run the job again: the request is failed again, its Retry button back. */
  release(request: RequestRecord, why: string): Promise<RequestRecord | undefined>;
  /**
   * The tracker's part, for a request in configuring after a retry: a retry left unsettled (its
   * answer and the read back lost, or a crash) is read back, and made only if GitLab shows no new
   * job; one that GitLab did not take is released. The request when it moved back to failed.
   */
  settle(request: RequestRecord): Promise<RequestRecord | undefined>;
}

class NotRetried extends Error {
  override name = "NotRetried";
}

/** The configure job that replaced `failedJobId` in the pipeline, if GitLab made one. */
async function replacement(
  deps: ConfigureRetryDeps,
  pipelineId: number,
  failedJobId: number,
): Promise<Job | undefined> {
  const jobs = await deps.gitlab.pipelineJobs(pipelineId);
  const latest = jobs
    .filter((job) => job.name === deps.config.gitlab.jobs.configure)
    .sort((a, b) => b.id - a.id)[0];
  return latest !== undefined && latest.id > failedJobId ? latest : undefined;
}

async function release(
  deps: ConfigureRetryDeps,
  request: RequestRecord,
  why: string,
): Promise<RequestRecord | undefined> {
  return await deps.store.transition(
    request.id,
    ["configuring"],
    "failed",
    { error: retryNotTakenWords(why) },
    undefined,
    { actor: "vmbot", action: "configure_retry_released", detail: { reason: why } },
  );
}

async function settle(deps: ConfigureRetryDeps, api: ConfigureRetry, request: RequestRecord) {
  const failed = request.failure;
  if (failed?.stage !== "configure" || failed.retries === undefined) return undefined;
  const effect = await deps.store.effect(request.id, retryStep(failed.jobId, failed.retries));
  if (effect?.state === "done") {
    return effect.result?.failed === true
      ? release(deps, request, "GitLab shows no new run of the job.")
      : undefined;
  }
  if (effect?.state !== "intended") return undefined;
  const by = typeof effect.intent.by === "string" ? effect.intent.by : "vmbot";
  const outcome = await api.run(request, failed.jobId, by, false);
  return outcome.kind === "not_started" ? release(deps, request, outcome.why) : undefined;
}

/** Asks GitLab to retry the job; a lost or refused answer is settled by reading the pipeline. */
async function retryJob(
  deps: ConfigureRetryDeps,
  request: RequestRecord,
  pipelineId: number,
  failedJobId: number,
) {
  try {
    const job = await deps.gitlab.retryJob(failedJobId);
    return { jobId: job.id, webUrl: job.webUrl };
  } catch (error) {
    // The answer was lost, or a repeated request was refused because the job was
    // retried already: the pipeline's jobs say whether GitLab took the retry.
    deps.log.warn(
      { err: error, requestId: request.id },
      "the retry was not answered with a job; reading the pipeline back",
    );
    let job: Job | undefined;
    try {
      job = await replacement(deps, pipelineId, failedJobId);
    } catch {
      throw error;
    }
    if (job !== undefined) {
      return { jobId: job.id, webUrl: job.webUrl, confirmedByReading: true };
    }
    if (gitlabRefused(error)) throw error;
    throw new NotRetried(userMessage(error), { cause: error });
  }
}

async function run(
  deps: ConfigureRetryDeps,
  request: RequestRecord,
  failedJobId: number,
  by: string,
  fresh: boolean,
): Promise<RetryOutcome> {
  const { store } = deps;
  const pipelineId = request.pipelineId ?? 0;
  const step = retryStep(failedJobId, request.failure?.retries ?? 0);
  let result: { jobId: number; webUrl: string };
  try {
    result = await deps.effects.once(request.id, step, {
      result: RetriedResultSchema,
      fresh,
      detail: { jobId: failedJobId, by },
      reconcile: async () => {
        const job = await replacement(deps, pipelineId, failedJobId);
        return job === undefined ? undefined : { jobId: job.id, webUrl: job.webUrl };
      },
      act: () => retryJob(deps, request, pipelineId, failedJobId),
    });
  } catch (error) {
    if (gitlabRefused(error) || error instanceof NotRetried) {
      await store.complete(request.id, step, { failed: true });
      deps.log.warn({ err: error, requestId: request.id }, "GitLab did not retry the job");
      return {
        kind: "not_started",
        why: error instanceof NotRetried ? error.message : userMessage(error),
      };
    }
    deps.log.warn(
      { err: error, requestId: request.id },
      "could not learn whether GitLab retried the job",
    );
    return { kind: "unknown" };
  }
  const job = { id: result.jobId, webUrl: result.webUrl };
  if ((await store.effect(request.id, `reply_retry_started:${failedJobId}`)) === undefined) {
    await store.audit({
      requestId: request.id,
      actor: by,
      action: "configure_retry_started",
      detail: { failedJobId, jobId: job.id },
    });
  }
  await deps.post(request, `retry_started:${failedJobId}`, retryStartedWords(by, job));
  return { kind: "started", job };
}

export function createConfigureRetry(deps: ConfigureRetryDeps): ConfigureRetry {
  const api: ConfigureRetry = {
    release: (request, why) => release(deps, request, why),
    settle: (request) => settle(deps, api, request),
    run: (request, failedJobId, by, fresh) => run(deps, request, failedJobId, by, fresh),
  };
  return api;
}
