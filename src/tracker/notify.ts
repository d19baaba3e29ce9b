import type { Config } from "../config.js";
import type { ThreadPoster } from "../slack/thread.js";
import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import { destroyApproversWords } from "../views/destroy.js";
import { extensionApproversWords } from "../views/extend.js";
import { approverMentions, approversCalledWords, requesterToldWords } from "../views/notify.js";

/**
 * Calls people in when it is their turn: the approvers when a plan waits for them (once per
 * plan: a plan run again calls them again), the requester when the request ends (once). Each is
 * a thread reply posted exactly once (the effects journal and the reply's metadata), so calling
 * this after every render is safe.
 */
export type Notifier = (request: RequestRecord) => Promise<void>;

const APPROVERS_STEP = "notify_approvers";
const REQUESTER_STEP = "notify_requester";

/** The notice due for `request` as it stands: its journal step, or undefined when none is. */
function dueStep(request: RequestRecord): string | undefined {
  if (request.status === "awaiting_approval" && request.review !== null) {
    return `${APPROVERS_STEP}:${request.review.planJobId}`;
  }
  if (request.status === "awaiting_approval" && request.kind !== "create") {
    return `${APPROVERS_STEP}:${request.kind}`;
  }
  return requesterToldWords(request) === undefined ? undefined : requesterStep(request);
}

/** Once per request, and once more for each end after a Retry configure. */
const requesterStep = (request: RequestRecord) =>
  request.failure?.retries === undefined
    ? REQUESTER_STEP
    : `${REQUESTER_STEP}:${request.failure.retries}`;

/**
 * Notices whose post was cut short (Slack refused or did not answer, or the bot stopped): posted
 * now, or found already in the thread; a notice no longer due (the plan was decided) is dropped.
 */
export async function finishNotices(store: AsyncStore, notify: Notifier): Promise<void> {
  for (const effect of await store.pendingEffects()) {
    if (!effect.step.startsWith("reply_notify_")) continue;
    const request = await store.getRequest(effect.subject);
    if (request === undefined || `reply_${dueStep(request) ?? ""}` !== effect.step) {
      await store.complete(effect.subject, effect.step, { abandoned: "no longer due" });
      continue;
    }
    await notify(request);
  }
}

export function createNotifier(deps: { config: Config; post: ThreadPoster }): Notifier {
  const { access } = deps.config;
  return async (request) => {
    if (request.status === "awaiting_approval" && request.review !== null) {
      if (!access.notifyApprovers) return;
      // Who the plan's approval rule lets approve, its requester already left out unless the
      // rule lets them; for plans reviewed before that was recorded, the approvers' list.
      const recorded = request.review.approvers;
      const mentions = approverMentions(
        recorded ?? access.approvers,
        recorded !== undefined || access.allowSelfApproval ? undefined : request.requester,
      );
      if (mentions.length === 0) return;
      await deps.post(
        request,
        `${APPROVERS_STEP}:${request.review.planJobId}`,
        approversCalledWords(request, mentions, request.review.expiresAt),
      );
      return;
    }
    if (request.status === "awaiting_approval" && request.kind !== "create") {
      if (!access.notifyApprovers) return;
      const recorded = request.approvals?.approvers;
      const mentions = approverMentions(
        recorded ?? access.approvers,
        recorded !== undefined || access.allowSelfApproval ? undefined : request.requester,
      );
      if (mentions.length === 0) return;
      const words =
        request.kind === "destroy"
          ? destroyApproversWords(request, mentions)
          : extensionApproversWords(request, mentions);
      await deps.post(request, `${APPROVERS_STEP}:${request.kind}`, words);
      return;
    }
    const words = requesterToldWords(request);
    if (words !== undefined) await deps.post(request, requesterStep(request), words);
  };
}

/** Until when a plan reviewed at `reviewedAt` may be approved. */
export function approvalDeadline(reviewedAt: string, planTtlMs: number): string {
  return new Date(Date.parse(reviewedAt) + planTtlMs).toISOString();
}
