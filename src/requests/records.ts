import { z } from "zod";

/**
 * What a request record holds beyond its status, as the store keeps it (JSON columns, read back
 * through these schemas): the plan as reviewed, the decision on it, and a failure's record.
 */

/** A plan review as the store keeps it, so the message can be re-rendered after a restart. */
const ResourceAction = z.enum(["create", "update", "delete", "replace", "read", "no-op"]);

export const PlanSummarySchema = z.object({
  resources: z.array(
    z.object({
      address: z.string(),
      action: ResourceAction,
      replaceOrder: z.enum(["delete-first", "create-first"]).optional(),
      reason: z.string().optional(),
      deposed: z.string().optional(),
      importing: z.boolean().optional(),
    }),
  ),
  counts: z
    .object({
      add: z.number(),
      change: z.number(),
      destroy: z.number(),
      import: z.number().optional(),
      forget: z.number().optional(),
    })
    .optional(),
  derivedCounts: z.object({
    add: z.number(),
    change: z.number(),
    destroy: z.number(),
    replace: z.number(),
    import: z.number(),
  }),
  noChanges: z.boolean(),
  errors: z.array(z.object({ summary: z.string(), detail: z.string() })),
  mismatch: z.string().optional(),
  outputChanges: z.array(z.object({ name: z.string(), action: ResourceAction })),
  notes: z.array(z.string()),
  /** How many of each list were left out: a long plan is stored with its first ones only. */
  omitted: z
    .object({
      changing: z.number().int().nonnegative(),
      destroying: z.number().int().nonnegative(),
      outputChanges: z.number().int().nonnegative(),
      notes: z.number().int().nonnegative(),
    })
    .optional(),
});

/**
 * The approvals a request needs and those given so far, as its message shows them: the tally, who
 * counted, notes (lapsed approvals, a reset), and who may still approve (Slack user and group IDs).
 */
export const ShownApprovalsSchema = z.object({
  tally: z.string(),
  by: z.array(z.string()),
  notes: z.array(z.string()),
  approvers: z.array(z.string()).optional(),
});
export type ShownApprovals = z.infer<typeof ShownApprovalsSchema>;

export const PlanReviewRecordSchema = z.object({
  plan: PlanSummarySchema,
  nodes: z
    .array(
      z.object({
        name: z.string(),
        online: z.boolean(),
        cpuPercent: z.number().optional(),
        memoryUsedGb: z.number().optional(),
        memoryTotalGb: z.number().optional(),
      }),
    )
    .optional(),
  planJobId: z.number().int(),
  planJobUrl: z.string(),
  planFile: z.enum(["uploaded", "failed", "none"]),
  /** When the plan was posted for review; PLAN_TTL counts from here. */
  reviewedAt: z.string().optional(),
  /** The plan job's log is longer than this many bytes, all vmbot read of it. */
  logCutAt: z.number().int().optional(),
  /** Until when it may be approved (reviewedAt + PLAN_TTL), as the message shows it. */
  expiresAt: z.string().optional(),
  /** Who may approve it (Slack user and user-group IDs), as the message shows it. */
  approvers: z.array(z.string()).optional(),
  /** The approvals the policy needs and those given on this plan so far, as the message shows. */
  approvals: ShownApprovalsSchema.optional(),
});
export type PlanReviewRecord = z.infer<typeof PlanReviewRecordSchema>;

/** Who decided on a plan, and how. */
export const DecisionSchema = z.object({
  kind: z.enum(["approved", "rejected", "withdrawn"]),
  by: z.string(),
  at: z.string(),
  /** Why, when the rejecter said. */
  reason: z.string().optional(),
});
export type Decision = z.infer<typeof DecisionSchema>;

export const FAILURE_CAUSES = [
  /** GitLab refused the Terraform state lock to the job's token (its user is below Maintainer). */
  "state_auth",
  /** The Terraform state is locked by someone else (a stuck lock, or a run in progress). */
  "state_locked",
  /** Ansible (or SSH) could not reach the VM. */
  "unreachable",
  /** Vault refused the job's token: permission denied. */
  "vault_denied",
  /** The job ran longer than its time limit. */
  "timeout",
  /** Terraform stopped on an `Error:` from a provider or an API. */
  "terraform_error",
] as const;
export type FailureCauseCode = (typeof FAILURE_CAUSES)[number];

/** The stage a failed job belongs to, and what a next step needs to know. */
export const FailureRecordSchema = z.object({
  stage: z.enum(["plan", "apply", "configure"]),
  jobId: z.number().int(),
  cause: z.enum(FAILURE_CAUSES).optional(),
  /** How many times the configure job was retried from Slack for this request. */
  retries: z.number().int().nonnegative().optional(),
  /** The request planned again with the same inputs (Plan again), by whom and when. */
  again: z.object({ requestId: z.string(), by: z.string(), at: z.string() }).optional(),
  /** The destroy request that destroyed the VM this request made: nothing is left to configure. */
  destroyedBy: z.string().optional(),
});
export type FailureRecord = z.infer<typeof FailureRecordSchema>;
