import { PlayedResultSchema } from "../effect-results.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { Job } from "../gitlab/gitlab.js";
import type { Logger } from "../logger.js";
import type { AuditEntry, RequestRecord } from "../store/store.js";
import { endUnplayed, readBackPlay } from "../tracker/play.js";
import { playedMeanwhileWords } from "../views/decision.js";
import { userMessage } from "../views/errors.js";
import { alreadyDecided, type PlanDecisionDeps } from "./plan-decision.js";

/**
 * An approval claimed on a request: the request as it was clicked and as claimed, who approved,
 * the step that plays its job, and how to answer the approver and redraw the message.
 */
export interface ApprovalClaim {
  deps: PlanDecisionDeps;
  found: RequestRecord;
  claimed: RequestRecord;
  user: string;
  step: string;
  log: Logger;
  answer: (text: string) => Promise<void>;
  render: (request: RequestRecord) => Promise<void>;
}

/**
 * The claim, the intent to play and the audit's "approved" in one conditional write. When another
 * click got there first, the approver is told why and undefined is returned.
 */
export async function claimApproval(
  deps: PlanDecisionDeps,
  found: RequestRecord,
  step: string,
  decision: { kind: "approved"; by: string; at: string },
  audit: Omit<AuditEntry, "requestId">,
  answer: (text: string) => Promise<void>,
): Promise<RequestRecord | undefined> {
  const claimed = await deps.store.transition(
    found.id,
    ["awaiting_approval"],
    "applying",
    { decision },
    { step },
    audit,
  );
  if (!claimed) {
    const current = (await deps.store.getRequest(found.id)) ?? found;
    await answer(alreadyDecided(current));
    return undefined;
  }
  return claimed;
}

/**
 * Nothing was started in GitLab by this click: the approval is given back, the buttons return.
 * Unless the job was played all the same (a tracker pass that took the approval's intent over
 * while this click waited on GitLab): then the approval stands and the approver is told so.
 */
export async function releaseApproval(claim: ApprovalClaim, words: string, reason: string) {
  const { deps, found, user } = claim;
  if (await endUnplayed(deps.effects, found.id, claim.step)) {
    await claim.answer(
      playedMeanwhileWords(found.kind === "destroy" ? "destroy" : "apply", found.spec.name),
    );
    await claim.render(claim.claimed);
    return;
  }
  const released = await deps.store.transition(
    found.id,
    ["applying"],
    "awaiting_approval",
    { decision: null, error: null },
    undefined,
    { actor: user, action: "approval_released", detail: { reason } },
  );
  await claim.answer(words);
  if (released) await claim.render(released);
}

/** What one kind of approval says and records about the job it plays. */
export interface PlayWords {
  /** The job's kind as the log names it: "apply", "destroy". */
  job: string;
  /** The audit action once the job started. */
  startedAction: string;
  startedLog: string;
  /** GitLab refused to start the job. */
  notStarted: (why: string) => string;
  /** The answer was lost, and reading the job back showed it started. */
  confirmed: (job: Job) => string;
  /** The answer was lost, and reading the job back showed it did not start. */
  unanswered: (why: string) => string;
  /** The request's note while vmbot does not know whether the job started. */
  checking: () => string;
  /** The approver's answer while vmbot does not know whether the job started. */
  unknown: () => string;
}

/**
 * Plays the claimed job exactly once through the effects journal. A refusal gives the approval
 * back; a lost answer is settled by reading the job back, never by playing again.
 */
export async function playClaimed(claim: ApprovalClaim, job: Job, words: PlayWords) {
  const { deps, found, step, user, log } = claim;
  try {
    // Played already (in GitLab, or by the tracker finishing this approval): not again.
    await deps.effects.once(found.id, step, {
      result: PlayedResultSchema,
      fresh: true,
      act: async () =>
        job.status === "manual"
          ? { jobId: job.id, status: (await deps.gitlab.playJob(job.id)).status }
          : { jobId: job.id, status: job.status, playedElsewhere: true },
    });
    await deps.store.audit({
      requestId: found.id,
      actor: user,
      action: words.startedAction,
      detail: { jobId: job.id },
    });
    log.info({ jobId: job.id }, words.startedLog);
    await claim.render(claim.claimed);
  } catch (error) {
    if (gitlabRefused(error)) {
      log.warn(
        { err: error },
        `GitLab refused to start the ${words.job} job; releasing the approval`,
      );
      await releaseApproval(claim, words.notStarted(userMessage(error)), "play_refused");
      return;
    }
    // The answer was lost (timeout, reset, 5xx): GitLab may have started the job. Read it back.
    log.warn({ err: error }, `no answer to the play; reading the ${words.job} job back`);
    await settleUnanswered(claim, job, words, error);
  }
}

/** Reads back a job whose play went unanswered and acts on what GitLab says. */
async function settleUnanswered(claim: ApprovalClaim, job: Job, words: PlayWords, error: unknown) {
  const { deps, found, step, user, log } = claim;
  const back = await readBackPlay(deps.gitlab, job.id);
  if (back.kind === "played") {
    await deps.store.complete(found.id, step, {
      jobId: back.job.id,
      status: back.job.status,
      confirmed: true,
    });
    await deps.store.audit({
      requestId: found.id,
      actor: user,
      action: words.startedAction,
      detail: { jobId: back.job.id, confirmedByReading: true },
    });
    await claim.answer(words.confirmed(back.job));
    await claim.render(claim.claimed);
  } else if (back.kind === "not_played") {
    await releaseApproval(claim, words.unanswered(userMessage(error)), "play_unanswered");
  } else {
    // Still unknown: the approval stands, the buttons stay away, the tracker settles it.
    log.warn({ err: back.error }, `could not read the ${words.job} job back either`);
    const checking = await deps.store.transition(found.id, ["applying"], "applying", {
      error: words.checking(),
    });
    await claim.answer(words.unknown());
    if (checking) await claim.render(checking);
  }
}
