import type { Access } from "../access.js";
import { approvalKey, ruleOf } from "../policy/approval-step.js";
import { tally, type GivenApproval, type Tally } from "../policy/approvals.js";
import type { AsyncStore } from "../store/async.js";
import type { RequestRecord } from "../store/store.js";

/**
 * "Waiting for your approval" on the Home: the requests waiting for approval where this person's
 * approval would fill a place the request's rule still has open. Not one they may not approve
 * (the rule's groups, its self-approval and requester-group settings), not one they approved
 * already, not one whose places for their groups are filled.
 */

export interface QueueDeps {
  store: Pick<AsyncStore, "listByStatus" | "approvals">;
  access: Pick<Access, "policy" | "groupsOf">;
}

/** Whether `user` holds the approver role, without auditing a "no" as a refusal. */
export async function isApprover(access: QueueDeps["access"], user: string): Promise<boolean> {
  const names = access.policy().roles.approvers;
  if (names.includes("everyone")) return true;
  const groups = await access.groupsOf(user);
  return names.some((name) => groups.includes(name));
}

const filled = (counted: Tally) =>
  counted.requirements.reduce((n, need) => n + Math.min(need.by.length, need.count), 0);

/** Whether an approval by `user` (in `groups`) now would fill one more place of `request`'s rule. */
async function wouldCount(
  deps: QueueDeps,
  request: RequestRecord,
  user: string,
  groups: readonly string[],
  now: Date,
): Promise<boolean> {
  const rule = ruleOf(deps.access.policy(), request);
  const key = approvalKey(request);
  const given: GivenApproval[] =
    key === undefined ? [] : await deps.store.approvals.list(request.id, key);
  if (given.some((approval) => approval.user === user)) return false;
  const requesterGroups = await deps.access.groupsOf(request.requester);
  const before = tally(rule, given, request.requester, requesterGroups, now);
  const mine = { user, groups, at: now.toISOString() };
  const after = tally(rule, [...given, mine], request.requester, requesterGroups, now);
  return filled(after) > filled(before);
}

/** The requests waiting for `user`'s approval, oldest first; undefined when they approve nothing. */
export async function approvalQueue(
  deps: QueueDeps,
  user: string,
  now: Date,
): Promise<RequestRecord[] | undefined> {
  if (!(await isApprover(deps.access, user))) return undefined;
  const groups = await deps.access.groupsOf(user);
  const waiting = await deps.store.listByStatus(["awaiting_approval"]);
  const mine: RequestRecord[] = [];
  for (const request of waiting) {
    if (await wouldCount(deps, request, user, groups, now)) mine.push(request);
  }
  return mine;
}

/** What a queue holds, to tell whether it changed since the Home last showed it. */
export const queueSignature = (queue: readonly RequestRecord[] | undefined) =>
  queue === undefined ? "" : queue.map((request) => request.id).join(",");
