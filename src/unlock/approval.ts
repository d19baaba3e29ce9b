import type { Access } from "../access.js";
import { approvalRuleFor, DEFAULT_RULE, tally, tallyWords } from "../policy/approvals.js";
import type { Ask } from "../policy/decide.js";
import type { AsyncStore } from "../store/async.js";
import { lapsedWords, unlockApprovalWords } from "../views/policy-words.js";

/**
 * An admin's Force-unlock under the policy's `unlock` rule: without one (or when the rule needs
 * one approval and the admin fills it) the lock is removed as before; otherwise each admin's
 * confirmation is recorded as an approval for the lock they saw, and the lock is removed on the
 * confirmation that meets the rule. A new lock starts with none.
 */

export interface UnlockApprovalDeps {
  access: Pick<Access, "policy" | "groupsOf">;
  store: Pick<AsyncStore, "approvals" | "audit">;
}

/** Unlocking is about a state, not a VM: no template, node or size conditions match it. */
const NO_VM: Ask = { template: "", node: "", cores: 0, memoryGib: 0, diskGib: 0 };

/** Approvals of an unlock are kept under the state and the lock's time. */
const keyOf = (state: string, lockedAt: string) => {
  const at = Date.parse(lockedAt);
  return { subject: `unlock:${state}`, key: Number.isNaN(at) ? 0 : at };
};

export type UnlockApproval = { kind: "met"; rule: string } | { kind: "waiting"; words: string };

/** Records `user`'s confirmation to unlock `state` (locked at `lockedAt`) and counts it. */
export async function approveUnlock(
  deps: UnlockApprovalDeps,
  user: string,
  state: string,
  lockedAt: string,
  now: Date,
): Promise<UnlockApproval> {
  const rule = approvalRuleFor(deps.access.policy(), "unlock", NO_VM);
  if (rule === DEFAULT_RULE) return { kind: "met", rule: "admins" };
  const groups = await deps.access.groupsOf(user);
  const { subject, key } = keyOf(state, lockedAt);
  const { approvals } = deps.store;
  await approvals.add({ requestId: subject, planJobId: key, user, groups, at: now.toISOString() });
  // Nobody asked for an unlock: there is no requester to keep out.
  const counted = tally(rule, await approvals.list(subject, key), "", [], now);
  const lapsed = counted.lapsed.map((a) => a.user);
  if (lapsed.length > 0) await approvals.remove(subject, key, lapsed);
  const words = tallyWords(counted);
  if (counted.met) return { kind: "met", rule: rule.name };
  const counts = counted.requirements.some((need) => need.by.includes(user));
  await deps.store.audit({
    requestId: null,
    actor: user,
    action: "unlock_approval_recorded",
    detail: { state, lockedAt, rule: rule.name, tally: words, counts },
  });
  const note = lapsed.length > 0 ? ` ${lapsedWords(lapsed, rule.lapse_after ?? "")}` : "";
  return { kind: "waiting", words: `${unlockApprovalWords(state, words, counts)}${note}` };
}
