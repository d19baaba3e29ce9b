import type { Access } from "../access.js";
import type { RequestRecord, Store } from "../store/store.js";
import {
  approvalNotCountingWords,
  approvalRecordedWords,
  earlierPlanResetWords,
  lapsedWords,
} from "../views/policy-words.js";
import { approvalRuleFor, tally, tallyWords } from "./approvals.js";
import { askOf } from "./usage.js";

/**
 * One approval click under the policy's approval rule: recorded for the plan job it was given on,
 * counted, and either enough (the caller plays the apply through its one conditional claim) or
 * shown on the message as what is still needed.
 */

export type ApprovalOutcome =
  | { kind: "met"; rule: string; tally: string }
  | { kind: "waiting"; words: string; request: RequestRecord | undefined };

const destructive = (request: RequestRecord) =>
  (request.review?.plan.resources ?? []).some(
    (resource) => resource.action === "delete" || resource.action === "replace",
  );

export async function recordApproval(
  deps: { access: Access; store: Store },
  request: RequestRecord,
  user: string,
  now: Date,
): Promise<ApprovalOutcome> {
  const review = request.review;
  const policy = deps.access.policy();
  const rule = approvalRuleFor(policy, "create", askOf(request.spec), destructive(request));
  if (review === null) return { kind: "met", rule: rule.name, tally: "" };
  const [groups, requesterGroups] = await Promise.all([
    deps.access.groupsOf(user),
    deps.access.groupsOf(request.requester),
  ]);
  // From here to the write below, nothing waits: clicks are counted one at a time.
  const { approvals } = deps.store;
  approvals.add({
    requestId: request.id,
    planJobId: review.planJobId,
    user,
    groups,
    at: now.toISOString(),
  });
  const given = approvals.list(request.id, review.planJobId);
  const counted = tally(rule, given, request.requester, requesterGroups, now);
  const notes: string[] = [];
  if (counted.lapsed.length > 0) {
    const users = counted.lapsed.map((a) => a.user);
    approvals.remove(request.id, review.planJobId, users);
    notes.push(lapsedWords(users, rule.lapse_after ?? ""));
  }
  if (approvals.earlier(request.id, review.planJobId)) notes.push(earlierPlanResetWords);
  const words = tallyWords(counted);
  if (counted.met) return { kind: "met", rule: rule.name, tally: words };
  const by = counted.requirements.flatMap((need) => need.by);
  const shown = deps.store.transition(request.id, ["awaiting_approval"], "awaiting_approval", {
    review: { ...review, approvals: { tally: words, by, notes } },
  });
  deps.store.audit({
    requestId: request.id,
    actor: user,
    action: "approval_recorded",
    detail: { rule: rule.name, tally: words, counts: by.includes(user) },
  });
  return {
    kind: "waiting",
    words: by.includes(user) ? approvalRecordedWords(words) : approvalNotCountingWords(words),
    request: shown,
  };
}
