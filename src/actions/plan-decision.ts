import { APPROVE_VALUE } from "../ids.js";
import { oneAtATime } from "../requests/one-at-a-time.js";
import type { AllMiddlewareArgs, BlockButtonAction, SlackActionMiddlewareArgs } from "@slack/bolt";
import { z } from "zod";
import { notApproverWords } from "../views/refusals.js";
import type { Access } from "../access.js";
import type { Config } from "../config.js";
import type { Effects } from "../effects.js";
import { userMessage } from "../views/errors.js";
import type { GitlabPort, Job } from "../gitlab/gitlab.js";
import { recordApproval, ruleOf } from "../policy/approval-step.js";
import type { Logger } from "../logger.js";
import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import { createThreadPoster } from "../slack/thread.js";
import { createClosure } from "../tracker/closure.js";
import { createNotifier } from "../tracker/notify.js";
import { planExpired } from "../tracker/review.js";
import { renderRequestMessage } from "../slack/request-message.js";
import {
  alreadyDecidedWords as alreadyDecided,
  applySupersededWords,
  checkingWords,
  PIPELINE_CANCELED_WORDS,
  PLAN_REPLACED_WORDS,
  PLAN_RUN_AGAIN_WORDS,
  playConfirmedWords,
  playNotStartedWords,
  playUnknownWords,
  UNKNOWN_REQUEST,
} from "../views/decision.js";
import {
  claimApproval,
  playClaimed,
  releaseApproval,
  type ApprovalClaim,
  type PlayWords,
} from "./approval-claim.js";
import {
  anotherApproverWords,
  applyNotStartedWords,
  expiredWords,
} from "../views/request-notes.js";

export interface PlanDecisionDeps {
  config: Config;
  access: Access;
  store: AsyncStore;
  gitlab: GitlabPort;
  effects: Effects;
  log: Logger;
  now?: () => Date;
}

export type ButtonArgs = SlackActionMiddlewareArgs<BlockButtonAction> & AllMiddlewareArgs;
type SlackClient = AllMiddlewareArgs["client"];

/** Apply-job states from which an approval cannot lead to this plan being applied. */
const SUPERSEDED = new Set(["canceled", "failed", "skipped"]);

export const RequestIdSchema = z.string().regex(/^vm-[a-z0-9]+-[0-9a-f]{8}$/);

export { alreadyDecided };

export async function tell(client: SlackClient, channel: string, user: string, text: string) {
  await client.chat.postEphemeral({ channel, user, text });
}

/**
 * A click on a request's button: who clicked, a way to answer them privately in the request's
 * channel, and the request the button names, or undefined once they were told it is unknown.
 */
export async function clickedRequest(
  deps: Pick<PlanDecisionDeps, "store">,
  args: ButtonArgs,
): Promise<
  { user: string; answer: (text: string) => Promise<void>; request: RequestRecord } | undefined
> {
  const user = args.body.user.id;
  const channel = args.body.channel?.id ?? "";
  const answer = (text: string) => tell(args.client, channel, user, text);
  const id = RequestIdSchema.safeParse(args.action.value);
  const request = id.success ? await deps.store.getRequest(id.data) : undefined;
  if (request === undefined) {
    await answer(UNKNOWN_REQUEST);
    return undefined;
  }
  return { user, answer, request };
}

/**
 * Checks the clicker and the request at the moment of the click; answers the clicker
 * privately when the click cannot count. Returns the request when it may be decided on.
 */
export async function checkDecision(
  deps: PlanDecisionDeps,
  args: ButtonArgs,
  verb: "approve" | "reject",
): Promise<RequestRecord | undefined> {
  const { body, action, client } = args;
  return checkDecisionBy(deps, client, body.user.id, body.channel?.id ?? "", action.value, verb);
}

/** The same check for a clicker known by ID, e.g. from Reject's form when it comes back. */
export async function checkDecisionBy(
  deps: PlanDecisionDeps,
  client: SlackClient,
  user: string,
  channel: string,
  value: unknown,
  verb: "approve" | "reject",
): Promise<RequestRecord | undefined> {
  const id = RequestIdSchema.safeParse(value);
  const request = id.success ? await deps.store.getRequest(id.data) : undefined;
  if (!request) {
    await tell(client, channel, user, UNKNOWN_REQUEST);
    return undefined;
  }
  if (!(await deps.access.may(verb, user))) {
    await tell(
      client,
      channel,
      user,
      notApproverWords(verb, request.spec.name, deps.access.who(verb)),
    );
    return undefined;
  }
  // The request's approval rule says whether its requester may decide on it (without a policy
  // file, ALLOW_SELF_APPROVAL is that rule's answer).
  if (request.requester === user && !ruleOf(deps.access.policy(), request).self_approval) {
    await tell(client, channel, user, anotherApproverWords(request.spec.name, verb));
    return undefined;
  }
  if (request.status !== "awaiting_approval") {
    await tell(client, channel, user, alreadyDecided(request));
    return undefined;
  }
  if (verb === "approve" && planExpired(request.review, deps.config.planTtlMs, clock(deps))) {
    // Expired, and its pipeline canceled and plan deleted in GitLab, so it cannot be applied.
    await closureFor(deps, client, deps.log).closure.expire(request);
    await tell(client, channel, user, expiredWords(deps.config.planTtlMs));
    return undefined;
  }
  return request;
}

const clock = (deps: PlanDecisionDeps) => (deps.now ?? (() => new Date()))();

/** Renders the request message; one Slack refused is rendered again by the tracker's next pass. */
async function render(client: SlackClient, store: AsyncStore, request: RequestRecord, log: Logger) {
  await renderRequestMessage(client, store, request, log);
}

/**
 * An approval that came too late for this plan: the pipeline was canceled in GitLab, or the plan
 * job ran again after the plan was posted. The clicker is told why; a re-run plan is posted for
 * approval when it finishes. True when the approval was refused.
 */
async function refuseOutdated(
  deps: PlanDecisionDeps,
  args: ButtonArgs,
  request: RequestRecord,
  step: string,
  jobs: Job[],
  pipelineStatus: string,
  log: Logger,
): Promise<boolean> {
  const plan = jobs.find((job) => job.name === deps.config.gitlab.jobs.plan);
  const rerun =
    plan !== undefined && request.review !== null && plan.id !== request.review.planJobId;
  if (pipelineStatus !== "canceled" && !rerun) return false;
  const words = pipelineStatus === "canceled" ? PIPELINE_CANCELED_WORDS : PLAN_RUN_AGAIN_WORDS;
  const moved =
    pipelineStatus === "canceled"
      ? await deps.store.transition(request.id, ["applying"], "canceled", {
          error: words,
          decision: null,
        })
      : await deps.store.transition(request.id, ["applying"], "planning", {
          review: null,
          decision: null,
        });
  await deps.store.complete(request.id, step, {
    abandoned: pipelineStatus === "canceled" ? "canceled" : "rerun",
  });
  await deps.store.audit({
    requestId: request.id,
    actor: args.body.user.id,
    action: "approval_refused",
    detail: { reason: pipelineStatus === "canceled" ? "pipeline_canceled" : "plan_rerun" },
  });
  await tell(args.client, args.body.channel?.id ?? "", args.body.user.id, words);
  if (moved) await render(args.client, deps.store, moved, log);
  return true;
}

/** Approve: claim the request in one conditional update, then play the manual apply job once. */
export function createApproveAction(deps: PlanDecisionDeps) {
  const now = deps.now ?? (() => new Date());
  return async (args: ButtonArgs) => {
    await args.ack();
    const value = APPROVE_VALUE.exec(args.action.value ?? "");
    const { body, client } = args;
    const user = body.user.id;
    const found = await checkDecisionBy(
      deps,
      client,
      user,
      body.channel?.id ?? "",
      value?.[1],
      "approve",
    );
    if (!found) return;
    const log = deps.log.child({ requestId: found.id, user, command: "approve" });
    // The message showed another plan than the one waiting: this click approves neither.
    const shown = value?.[2] === undefined ? undefined : Number(value[2]);
    if (shown !== undefined && shown !== found.review?.planJobId) {
      await tell(client, body.channel?.id ?? "", user, PLAN_REPLACED_WORDS);
      await render(client, deps.store, found, log);
      return;
    }
    // The policy's approval rule: this click may be one of several the plan needs.
    const approval = await oneAtATime(deps.store, found.id, () =>
      recordApproval(deps, found, user, now()),
    );
    if (approval.kind === "waiting") {
      await tell(args.client, args.body.channel?.id ?? "", user, approval.words);
      if (approval.request) await render(args.client, deps.store, approval.request, log);
      return;
    }
    const decision = { kind: "approved" as const, by: user, at: now().toISOString() };
    // The claim, the intent to play and the audit's "approved" are one write: who approved is
    // on record whatever GitLab answers, and after a crash the tracker finishes the play.
    const step = `play_apply:${decision.at}`;
    const answer = (text: string) => tell(args.client, args.body.channel?.id ?? "", user, text);
    const claimed = await claimApproval(
      deps,
      found,
      step,
      decision,
      { actor: user, action: "approved", detail: { rule: approval.rule, tally: approval.tally } },
      answer,
    );
    if (!claimed) return;
    const redraw = (request: RequestRecord) => render(args.client, deps.store, request, log);
    const claim = { deps, found, claimed, user, step, log, answer, render: redraw };
    const apply = await readApplyJob(claim, args);
    if (apply) await playClaimed(claim, apply, applyWords(found, claimed));
  };
}

/**
 * The apply job to play, read from GitLab with its pipeline; undefined once the approval was
 * refused (the job or the pipeline ended, the plan ran again) or given back (GitLab unreadable).
 */
async function readApplyJob(claim: ApprovalClaim, args: ButtonArgs): Promise<Job | undefined> {
  const { deps, found, step, log } = claim;
  try {
    const [jobs, pipeline] = await Promise.all([
      deps.gitlab.pipelineJobs(found.pipelineId ?? 0),
      deps.gitlab.pipeline(found.pipelineId ?? 0),
    ]);
    const apply = jobs.find((job) => job.name === deps.config.gitlab.jobs.apply);
    if (!apply) {
      throw new Error(`the pipeline has no job named ${deps.config.gitlab.jobs.apply}`);
    }
    if (SUPERSEDED.has(apply.status)) {
      await refuseSuperseded(claim, apply);
      return undefined;
    }
    if (await refuseOutdated(deps, args, found, step, jobs, pipeline.status, log)) return undefined;
    return apply;
  } catch (error) {
    // Only reads so far: nothing was asked of GitLab, so nothing can have started.
    log.error({ err: error }, "could not read the pipeline before playing; releasing the approval");
    await releaseApproval(
      claim,
      applyNotStartedWords(found.spec.name, userMessage(error)),
      "pipeline_unreadable",
    );
    return undefined;
  }
}

/** Canceled, failed or skipped in GitLab meanwhile: this plan will never be applied. */
async function refuseSuperseded(claim: ApprovalClaim, apply: Job) {
  const { deps, found, step, user } = claim;
  const words = applySupersededWords(apply.status);
  const ended = await deps.store.transition(found.id, ["applying"], "canceled", {
    error: words,
    decision: null,
  });
  await deps.store.complete(found.id, step, { abandoned: apply.status });
  await deps.store.audit({
    requestId: found.id,
    actor: user,
    action: "approval_refused",
    detail: { applyStatus: apply.status },
  });
  await claim.answer(words);
  if (ended) await claim.render(ended);
}

/** What an approval of a plan says and records about its apply job. */
function applyWords(found: RequestRecord, claimed: RequestRecord): PlayWords {
  return {
    job: "apply",
    startedAction: "apply_started",
    startedLog: "plan approved; apply job started",
    notStarted: (why) => applyNotStartedWords(found.spec.name, why),
    confirmed: (job) => playConfirmedWords(claimed, job),
    unanswered: (why) => playNotStartedWords(found, why),
    checking: () => checkingWords(),
    unknown: () => playUnknownWords(found),
  };
}

/** What follows a rejection or an expiry, answering through this click's Slack client. */
export function closureFor(deps: PlanDecisionDeps, client: SlackClient, log: Logger) {
  const post = createThreadPoster({ client, effects: deps.effects, log });
  const notify = createNotifier({ config: deps.config, post });
  /** Renders the message, then tells the requester how their request ended. */
  const show = async (request: RequestRecord) => {
    await render(client, deps.store, request, log);
    await notify(request);
  };
  return { show, closure: createClosure({ ...deps, log, post, render: show }) };
}
