import { parse as parseYaml, YAMLParseError } from "yaml";
import { z } from "zod";

/**
 * The request policy file (VMBOT_POLICY): who belongs to which group, who may ask for what, the
 * quotas, and which approvals a request needs. Parsed from YAML, checked with zod, and then
 * checked across fields (a rule naming a group that does not exist), every problem named.
 */

const SlackIdSchema = z
  .string()
  .regex(/^[UWS][A-Z0-9]{2,}$/, "is not a Slack user ID (U…) or user-group ID (S…)");

const GroupNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,39}$/, "is not a group name (lower case letters, digits, - and _)");

/** A group name, or `everyone`. */
const WhoSchema = z.union([GroupNameSchema, z.literal("everyone")]);

const DurationSchema = z
  .string()
  .regex(/^[1-9][0-9]*[smhd]$/, "is not a duration such as 30m, 24h or 7d");

const SizeSchema = z
  .object({
    cores: z.number().int().positive().optional(),
    memory_gib: z.number().positive().optional(),
    disk_gib: z.number().int().positive().optional(),
  })
  .strict();

const QuotaLimitsSchema = SizeSchema.extend({
  vms: z.number().int().nonnegative().optional(),
}).strict();

const AllowanceSchema = z
  .object({
    group: WhoSchema,
    /** Template names as VM_TEMPLATES names them; omitted means every template. */
    templates: z.array(z.string().min(1)).min(1).optional(),
    /** Node names; omitted means every node. */
    nodes: z.array(z.string().min(1)).min(1).optional(),
    /** The most one VM may have. */
    max: SizeSchema.optional(),
  })
  .strict();

const QuotaSchema = z
  .object({
    group: WhoSchema,
    /** `person`: each member's own VMs; `group`: the members' VMs together. */
    per: z.enum(["person", "group"]).default("person"),
    max: QuotaLimitsSchema,
  })
  .strict();

export const APPROVAL_ACTIONS = ["create", "destroy", "extend", "unlock"] as const;

const ConditionSchema = z
  .object({
    templates: z.array(z.string().min(1)).min(1).optional(),
    nodes: z.array(z.string().min(1)).min(1).optional(),
    cores_over: z.number().int().nonnegative().optional(),
    memory_gib_over: z.number().nonnegative().optional(),
    disk_gib_over: z.number().int().nonnegative().optional(),
    /** The plan destroys or replaces something. */
    destructive: z.boolean().optional(),
  })
  .strict();

const RequirementSchema = z
  .object({
    group: GroupNameSchema,
    count: z.number().int().positive().max(20).default(1),
  })
  .strict();

const ApprovalRuleSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9 _-]{0,59}$/i, "is not a rule name"),
    action: z.enum(APPROVAL_ACTIONS).default("create"),
    when: ConditionSchema.optional(),
    require: z.array(RequirementSchema).min(1),
    /** Whether members of the requester's own groups may approve (never the requester). */
    requester_group_may_approve: z.boolean().default(true),
    /** Whether the requester may approve their own request. */
    self_approval: z.boolean().default(false),
    /** An approval older than this no longer counts. */
    lapse_after: DurationSchema.optional(),
  })
  .strict();

const RolesSchema = z
  .object({
    /** Who may ask (and see capacity and the VM list); omitted means everyone. */
    requesters: z.array(WhoSchema).optional(),
    /** Who may approve and reject; each rule's groups decide whose approval counts. */
    approvers: z.array(WhoSchema).min(1),
    admins: z.array(WhoSchema).min(1),
  })
  .strict();

export const PolicyFileSchema = z
  .object({
    version: z.literal(1),
    groups: z.record(GroupNameSchema, z.array(SlackIdSchema).min(1)),
    roles: RolesSchema,
    requests: z.array(AllowanceSchema).default([]),
    quotas: z.array(QuotaSchema).default([]),
    approvals: z.array(ApprovalRuleSchema).default([]),
  })
  .strict();

export type PolicyFile = z.infer<typeof PolicyFileSchema>;
export type Allowance = z.infer<typeof AllowanceSchema>;
export type Quota = z.infer<typeof QuotaSchema>;
export type QuotaLimits = z.infer<typeof QuotaLimitsSchema>;
export type ApprovalRule = z.infer<typeof ApprovalRuleSchema>;
export type Requirement = z.infer<typeof RequirementSchema>;
export type Condition = z.infer<typeof ConditionSchema>;

/** A policy as the bot uses it: the file's contents, where it came from. */
export interface Policy extends PolicyFile {
  /** The file's path, or `environment` when REQUESTERS / APPROVERS / ADMINS are the policy. */
  source: string;
}

export type PolicyParse = { ok: true; policy: PolicyFile } | { ok: false; problems: string[] };

const where = (path: readonly PropertyKey[]) =>
  path.length === 0 ? "the file" : path.map(String).join(".");

/** Names that rules use and that must be defined as groups. */
function unknownGroups(file: PolicyFile): string[] {
  const known = new Set([...Object.keys(file.groups), "everyone"]);
  const problems: string[] = [];
  const check = (name: string, at: string) => {
    if (!known.has(name))
      problems.push(`${at} names the group "${name}", which groups does not define`);
  };
  for (const [role, names] of Object.entries(file.roles) as [string, string[] | undefined][]) {
    names?.forEach((name, i) => {
      check(name, `roles.${role}.${i}`);
    });
  }
  file.requests.forEach((rule, i) => {
    check(rule.group, `requests.${i}.group`);
  });
  file.quotas.forEach((rule, i) => {
    check(rule.group, `quotas.${i}.group`);
  });
  file.approvals.forEach((rule, i) => {
    rule.require.forEach((need, j) => {
      check(need.group, `approvals.${i}.require.${j}.group`);
    });
  });
  const names = file.approvals.map((rule) => rule.name);
  names.forEach((name, i) => {
    if (names.indexOf(name) !== i) problems.push(`approvals.${i}.name "${name}" is used twice`);
  });
  return problems;
}

/** Parses and checks a policy file's text; every problem is named with where it is. */
export function parsePolicy(text: string): PolicyParse {
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true });
  } catch (error) {
    const message =
      error instanceof YAMLParseError
        ? `line ${error.linePos?.[0].line ?? "?"}: ${error.message.split("\n")[0] ?? ""}`
        : String(error);
    return { ok: false, problems: [`the file is not valid YAML (${message})`] };
  }
  const parsed = PolicyFileSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.error.issues.map((issue) => `${where(issue.path)}: ${issue.message}`),
    };
  }
  const problems = unknownGroups(parsed.data);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, policy: parsed.data };
}

/**
 * Today's access lists as a policy: one approval from an approver for a create or a destroy,
 * ALLOW_SELF_APPROVAL saying whether it may be the requester's own; an admin unlocks alone;
 * nothing else limited.
 */
export function policyFromLists(lists: {
  requesters: readonly string[];
  approvers: readonly string[];
  admins: readonly string[];
  allowSelfApproval: boolean;
}): Policy {
  const groups: Record<string, string[]> = {
    approvers: [...lists.approvers],
    admins: [...lists.admins],
  };
  if (lists.requesters.length > 0) groups.requesters = [...lists.requesters];
  return {
    source: "environment",
    version: 1,
    groups,
    roles: {
      ...(lists.requesters.length > 0 ? { requesters: ["requesters"] } : {}),
      approvers: ["approvers"],
      admins: ["admins"],
    },
    requests: [],
    quotas: [],
    approvals: (["create", "destroy"] as const).map((action) => ({
      name: action === "create" ? "one approver" : `one approver (${action})`,
      action,
      require: [{ group: "approvers", count: 1 }],
      requester_group_may_approve: true,
      self_approval: lists.allowSelfApproval,
    })),
  };
}

/** A duration such as `24h` in milliseconds. */
export function durationMs(text: string): number {
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[text.slice(-1)] ?? 1_000;
  return Number(text.slice(0, -1)) * unit;
}
