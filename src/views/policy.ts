import type { Usage } from "../policy/decide.js";
import type { ApprovalRule, Policy } from "../policy/schema.js";
import { escapeMrkdwn } from "../slack/mrkdwn.js";
import { gib, plural } from "./policy-words.js";

/** `/vm policy`: what a person may ask for, their quota use, and the approvals their requests need. */

const or = (names: readonly string[] | undefined, all: string) =>
  names === undefined ? all : names.map(escapeMrkdwn).join(", ");

function sizeLimit(max: { cores?: number; memory_gib?: number; disk_gib?: number } | undefined) {
  const parts = [
    max?.cores === undefined ? undefined : plural(max.cores, "core"),
    max?.memory_gib === undefined ? undefined : `${gib(max.memory_gib)} memory`,
    max?.disk_gib === undefined ? undefined : `${gib(max.disk_gib)} disk`,
  ].filter((part): part is string => part !== undefined);
  return parts.length === 0 ? "any size" : `up to ${parts.join(", ")} per VM`;
}

/** A rule's action as a person reads it; a lease extension says where it is asked for. */
const ACTION_WORDS: Record<ApprovalRule["action"], string> = {
  create: "create",
  destroy: "destroy",
  unlock: "unlock",
  extend: "a lease past the maximum (*Ask for…* in the lease reminder or on the Home tab)",
};

function ruleWords(rule: ApprovalRule): string {
  const when = rule.when;
  const conditions = [
    when?.templates === undefined ? undefined : `template ${when.templates.join(" or ")}`,
    when?.nodes === undefined ? undefined : `node ${when.nodes.join(" or ")}`,
    when?.cores_over === undefined ? undefined : `more than ${plural(when.cores_over, "core")}`,
    when?.memory_gib_over === undefined
      ? undefined
      : `more than ${gib(when.memory_gib_over)} memory`,
    when?.disk_gib_over === undefined ? undefined : `more than ${gib(when.disk_gib_over)} disk`,
    when?.destructive === true ? "a plan that destroys or replaces" : undefined,
  ].filter((part): part is string => part !== undefined);
  const needs = rule.require
    .map(
      (need) =>
        `${String(need.count)} from ${need.group === "everyone" ? "any approver" : need.group}`,
    )
    .join(" and ");
  const lapse = rule.lapse_after === undefined ? "" : `; approvals lapse after ${rule.lapse_after}`;
  return `• ${ACTION_WORDS[rule.action]}${conditions.length === 0 ? "" : ` with ${conditions.join(", ")}`}: ${needs}${lapse}`;
}

function usageWords(
  used: Usage,
  max: { vms?: number; cores?: number; memory_gib?: number; disk_gib?: number },
) {
  return [
    max.vms === undefined ? undefined : `${String(used.vms)} of ${plural(max.vms, "VM")}`,
    max.cores === undefined ? undefined : `${String(used.cores)} of ${plural(max.cores, "core")}`,
    max.memory_gib === undefined
      ? undefined
      : `${gib(used.memoryGib)} of ${gib(max.memory_gib)} memory`,
    max.disk_gib === undefined ? undefined : `${gib(used.diskGib)} of ${gib(max.disk_gib)} disk`,
  ]
    .filter((part): part is string => part !== undefined)
    .join(", ");
}

export interface PolicyView {
  policy: Policy;
  groups: readonly string[];
  mayRequest: boolean;
  admin: boolean;
  person: Usage;
  groupUse: Readonly<Record<string, Usage>>;
}

export function policyText(view: PolicyView): string {
  const { policy, groups } = view;
  const lines: string[] = [
    `*Your groups:* ${groups.length === 0 ? "none" : groups.map(escapeMrkdwn).join(", ")}`,
  ];
  if (!view.mayRequest) {
    lines.push("You may not ask for VMs.");
  } else {
    const mine = policy.requests.filter((r) => r.group === "everyone" || groups.includes(r.group));
    lines.push("*What you may ask for:*");
    if (policy.requests.length === 0) lines.push("• any template, node and size");
    else if (mine.length === 0) lines.push("• nothing: no rule of the policy names your groups");
    for (const entry of mine) {
      lines.push(
        `• as ${escapeMrkdwn(entry.group)}: templates ${or(entry.templates, "any")}; nodes ${or(entry.nodes, "any")}; ${sizeLimit(entry.max)}`,
      );
    }
    const quotas = policy.quotas.filter((q) => q.group === "everyone" || groups.includes(q.group));
    lines.push("*Your quota use* (live VMs and requests on their way):");
    if (quotas.length === 0) lines.push("• no quota");
    for (const quota of quotas) {
      const used =
        quota.per === "person" ? view.person : (view.groupUse[quota.group] ?? view.person);
      const scope = quota.per === "person" ? "you" : `${escapeMrkdwn(quota.group)} together`;
      lines.push(`• ${scope}: ${usageWords(used, quota.max)}`);
    }
    lines.push("*Approvals your requests need* (the first rule that matches):");
    for (const rule of policy.approvals) lines.push(ruleWords(rule));
    lines.push("• otherwise: 1 from any approver");
  }
  if (view.admin) {
    lines.push(`*The whole policy* (${escapeMrkdwn(policy.source)}):`);
    for (const [name, ids] of Object.entries(policy.groups)) {
      lines.push(
        `• group ${escapeMrkdwn(name)}: ${ids.map((id) => (id.startsWith("S") ? `<!subteam^${id}>` : `<@${id}>`)).join(", ")}`,
      );
    }
    lines.push(
      `• requesters: ${or(policy.roles.requesters, "everyone")}; approvers: ${or(policy.roles.approvers, "")}; admins: ${or(policy.roles.admins, "")}`,
      `• ${plural(policy.requests.length, "request rule")}, ${plural(policy.quotas.length, "quota")}, ${plural(policy.approvals.length, "approval rule")}`,
    );
  }
  return lines.join("\n").slice(0, 3000);
}
