import type { RequestRecord } from "../store/store.js";

/**
 * What the bot says about a request outside its message's status: a request it could not post,
 * a pipeline it took after a restart, an apply it could not start, a cancel that did not take,
 * a pipeline GitLab created late.
 */

/** The request message could not be posted, so nothing was started. */
export function notPostedWords(request: RequestRecord, reason: string | undefined): string {
  return reason === "not_in_channel" || reason === "channel_not_found"
    ? `vmbot could not post your request for ${request.spec.name} in <#${request.channel}> (${reason}): invite it with \`/invite @vmbot\` and run /vm create again. No pipeline was started.`
    : `vmbot could not post your request for ${request.spec.name} (${reason ?? "Slack error"}), so no pipeline was started. Please try again.`;
}

/** After a restart, with requests not tagged, the first pipeline since was taken as this one. */
export function tookFirstPipelineNote(pipelineId: number): string {
  return `vmbot restarted while starting this request and took pipeline #${pipelineId}, the first one created after it, as its own: check that it is.`;
}

/** Self-approval is not allowed. */
export function anotherApproverWords(name: string, verb: "approve" | "reject"): string {
  return `You asked for ${name}, so another approver must ${verb} it.`;
}

/** The apply job could not be started: the approval is released. */
export function applyNotStartedWords(name: string, why: string): string {
  return `vmbot could not start the apply job, so ${name} still awaits approval. ${why}`;
}

/** A closed request's pipeline is still running after the cancel. */
export function notCanceledWords(status: string, webUrl: string | undefined): string {
  return `its pipeline is ${status} in GitLab, not canceled${webUrl === undefined ? "" : `: <${webUrl}|check it>`}.`;
}

/** The cancel of a closed request's pipeline failed: refused, or not answered yet. */
export function cancelFailedWords(refused: boolean, why: string): string {
  return refused
    ? `GitLab refused to cancel its pipeline. ${why}`
    : `vmbot could not cancel its pipeline yet; it keeps trying in the background. ${why}`;
}

/** GitLab created a pipeline for this request late, and the bot canceled it. */
export function latePipelineWords(lateId: number, kept: number | null): string {
  return kept === null
    ? `:warning: GitLab created pipeline #${lateId} for this request after vmbot had given up waiting for it. The request had ended, so vmbot canceled it.`
    : `:warning: GitLab created a second pipeline for this request late (#${lateId}), after vmbot had started #${kept}. vmbot follows #${kept} and canceled #${lateId}.`;
}

/** How a PLAN_TTL reads to people: 24 h, 90 min, 2 d. */
export function ttlWords(ms: number): string {
  if (ms % 86_400_000 === 0 && ms >= 2 * 86_400_000) return `${ms / 86_400_000} d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  return `${Math.round(ms / 60_000)} min`;
}

/** What an expired request says. */
export function expiredWords(planTtlMs: number): string {
  return `This plan waited longer than PLAN_TTL (${ttlWords(planTtlMs)}) for approval and can no longer be applied: run /vm create again for a fresh plan.`;
}

/** The apply job stopped in GitLab while the plan waited here. */
export function applyStoppedWords(status: string): string {
  return `The apply job was ${status} in GitLab before anyone approved here.`;
}

export function pipelineDeletedWords(pipelineId: number): string {
  return `Pipeline #${pipelineId} no longer exists in GitLab (it was deleted), so nothing more will happen for this request. Run /vm create again if the VM is still needed.`;
}

/** Shown in `/vm list` for a VM whose Terraform state disappeared. */
export function stateRemovedWords(state: string): string {
  return `Its Terraform state ${state} is no longer in GitLab: it was removed outside vmbot, so the VM may be gone too.`;
}
