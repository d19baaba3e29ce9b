import type { Ask } from "./decide.js";
import { durationMs, type ApprovalRule, type Condition, type PolicyFile } from "./schema.js";

/**
 * Which approvals a request needs (the first approval rule whose condition it meets), and whether
 * the approvals given so far meet it. Pure, like the decision function.
 */

export type ApprovalAction = ApprovalRule["action"];

/** When no rule matches: one approval from anyone the policy lets approve. */
export const DEFAULT_RULE: ApprovalRule = {
  name: "default",
  action: "create",
  require: [{ group: "everyone", count: 1 }],
  requester_group_may_approve: true,
  self_approval: false,
};

function matches(when: Condition | undefined, ask: Ask, destructive: boolean): boolean {
  if (when === undefined) return true;
  if (when.templates !== undefined && !when.templates.includes(ask.template)) return false;
  if (when.nodes !== undefined && !when.nodes.includes(ask.node)) return false;
  if (when.cores_over !== undefined && !(ask.cores > when.cores_over)) return false;
  if (when.memory_gib_over !== undefined && !(ask.memoryGib > when.memory_gib_over)) return false;
  if (when.disk_gib_over !== undefined && !(ask.diskGib > when.disk_gib_over)) return false;
  if (when.destructive !== undefined && when.destructive !== destructive) return false;
  return true;
}

/** The rule that decides which approvals `ask` needs: the first that matches, in file order. */
export function approvalRuleFor(
  policy: PolicyFile,
  action: ApprovalAction,
  ask: Ask,
  destructive = false,
): ApprovalRule {
  return (
    policy.approvals.find(
      (rule) => rule.action === action && matches(rule.when, ask, destructive),
    ) ?? DEFAULT_RULE
  );
}

export interface GivenApproval {
  user: string;
  /** The policy groups the approver was in when they approved. */
  groups: readonly string[];
  /** ISO 8601. */
  at: string;
}

export interface RequirementTally {
  group: string;
  count: number;
  /** Approvers counted toward this requirement. */
  by: string[];
}

export interface Tally {
  rule: string;
  requirements: RequirementTally[];
  met: boolean;
  /** Approvals that no longer count because they are older than the rule allows. */
  lapsed: GivenApproval[];
}

/** Whether `approval` may fill a place of `group` under `rule`, for a request by `requester`. */
export function counts(
  rule: ApprovalRule,
  group: string,
  approval: Pick<GivenApproval, "user" | "groups">,
  requester: string,
  requesterGroups: readonly string[],
): boolean {
  if (approval.user === requester && !rule.self_approval) return false;
  if (group !== "everyone" && !approval.groups.includes(group)) return false;
  if (
    !rule.requester_group_may_approve &&
    group !== "everyone" &&
    requesterGroups.includes(group)
  ) {
    return approval.user === requester && rule.self_approval;
  }
  return true;
}

/**
 * Counts `approvals` toward `rule`'s requirements: each approver fills at most one place, and the
 * places are filled so that as many as possible are (a matching), whatever order they came in.
 */
export function tally(
  rule: ApprovalRule,
  approvals: readonly GivenApproval[],
  requester: string,
  requesterGroups: readonly string[],
  now: Date,
): Tally {
  const lapseMs = rule.lapse_after === undefined ? undefined : durationMs(rule.lapse_after);
  const lapsed = approvals.filter(
    (a) => lapseMs !== undefined && now.getTime() - Date.parse(a.at) >= lapseMs,
  );
  const fresh = approvals.filter((a) => !lapsed.includes(a));
  // One approval per person: the first they gave.
  const people = fresh.filter((a, i) => fresh.findIndex((b) => b.user === a.user) === i);
  const slots = rule.require.flatMap((need, r) =>
    Array.from({ length: need.count }, () => ({ r, group: need.group })),
  );
  const holder: (number | undefined)[] = slots.map(() => undefined);
  const fits = (p: number, s: number) => {
    const person = people[p];
    const slot = slots[s];
    return (
      person !== undefined &&
      slot !== undefined &&
      counts(rule, slot.group, person, requester, requesterGroups)
    );
  };
  const place = (p: number, seen: Set<number>): boolean => {
    for (let s = 0; s < slots.length; s += 1) {
      if (seen.has(s) || !fits(p, s)) continue;
      seen.add(s);
      const current = holder[s];
      if (current === undefined || place(current, seen)) {
        holder[s] = p;
        return true;
      }
    }
    return false;
  };
  people.forEach((_, p) => {
    place(p, new Set());
  });
  const requirements = rule.require.map((need, r) => ({
    group: need.group,
    count: need.count,
    by: slots.flatMap((slot, s) => {
      const person = people[holder[s] ?? -1];
      return slot.r === r && person !== undefined ? [person.user] : [];
    }),
  }));
  return {
    rule: rule.name,
    requirements,
    met: requirements.every((need) => need.by.length >= need.count),
    lapsed,
  };
}

/** "1 of 2 approvals: 1 of 1 from platform, 0 of 1 from security" */
export function tallyWords(result: Tally): string {
  const given = result.requirements.reduce(
    (n, need) => n + Math.min(need.by.length, need.count),
    0,
  );
  const needed = result.requirements.reduce((n, need) => n + need.count, 0);
  const parts = result.requirements.map(
    (need) =>
      `${String(need.by.length)} of ${String(need.count)} from ${need.group === "everyone" ? "the approvers" : need.group}`,
  );
  return `${String(given)} of ${String(needed)} approvals: ${parts.join(", ")}`;
}
