import type { Allowance, Policy, PolicyFile, Quota, QuotaLimits } from "./schema.js";
import {
  gib,
  noAllowanceWords,
  nodeWords,
  notInRoleWords,
  plural,
  quotaWords,
  sizeWords,
  templateWords,
} from "../views/policy-words.js";

/**
 * The one decision function: who may do what, and whether a request is inside the policy and the
 * quotas. Pure: the person's groups and the quota use are worked out by the caller.
 */

export const POLICY_ACTIONS = [
  "create",
  "capacity",
  "list",
  "approve",
  "reject",
  "unlock",
  "destroy",
  "admin",
] as const;
export type PolicyAction = (typeof POLICY_ACTIONS)[number];

export type Role = "requester" | "approver" | "admin";

/** The role each action needs: capacity and the VM list are what a requester needs to choose. */
export const ACTION_ROLE: Record<PolicyAction, Role> = {
  create: "requester",
  capacity: "requester",
  list: "requester",
  approve: "approver",
  reject: "approver",
  unlock: "admin",
  /** Destroying any VM; a VM's owner may always ask to destroy their own. */
  destroy: "admin",
  admin: "admin",
};

/** What a request asks for, in the units the policy speaks. */
export interface Ask {
  template: string;
  node: string;
  cores: number;
  memoryGib: number;
  diskGib: number;
}

export interface Usage {
  vms: number;
  cores: number;
  memoryGib: number;
  diskGib: number;
}

export const NO_USAGE: Usage = { vms: 0, cores: 0, memoryGib: 0, diskGib: 0 };

/** What the person (and each of their groups, together) holds: live VMs and requests in flight. */
export interface QuotaState {
  person: Usage;
  /** By policy group name; `everyone` is every VM. Missing means none held. */
  groups: Readonly<Record<string, Usage>>;
}

export interface DecisionInput {
  person: string;
  /** The policy groups the person belongs to (user groups already expanded). */
  groups: readonly string[];
  action: PolicyAction;
  /** For create: the request, checked against what the person may ask and their quotas. */
  request?: Ask;
  quota?: QuotaState;
}

/** The form field a refusal belongs under. */
export type DecisionField = "template" | "node" | "cores" | "memory" | "disk" | "name";

export interface PolicyDecision {
  allowed: boolean;
  /** What the person is shown (for an allow, what allowed it). */
  reason: string;
  /** The rule that decided, e.g. `roles.requesters`, `requests.0`, `quotas.1`. */
  rule: string;
  field?: DecisionField;
}

/** Whether one of `groups` is among `names`: `everyone` takes in anybody, as does no list. */
export const inGroups = (names: readonly string[] | undefined, groups: readonly string[]) =>
  names === undefined || names.some((name) => name === "everyone" || groups.includes(name));

const roleGroups = (policy: PolicyFile, role: Role) =>
  role === "requester"
    ? policy.roles.requesters
    : role === "approver"
      ? policy.roles.approvers
      : policy.roles.admins;

export const adminGroups = (policy: PolicyFile) => [...policy.roles.admins];

const roleKey = { requester: "requesters", approver: "approvers", admin: "admins" } as const;

function sizeProblem(
  entry: Allowance,
  ask: Ask,
  admins: string[],
): { reason: string; field: DecisionField } | undefined {
  if (entry.templates !== undefined && !entry.templates.includes(ask.template)) {
    return { reason: templateWords(ask.template, entry.templates, admins), field: "template" };
  }
  if (entry.nodes !== undefined && !entry.nodes.includes(ask.node)) {
    return { reason: nodeWords(ask.node, entry.nodes, admins), field: "node" };
  }
  const max = entry.max ?? {};
  if (max.cores !== undefined && ask.cores > max.cores) {
    const limit = plural(max.cores, "core");
    return { reason: sizeWords("cores", plural(ask.cores, "core"), limit, admins), field: "cores" };
  }
  if (max.memory_gib !== undefined && ask.memoryGib > max.memory_gib) {
    const words = sizeWords("memory", gib(ask.memoryGib), gib(max.memory_gib), admins);
    return { reason: words, field: "memory" };
  }
  if (max.disk_gib !== undefined && ask.diskGib > max.disk_gib) {
    const words = sizeWords("disk", gib(ask.diskGib), gib(max.disk_gib), admins);
    return { reason: words, field: "disk" };
  }
  return undefined;
}

/** The first limit of `quota` that holding `held` plus `ask` goes over. */
function quotaProblem(
  quota: Quota,
  held: Usage,
  ask: Ask,
  admins: string[],
): { reason: string; field: DecisionField } | undefined {
  const max: QuotaLimits = quota.max;
  const scope = quota.per === "person" ? "you" : `the ${quota.group} group`;
  const after: Usage = {
    vms: held.vms + 1,
    cores: held.cores + ask.cores,
    memoryGib: held.memoryGib + ask.memoryGib,
    diskGib: held.diskGib + ask.diskGib,
  };
  const words = (limit: string, total: string) => quotaWords(scope, limit, held, total, admins);
  if (max.vms !== undefined && after.vms > max.vms) {
    return { reason: words(plural(max.vms, "VM"), plural(after.vms, "VM")), field: "name" };
  }
  if (max.cores !== undefined && after.cores > max.cores) {
    const reason = words(plural(max.cores, "core"), plural(after.cores, "core"));
    return { reason, field: "cores" };
  }
  if (max.memory_gib !== undefined && after.memoryGib > max.memory_gib) {
    const reason = words(gib(max.memory_gib), gib(after.memoryGib));
    return { reason, field: "memory" };
  }
  if (max.disk_gib !== undefined && after.diskGib > max.disk_gib) {
    return {
      reason: words(gib(max.disk_gib), gib(after.diskGib)),
      field: "disk",
    };
  }
  return undefined;
}

/** Whether `input.person` may take `input.action` (with its request), why, and by which rule. */
export function decide(policy: Policy, input: DecisionInput): PolicyDecision {
  const role = ACTION_ROLE[input.action];
  const allowedGroups = roleGroups(policy, role);
  const roleRule = `roles.${roleKey[role]}`;
  if (!inGroups(allowedGroups, input.groups)) {
    return { allowed: false, reason: notInRoleWords(role, allowedGroups ?? []), rule: roleRule };
  }
  if (input.action !== "create" || input.request === undefined) {
    return { allowed: true, reason: `allowed by ${roleRule}`, rule: roleRule };
  }
  const ask = input.request;
  const admins = adminGroups(policy);
  if (policy.requests.length > 0) {
    const mine = policy.requests
      .map((entry, index) => ({ entry, index }))
      .filter(({ entry }) => inGroups([entry.group], input.groups));
    if (mine.length === 0) {
      return { allowed: false, reason: noAllowanceWords(admins), rule: "requests", field: "name" };
    }
    const fits = mine.find(({ entry }) => sizeProblem(entry, ask, admins) === undefined);
    if (fits === undefined) {
      // The refusal of the first rule that is theirs: the most likely one they meant.
      const [first] = mine;
      const problem = first === undefined ? undefined : sizeProblem(first.entry, ask, admins);
      if (first !== undefined && problem !== undefined) {
        return { allowed: false, ...problem, rule: `requests.${String(first.index)}` };
      }
    }
    const quota = quotaCheck(policy, input, ask, admins);
    const index = fits?.index ?? 0;
    return (
      quota ?? {
        allowed: true,
        reason: "inside the policy",
        rule: `requests.${String(index)}`,
      }
    );
  }
  return (
    quotaCheck(policy, input, ask, admins) ?? {
      allowed: true,
      reason: "inside the policy",
      rule: roleRule,
    }
  );
}

function quotaCheck(
  policy: Policy,
  input: DecisionInput,
  ask: Ask,
  admins: string[],
): PolicyDecision | undefined {
  for (const [index, quota] of policy.quotas.entries()) {
    if (!inGroups([quota.group], input.groups)) continue;
    const held =
      quota.per === "person"
        ? (input.quota?.person ?? NO_USAGE)
        : (input.quota?.groups[quota.group] ?? NO_USAGE);
    const problem = quotaProblem(quota, held, ask, admins);
    if (problem) return { allowed: false, ...problem, rule: `quotas.${String(index)}` };
  }
  return undefined;
}
