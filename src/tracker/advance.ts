import type { Clock } from "../clock.js";
import { parseAnsibleOutput } from "../ansible/recap.js";
import type { Config } from "../config.js";
import { VmbotError } from "../errors.js";
import type { GitlabPort, Job } from "../gitlab/gitlab.js";
import { cleanTrace } from "../gitlab/trace.js";
import type { Logger } from "../logger.js";
import type { Redactor } from "../redact.js";
import type { ThreadPoster } from "../slack/thread.js";
import type { AsyncStore } from "../store/async.js";
import type {
  RequestPatch,
  RequestRecord,
  RequestStatus,
  TransitionIntent,
} from "../store/store.js";
import { recapCutWords } from "../views/log-cut.js";
import { recapText } from "../views/recap.js";
import { applyStoppedWords, pipelineDeletedWords } from "../views/request-notes.js";
import { isClosed, type Closure } from "./closure.js";
import { madeVm, vmAddress } from "./vm-made.js";
import type { FailureRecord } from "./failure-cause.js";
import { createJobFailure } from "./job-failure.js";
import type { ApprovalFinisher } from "./play.js";
import type { ConfigureRetry } from "./retry-configure.js";

/**
 * The advance step: one request, one pass. Its pipeline's jobs are read once, and the request
 * moves as far as they allow (queued → planning → awaiting approval, or applying → configuring →
 * ready), each move through the store's conditional transition.
 */

const RUNNING = new Set(["created", "waiting_for_resource", "preparing", "pending", "running"]);
const STOPPED = new Set(["failed", "canceled", "skipped"]);
/** queued → planning → awaiting approval, or applying → configuring → ready, in one reading. */
const MAX_STEPS_PER_PASS = 4;

/**
 * Moves the request on from the status it was read in, audited as the bot's doing in the same
 * write: a move is never left without its entry, and costs one transaction, not two.
 */
export async function move(
  store: AsyncStore,
  request: RequestRecord,
  to: RequestStatus,
  patch: RequestPatch = {},
  /** Effects to record as intended with the move (a destroy's watch on its pipeline). */
  intent?: TransitionIntent,
): Promise<RequestRecord | undefined> {
  return store.transition(request.id, [request.status], to, patch, intent, {
    actor: "vmbot",
    action: to,
    detail: {},
  });
}

export interface AdvanceDeps {
  config: Config;
  store: AsyncStore;
  gitlab: GitlabPort;
  log: Logger;
  redact: Redactor;
  /** Posts a reply in the request's thread, once per step. */
  post: ThreadPoster;
  /** Renders the request message, then calls in whoever's turn it is. */
  render(request: RequestRecord): Promise<void>;
  approvals: ApprovalFinisher;
  retries: ConfigureRetry;
  closure: Closure;
  /** Reads a finished plan job and posts the plan for review. */
  reviewPlan(request: RequestRecord, plan: Job): Promise<void>;
  /** A destroy request's step: its own pipeline, with the destroy job in place of plan and apply. */
  advanceDestroy(request: RequestRecord, jobs: Job[]): Promise<void>;
  now: Clock;
}

export interface Advance {
  /**
   * Reads the request's pipeline and moves the request as far as its jobs allow (a closed
   * request's: reports an apply played after the close). Throws when GitLab cannot be read.
   */
  follow(request: RequestRecord, pipelineId: number): Promise<void>;
}

/** What the stages share: the parts they use, and the moves they make. */
interface Step extends AdvanceDeps {
  /** Ends the request as failed with `words` on its message. */
  fail(request: RequestRecord, words: string, failure?: FailureRecord): Promise<void>;
  /** Ends the request on a failed job: its cause, its log's excerpt, what a retry needs. */
  failJob(request: RequestRecord, job: Job, stage: FailureRecord["stage"]): Promise<void>;
  /** Moves the request on and renders it, when the move happens. */
  moveAndRender(request: RequestRecord, to: RequestStatus, patch?: RequestPatch): Promise<void>;
}

/** queued or planning: the plan job runs, has planned, or stopped. */
async function planStage(step: Step, request: RequestRecord, jobs: Job[]): Promise<void> {
  const name = step.config.gitlab.jobs.plan;
  const plan = jobs.find((job) => job.name === name);
  if (!plan) {
    await step.fail(
      request,
      `The pipeline has no job named \`${name}\`. Check GITLAB_PLAN_JOB, and that the job's rules accept pipelines created through the API (\`$CI_PIPELINE_SOURCE == "api"\`).`,
    );
    return;
  }
  if (plan.status === "success") {
    await step.reviewPlan(request, plan);
  } else if (STOPPED.has(plan.status)) {
    await step.failJob(request, plan, "plan");
  } else if (RUNNING.has(plan.status) && request.status === "queued") {
    await step.moveAndRender(request, "planning");
  }
}

/** awaiting approval: the apply job stopped, or was played in GitLab itself. */
async function approvalStage(step: Step, request: RequestRecord, apply: Job | undefined) {
  if (apply && STOPPED.has(apply.status)) {
    await step.moveAndRender(request, "canceled", {
      error: applyStoppedWords(apply.status),
    });
  } else if (apply && (RUNNING.has(apply.status) || apply.status === "success")) {
    // Someone played the job in GitLab itself: follow it.
    await step.moveAndRender(request, "applying");
  }
}

/** Whether the plan job was run again in GitLab after the request's plan was reviewed. */
function planRunAgain(step: Step, request: RequestRecord, jobs: readonly Job[]): boolean {
  const plan = jobs.find((job) => job.name === step.config.gitlab.jobs.plan);
  return plan !== undefined && request.review !== null && plan.id !== request.review.planJobId;
}

/** applying: the apply job ended, or an approval still has to play it. */
async function applyStage(step: Step, request: RequestRecord, jobs: Job[], apply: Job) {
  const configures = jobs.some((job) => job.name === step.config.gitlab.jobs.configure);
  if (apply.status !== "manual") await step.approvals.settle(request, apply);
  if (STOPPED.has(apply.status)) {
    await step.failJob(request, apply, "apply");
  } else if (apply.status === "success") {
    await applied(step, request, apply, configures);
  } else if (apply.status === "manual" && request.decision?.kind === "approved") {
    // Approved here, but GitLab has not started the job (a crash, a lost answer): finish it,
    // unless the plan was run again since it was reviewed, which nobody has approved.
    if (planRunAgain(step, request, jobs)) await step.approvals.refuseRerun(request);
    else await step.approvals.playApproved(request, apply);
  }
}

/** The apply job succeeded: the VM's address said, the VM recorded, configure (or ready) next. */
async function applied(step: Step, request: RequestRecord, apply: Job, configures: boolean) {
  const address = await vmAddress(step, apply.id);
  // The reply first: a crash after it finds it posted; a crash before it posts it.
  await step.post(
    request,
    "applied",
    `:gear: Terraform applied${address === undefined ? "" : `: the VM has address ${address}`}.`,
  );
  // The VM exists from here on, whatever configure does: into the inventory before the
  // move, so a crash between the two records it again, never misses it.
  await step.store.inventory.record(madeVm(step.config, request, address, step.now()));
  await step.moveAndRender(request, configures ? "configuring" : "ready", {
    ...(address === undefined ? {} : { address }),
  });
}

/** configuring: a retry from Slack settled first, then the configure job's end. */
async function configureStage(step: Step, request: RequestRecord, configure: Job): Promise<void> {
  if (request.failure !== null) {
    // Retried from Slack: settled first; the failed job itself is not followed again.
    const released = await step.retries.settle(request);
    if (released) await step.render(released);
    if (released || configure.id <= request.failure.jobId) return;
  }
  if (STOPPED.has(configure.status) || configure.status === "success") {
    await finishConfigure(step, request, configure);
  }
}

/** The configure job ended: its recap in the thread, then ready or failed. */
async function finishConfigure(step: Step, request: RequestRecord, job: Job): Promise<void> {
  const { logMaxBytes } = step.config.gitlab;
  const read = await step.gitlab.jobLog(job.id, logMaxBytes);
  const run = parseAnsibleOutput(cleanTrace(read.text));
  const summary = read.truncated
    ? `${recapText(run)}\n${recapCutWords(logMaxBytes, job.webUrl)}`
    : recapText(run);
  // A retried configure job posts its own recap.
  const again = request.failure === null ? "" : `:${job.id}`;
  if (job.status === "success") {
    await step.post(
      request,
      `configured${again}`,
      step.redact(`:white_check_mark: Configured.\n${summary}`),
    );
    await step.moveAndRender(request, "ready");
    return;
  }
  await step.post(
    request,
    `configure_failed${again}`,
    step.redact(`:x: Configuration failed.\n${summary}`),
  );
  await step.failJob(request, job, "configure");
}

/** Moves one request as far as its pipeline's jobs allow. */
async function advance(step: Step, request: RequestRecord, jobs: Job[]): Promise<void> {
  if (request.kind === "destroy") {
    await step.advanceDestroy(request, jobs);
    return;
  }
  if (request.status === "queued" || request.status === "planning") {
    await planStage(step, request, jobs);
    return;
  }
  const names = step.config.gitlab.jobs;
  const apply = jobs.find((job) => job.name === names.apply);
  const configure = jobs.find((job) => job.name === names.configure);
  if (request.status === "awaiting_approval") {
    await approvalStage(step, request, apply);
  } else if (request.status === "applying" && apply) {
    await applyStage(step, request, jobs, apply);
  } else if (request.status === "configuring" && configure) {
    await configureStage(step, request, configure);
  }
}

const gone = (error: unknown) => error instanceof VmbotError && error.code === "gitlab_not_found";

/** Reads the pipeline and moves the request as far as its jobs allow. */
async function follow(step: Step, request: RequestRecord, pipelineId: number): Promise<void> {
  if (isClosed(request)) {
    // A closed request's pipeline: an apply played after the close is reported.
    try {
      await step.closure.follow(request, await step.gitlab.pipelineJobs(pipelineId));
    } catch (error) {
      if (!gone(error)) throw error;
      await step.closure.forget(request);
    }
    return;
  }
  let jobs: Job[];
  try {
    jobs = await step.gitlab.pipelineJobs(pipelineId);
  } catch (error) {
    if (!gone(error)) throw error;
    await step.fail(request, pipelineDeletedWords(pipelineId));
    return;
  }
  // Several stages may have finished since the last reading (GitLab does not touch a
  // pipeline's updated_at while it keeps running): take every step the jobs allow.
  let current: RequestRecord | undefined = request;
  for (let n = 0; current && n < MAX_STEPS_PER_PASS; n += 1) {
    const before: RequestStatus = current.status;
    await advance(step, current, jobs);
    current = await step.store.getRequest(request.id);
    if (current?.status === before) break;
  }
}

export function createAdvance(deps: AdvanceDeps): Advance {
  const { store } = deps;
  const fail = async (request: RequestRecord, words: string, failure?: FailureRecord) => {
    const failed = await move(store, request, "failed", {
      error: words,
      ...(failure === undefined ? {} : { failure }),
    });
    if (failed) await deps.render(failed);
  };
  const step: Step = {
    ...deps,
    fail,
    failJob: createJobFailure({ ...deps, fail }),
    async moveAndRender(request, to, patch = {}) {
      const next = await move(store, request, to, patch);
      if (next) await deps.render(next);
    },
  };
  return { follow: (request, pipelineId) => follow(step, request, pipelineId) };
}
