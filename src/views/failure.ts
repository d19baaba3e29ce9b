import { REQUEST_PLAN_AGAIN, REQUEST_RETRY_CONFIGURE } from "../ids.js";
import { escapeMrkdwn, link, truncate } from "../slack/mrkdwn.js";
import type { RequestRecord } from "../store/store.js";
import type { FailureFinding } from "../tracker/failure-cause.js";
import { whoMay } from "./refusals.js";

/**
 * A failure in words a person can act on: its cause in one sentence, the excerpt of the log that
 * shows it (in the thread, not the channel), and the next step as a button where there is one.
 */

/** The cause of a failed job in one sentence. */
export function causeWords(finding: FailureFinding): string {
  switch (finding.cause) {
    case "state_auth":
      return "GitLab refused the Terraform state lock to the job: the user whose token started the pipeline (the bot's) must be a Maintainer of the project.";
    case "state_locked": {
      const who = finding.lockedBy === undefined ? "" : ` by ${escapeMrkdwn(finding.lockedBy)}`;
      return `The Terraform state is locked${who}: an admin can clear a stuck lock with \`/vm unlock\`, then run the request again.`;
    }
    case "unreachable":
      return "Ansible could not reach the VM over SSH: it may still be booting, or its address, gateway or VLAN do not let the runner in.";
    case "vault_denied":
      return "Vault refused the job's token (permission denied): its Vault role or policy must allow reading the secrets the pipeline uses.";
    case "timeout":
      return "The job ran longer than its time limit in GitLab and was stopped.";
    case "terraform_error":
      return `Terraform stopped on an error from the provider or its API: ${escapeMrkdwn(truncate(finding.summary ?? "", 300))}.`;
  }
}

const STAGE_JOB: Record<"plan" | "apply" | "configure", string> = {
  plan: "plan",
  apply: "apply",
  configure: "configure",
};

/** The request message's line for a failed or canceled job: what, why, and its log. */
export function jobFailedWords(
  stage: "plan" | "apply" | "configure",
  job: { name: string; status: string; webUrl: string },
  cause: string | undefined,
): string {
  const status = job.status === "canceled" ? "was canceled" : "failed";
  const next =
    stage === "configure"
      ? " The VM exists: the failed task is in the thread."
      : " The error is in the thread.";
  return `The ${STAGE_JOB[stage]} job \`${escapeMrkdwn(job.name)}\` ${status} in GitLab. ${link(job.webUrl, "Open its log")}.${cause === undefined ? "" : ` ${cause}`}${next}`;
}

/** In the thread: the part of the log that shows the failure, as a code block. */
export function failureExcerptWords(
  kind: "error" | "tail",
  excerpt: string,
  cutNote: string | undefined,
): string {
  const head = kind === "error" ? ":x: Terraform's error:" : ":x: The last lines of the job's log:";
  // The log is outside text: escaped, so it can neither mention nor close the code block.
  return `${head}\n${cutNote === undefined ? "" : `${cutNote}\n`}\`\`\`${escapeMrkdwn(truncate(excerpt, 2_800))}\`\`\``;
}

/** The next step a failed request offers, if any. */
export function nextStep(request: RequestRecord): "retry_configure" | "plan_again" | undefined {
  if (request.status !== "failed" || request.failure === null) return undefined;
  if (request.failure.stage === "configure") {
    return request.failure.destroyedBy === undefined ? "retry_configure" : undefined;
  }
  if (request.failure.stage === "plan" && request.failure.again === undefined) return "plan_again";
  return undefined;
}

/** The button of a failed request's next step; it carries only the request ID. */
export function nextStepButton(request: RequestRecord) {
  const step = nextStep(request);
  if (step === "retry_configure") {
    return {
      type: "button" as const,
      action_id: REQUEST_RETRY_CONFIGURE,
      text: { type: "plain_text" as const, text: "Retry configure" },
      value: request.id,
      style: "primary" as const,
    };
  }
  if (step === "plan_again") {
    return {
      type: "button" as const,
      action_id: REQUEST_PLAN_AGAIN,
      text: { type: "plain_text" as const, text: "Plan again" },
      value: request.id,
    };
  }
  return undefined;
}

/** Under a failed request whose plan was run again: where to follow the new one. */
export function plannedAgainWords(request: RequestRecord): string | undefined {
  const again = request.failure?.again;
  if (again === undefined) return undefined;
  return `:mag: <@${again.by}> planned this again as request \`${escapeMrkdwn(again.requestId)}\`.`;
}

/** The status line of a request whose configure job failed, once its VM was destroyed. */
export function destroyedSinceError(request: RequestRecord): string {
  return `The configure job failed in GitLab, and ${escapeMrkdwn(request.spec.name)} has been destroyed since: there is nothing left to configure.`;
}

/** Under a request whose configure job failed, once its VM was destroyed: by which request. */
export function destroyedSinceWords(request: RequestRecord): string | undefined {
  const by = request.failure?.destroyedBy;
  if (by === undefined) return undefined;
  return `:wastebasket: Destroyed by request \`${escapeMrkdwn(by)}\`.`;
}

/** The first note of a request planned again from a failed one. */
export function plannedFromNote(previous: RequestRecord): string {
  return `Planned again from request ${previous.id}, which failed at its plan.`;
}

/** In the old request's thread: the new request's message, linked. */
export function plannedAgainReply(by: string, next: RequestRecord, permalink?: string): string {
  const where = permalink === undefined ? `\`${next.id}\`` : link(permalink, `request ${next.id}`);
  return `:mag: <@${by}> planned ${escapeMrkdwn(next.spec.name)} again with the same inputs: follow ${where}.`;
}

/** To a clicker who may not retry this request's configuration. */
export function notYoursToRetry(request: RequestRecord, approvers: readonly string[]): string {
  return `Only <@${request.requester}>, who asked for ${escapeMrkdwn(request.spec.name)}, or an approver (${whoMay(approvers)}) can retry its configuration.`;
}

/**
 * To a Retry configure click on a request whose VM is gone (destroyed, or made again by another
 * request), or being destroyed: configuring it again would run Ansible at an address that is
 * not this VM's any more.
 */
export function retryVmGoneWords(request: RequestRecord, destroying: boolean): string {
  const name = escapeMrkdwn(request.spec.name);
  return destroying
    ? `${name} is being destroyed, so its configuration is not run again.`
    : `${name} is no longer the VM this request made (it was destroyed, or asked for again since), so there is nothing to configure.`;
}

/** To a clicker who may not plan this request again. */
export function notYoursToPlanAgain(request: RequestRecord): string {
  return `Only <@${request.requester}>, who asked for ${escapeMrkdwn(request.spec.name)}, can plan it again. You can ask for your own VM with /vm create.`;
}

/** The clicked request has no such next step (any more). */
export function noNextStepWords(request: RequestRecord, step: "retry" | "again"): string {
  const what = step === "retry" ? "retry its configuration" : "plan it again";
  const again = request.failure?.again;
  if (step === "again" && again !== undefined) {
    return `${escapeMrkdwn(request.spec.name)} was planned again already, as request \`${escapeMrkdwn(again.requestId)}\`: follow that one.`;
  }
  if (step === "retry" && request.failure?.destroyedBy !== undefined) {
    return retryVmGoneWords(request, false);
  }
  if (request.status !== "failed") {
    return `${escapeMrkdwn(request.spec.name)} is ${request.status.replace("_", " ")} now: there is nothing to ${what} for.`;
  }
  return `There is no way to ${what} for ${escapeMrkdwn(request.spec.name)} from here.`;
}

/** In the thread when the configure job is run again. */
export function retryStartedWords(by: string, job: { id: number; webUrl: string }): string {
  return `:wrench: <@${by}> retried the configuration: GitLab runs it again as ${link(job.webUrl, `job #${job.id}`)}.`;
}

/** To the clicker when GitLab did not run the configure job again. */
export function retryRefusedWords(request: RequestRecord, why: string): string {
  return `GitLab did not run the configuration of ${escapeMrkdwn(request.spec.name)} again, so it is still failed. ${why}`;
}

/** The request message's line when a retry was not taken: still failed, with the reason. */
export function retryNotTakenWords(why: string): string {
  return `The configure job failed in GitLab, and GitLab did not run it again. ${why} The VM exists: press Retry configure to try once more.`;
}

/** To the clicker when GitLab's answer to the retry was lost and reading the job back failed too. */
export function retryUnknownWords(request: RequestRecord): string {
  return `GitLab did not answer whether it runs the configuration of ${escapeMrkdwn(request.spec.name)} again. vmbot checks the pipeline and follows the new job when it appears; it does not retry twice.`;
}
