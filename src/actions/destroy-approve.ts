import { oneAtATime } from "../requests/one-at-a-time.js";
import type { App, BlockButtonAction } from "@slack/bolt";
import { userMessage } from "../views/errors.js";
import type { Job } from "../gitlab/gitlab.js";
import { DESTROY_APPROVE } from "../ids.js";
import { recordApproval } from "../policy/approval-step.js";
import { renderRequestMessage } from "../slack/request-message.js";
import {
  destroyPlayWords,
  destroySupersededWords,
  NOT_A_DESTROY_REQUEST,
} from "../views/decision.js";
import type { RequestRecord } from "../store/store.js";
import { destroyWatch } from "../tracker/closure.js";
import {
  claimApproval,
  playClaimed,
  releaseApproval,
  type ApprovalClaim,
  type PlayWords,
} from "./approval-claim.js";
import { checkDecision, tell, type ButtonArgs, type PlanDecisionDeps } from "./plan-decision.js";

/**
 * Approve on a destroy request (behind Slack's confirmation naming the VM): the request is
 * claimed in one conditional update with the intent to play, then the destroy job is played
 * exactly once. A lost answer is settled by reading the job back, never by playing again.
 */

/** Destroy-job states from which an approval can no longer destroy anything. */
const SUPERSEDED = new Set(["canceled", "failed", "skipped"]);

export function createDestroyApproveAction(deps: PlanDecisionDeps) {
  const now = deps.now ?? (() => new Date());
  return async (args: ButtonArgs) => {
    await args.ack();
    const found = await checkDecision(deps, args, "approve");
    if (!found) return;
    const user = args.body.user.id;
    const answer = (text: string) => tell(args.client, args.body.channel?.id ?? "", user, text);
    if (found.kind !== "destroy") {
      await answer(NOT_A_DESTROY_REQUEST);
      return;
    }
    const log = deps.log.child({ requestId: found.id, user, command: "approve_destroy" });
    const render = async (request: RequestRecord) => {
      await renderRequestMessage(args.client, deps.store, request, log);
    };
    // The policy's destroy rule: this click may be one of several the destroy needs.
    const approval = await oneAtATime(deps.store, found.id, () =>
      recordApproval(deps, found, user, now()),
    );
    if (approval.kind === "waiting") {
      await answer(approval.words);
      if (approval.request) await render(approval.request);
      return;
    }
    const decision = { kind: "approved" as const, by: user, at: now().toISOString() };
    const step = `play_destroy:${decision.at}`;
    const detail = { rule: approval.rule, tally: approval.tally };
    const audit = { actor: user, action: "approved", detail };
    const claimed = await claimApproval(deps, found, step, decision, audit, answer);
    if (!claimed) return;
    const claim = { deps, found, claimed, user, step, log, answer, render };
    const destroy = await readDestroyJob(claim);
    if (!destroy) return;
    if (SUPERSEDED.has(destroy.status)) {
      await refuseSuperseded(claim, destroy);
      return;
    }
    await playClaimed(claim, destroy, destroyWords(found));
  };
}

/** The destroy job to play; undefined once the approval was given back (GitLab unreadable). */
async function readDestroyJob(claim: ApprovalClaim): Promise<Job | undefined> {
  const { deps, found, log } = claim;
  try {
    const jobs = await deps.gitlab.pipelineJobs(found.pipelineId ?? 0);
    const named = jobs.find((job) => job.name === deps.config.gitlab.jobs.destroy);
    if (!named) throw new Error(`the pipeline has no job named ${deps.config.gitlab.jobs.destroy}`);
    return named;
  } catch (error) {
    // Only a read so far: nothing was asked of GitLab, so nothing can have started.
    log.error({ err: error }, "could not read the pipeline before playing; releasing the approval");
    await releaseApproval(claim, notStarted(found, userMessage(error)), "pipeline_unreadable");
    return undefined;
  }
}

/** Canceled, failed or skipped in GitLab meanwhile: this request will never destroy the VM. */
async function refuseSuperseded(claim: ApprovalClaim, destroy: Job) {
  const { deps, found, step, user } = claim;
  const words = destroySupersededWords(found.spec.name, destroy.status);
  await deps.store.complete(found.id, step, { abandoned: destroy.status });
  const ended = await deps.store.transition(
    found.id,
    ["applying"],
    "canceled",
    { error: words, decision: null },
    // Its pipeline stays followed: a destroy job played again by hand in GitLab is reported.
    destroyWatch(destroy.id),
    { actor: user, action: "approval_refused", detail: { destroyStatus: destroy.status } },
  );
  await claim.answer(words);
  if (ended) await claim.render(ended);
}

const notStarted = (found: RequestRecord, why: string) =>
  destroyPlayWords.notStarted(found.spec.name, why);

/** What an approval of a destroy request says and records about its destroy job. */
function destroyWords(found: RequestRecord): PlayWords {
  return {
    job: "destroy",
    startedAction: "destroy_started",
    startedLog: "destroy approved; destroy job started",
    notStarted: (why) => notStarted(found, why),
    confirmed: (job) => destroyPlayWords.confirmed(found.spec.name, job),
    unanswered: (why) => destroyPlayWords.unanswered(found.spec.name, why),
    checking: destroyPlayWords.checking,
    unknown: () => destroyPlayWords.unknown(found.spec.name),
  };
}

export function registerDestroyApprove(app: App, deps: PlanDecisionDeps): void {
  app.action<BlockButtonAction>(DESTROY_APPROVE, createDestroyApproveAction(deps));
}
