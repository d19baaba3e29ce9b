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
