import type { Job } from "../gitlab/gitlab.js";
import type { RequestRecord } from "../store/store.js";
import { escapeMrkdwn, link } from "../slack/mrkdwn.js";

/**
 * Words about an approval whose outcome GitLab has not told yet, and about a plan applied in
 * GitLab after vmbot rejected it or let it expire.
 */

const name = (request: RequestRecord) => `*${escapeMrkdwn(request.spec.name)}*`;
const jobLink = (job: Job) => link(job.webUrl, `job #${job.id}`);
const who = (job: Job) =>
  job.user === null ? "someone in GitLab" : `GitLab user \`${escapeMrkdwn(job.user)}\``;

/** The request message's status line while vmbot does not know whether the apply started. */
export function checkingWords(): string {
  return "Approved; vmbot is checking with GitLab whether the apply job started (GitLab did not answer in time). This message updates when GitLab says.";
}

/** To the approver: GitLab did not answer the play, but reading the job back shows it started. */
export function playConfirmedWords(request: RequestRecord, job: Job): string {
  return `GitLab was slow to answer, but it did start the apply job of ${name(request)} (${jobLink(job)}, ${escapeMrkdwn(job.status)}): Terraform is applying your approval.`;
}

/** To the approver: GitLab did not answer the play, and the job still waits to be played. */
export function playNotStartedWords(request: RequestRecord, reason: string): string {
  return `GitLab did not answer, and the apply job of ${name(request)} has not started, so it still awaits approval: approve again to retry. ${reason}`;
}

/** To the approver: GitLab did not answer the play, nor the read that followed. */
export function playUnknownWords(request: RequestRecord): string {
  return `GitLab did not answer when vmbot started the apply job of ${name(request)}, nor when it looked again, so vmbot cannot tell yet whether it started. Your approval stands; vmbot keeps checking with GitLab and updates the request message when it knows.`;
}

const CLOSED_AS: Partial<Record<RequestRecord["status"], string>> = {
  expired: "expired",
  withdrawn: "was withdrawn",
  failed: "failed",
  canceled: "was canceled",
};
const closedAs = (request: RequestRecord) => CLOSED_AS[request.status] ?? "was rejected";

/** In the request's thread, loudly: someone played the apply job after the request was closed. */
export function lateApplyWords(request: RequestRecord, job: Job, planErased: boolean): string {
  const mentions = [request.requester, request.decision?.by]
    .filter((id): id is string => id !== undefined)
    .map((id) => `<@${id}>`)
    .join(" ");
  const plan = planErased
    ? "vmbot deleted this plan's artifacts, so Terraform has no plan to apply and the job should fail."
    : "vmbot could not delete this plan's artifacts, so the job may apply the plan: stop it in GitLab now.";
  return `:rotating_light: *The apply job of ${name(request)} was played in GitLab after the request ${closedAs(request)}*, by ${who(job)} (${jobLink(job)}, ${escapeMrkdwn(job.status)}). ${plan} ${mentions}`;
}

/** In the thread: how that apply job ended. */
export function lateApplyEndWords(request: RequestRecord, job: Job): string {
  if (job.status === "success") {
    return `:rotating_light: *The apply job played after the request ${closedAs(request)} succeeded* (${jobLink(job)}): a VM may have been built from this plan. Check Proxmox, and remove it with \`/vm destroy ${escapeMrkdwn(request.spec.name)}\` if it should not exist.`;
  }
  const ended = job.status === "canceled" ? "was canceled" : "failed";
  return `The apply job played after the request ${closedAs(request)} ${ended} (${jobLink(job)}): nothing was applied from this plan.`;
}

/** In the request's thread, loudly: someone played the destroy job after the request was closed. */
export function lateDestroyWords(request: RequestRecord, job: Job): string {
  const mentions = [request.requester, request.decision?.by]
    .filter((id): id is string => id !== undefined && id !== "vmbot")
    .map((id) => `<@${id}>`)
    .join(" ");
  return `:rotating_light: *The destroy job of ${name(request)} was played in GitLab after the request ${closedAs(request)}*, by ${who(job)} (${jobLink(job)}, ${escapeMrkdwn(job.status)}): Terraform is destroying the VM outside the approval. ${mentions}`;
}

/** In the thread: how that destroy job ended; the VM leaves vmbot's list when it succeeded. */
export function lateDestroyEndWords(request: RequestRecord, job: Job): string {
  if (job.status === "success") {
    return `:wastebasket: *The destroy job played after the request ${closedAs(request)} succeeded* (${jobLink(job)}), by ${who(job)}: ${name(request)} is destroyed, outside the approval, and no longer listed.`;
  }
  const ended = job.status === "canceled" ? "was canceled" : "failed";
  return `The destroy job played after the request ${closedAs(request)} ${ended} (${jobLink(job)}): ${name(request)} stays listed.`;
}

/** In the thread: GitLab refused to delete the plan's artifacts. */
export function eraseRefusedWords(reason: string): string {
  return `:warning: vmbot could not make this plan unusable in GitLab: ${reason} Until its plan job's artifacts are deleted, anyone with the Developer role can still apply it from GitLab; vmbot reports it here if someone does.`;
}

const STATE_WORDS: Partial<Record<RequestRecord["status"], string>> = {
  queued: "is still waiting for its plan",
  planning: "is still being planned",
  applying: "was already approved",
  configuring: "was already approved and is being configured",
  ready: "is finished",
  failed: "has failed",
  rejected: "was rejected",
  expired: "has expired: run /vm create again",
  canceled: "was canceled",
  withdrawn: "was withdrawn",
};

/** Why a request can no longer be decided on, in a sentence. */
export function alreadyDecidedWords(request: RequestRecord): string {
  const by = request.decision === null ? "" : ` by <@${request.decision.by}>`;
  const state = STATE_WORDS[request.status] ?? `is ${request.status}`;
  const who = ["applying", "rejected", "withdrawn"].includes(request.status) ? by : "";
  return `This request (${request.spec.name}) ${state}${who}; there is nothing to decide.`;
}

/** To whoever clicked a button of a request vmbot has no record of. */
export const UNKNOWN_REQUEST = "This button belongs to a request vmbot does not know.";

/** An approval of a plan whose pipeline was canceled in GitLab meanwhile. */
export const PIPELINE_CANCELED_WORDS =
  "This plan can no longer be applied: its pipeline was canceled in GitLab. Run /vm create again for a fresh plan.";

/** Approve on a message that showed an older plan than the one waiting now. */
export const PLAN_REPLACED_WORDS =
  "Terraform planned again after this message showed its plan, so this approval does not count: the message now shows the new plan. Review it, and approve it if it is right.";

/** An approval of a plan that was run again in GitLab after it was posted. */
export const PLAN_RUN_AGAIN_WORDS =
  "The plan was run again in GitLab after this one was posted, so this approval does not count: vmbot posts the new plan for approval when it is ready.";

/** An approval of a plan whose apply job was canceled, failed or skipped in GitLab meanwhile. */
export function applySupersededWords(status: string): string {
  return `This plan can no longer be applied: its apply job is ${status} in GitLab. Run /vm create again for a fresh plan.`;
}

/** Destroy's Approve on a request that is not a destroy request. */
export const NOT_A_DESTROY_REQUEST =
  "This button belongs to a destroy request; this request is not one.";

const vm = (name: string) => `*${escapeMrkdwn(name)}*`;

/** A destroy approval whose destroy job was canceled, failed or skipped in GitLab meanwhile. */
export function destroySupersededWords(vmName: string, status: string): string {
  return `${vm(vmName)} cannot be destroyed by this request: its destroy job is ${status} in GitLab. Run /vm destroy again.`;
}

/**
 * An approval whose own reading or play of GitLab failed after vmbot had played its job all the
 * same (a tracker pass finishing the approval meanwhile).
 */
export function playedMeanwhileWords(kind: "apply" | "destroy", vmName: string): string {
  return `The ${kind} job of ${vm(vmName)} has started: your approval stands. (vmbot's own answer from GitLab was lost on the way; it started the job once, on another pass.)`;
}

/** The words of a destroy approval whose destroy job vmbot played, or tried to. */
export const destroyPlayWords = {
  notStarted: (vmName: string, why: string) =>
    `vmbot could not start the destroy job, so ${vm(vmName)} still awaits approval. ${why}`,
  confirmed: (vmName: string, job: Job) =>
    `GitLab was slow to answer, but it did start the destroy job of ${vm(vmName)} (${jobLink(job)}).`,
  unanswered: (vmName: string, why: string) =>
    `GitLab did not answer, and the destroy job of ${vm(vmName)} has not started, so it still awaits approval: approve again to retry. ${why}`,
  checking: () =>
    `Approved; vmbot is checking with GitLab whether the destroy job started (GitLab did not answer in time). This message updates when GitLab says.`,
  unknown: (vmName: string) =>
    `GitLab did not answer when vmbot started the destroy job of ${vm(vmName)}, nor when it looked again. Your approval stands; vmbot keeps checking and never plays it twice.`,
};
