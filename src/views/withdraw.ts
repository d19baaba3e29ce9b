import type { RequestRecord } from "../store/store.js";
import { escapeMrkdwn } from "../slack/mrkdwn.js";

/** The words of Withdraw, said privately to whoever clicked. */

const vm = (request: RequestRecord) => `*${escapeMrkdwn(request.spec.name)}*`;

/** Someone other than the requester clicked Withdraw. */
export function notYoursToWithdraw(request: RequestRecord): string {
  return `Only <@${request.requester}>, who asked for ${vm(request)}, can withdraw it. An approver can reject its plan instead.`;
}

/** The request has no pipeline yet: there is nothing to cancel for a moment. */
export function stillStartingWords(request: RequestRecord): string {
  return `vmbot is still starting the pipeline of ${vm(request)}; withdraw it again in a moment.`;
}

/** The request is withdrawn, but GitLab did not do all of it. */
export function withdrawProblemWords(problem: string): string {
  return `The request is withdrawn, but ${problem}`;
}
