import { z } from "zod";

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
});

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
  approvals: z
    .object({ tally: z.string(), by: z.array(z.string()), notes: z.array(z.string()) })
    .optional(),
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

/** Whether a plan posted at `review.reviewedAt` has outlived PLAN_TTL at `now`. */
export function planExpired(
  review: PlanReviewRecord | null,
  planTtlMs: number,
  now: Date,
): boolean {
  if (review?.reviewedAt === undefined) return false;
  return now.getTime() - Date.parse(review.reviewedAt) > planTtlMs;
}

/** How a PLAN_TTL reads to people: 24 h, 90 min, 2 d. */
export function ttlWords(ms: number): string {
  if (ms % 86_400_000 === 0 && ms >= 2 * 86_400_000) return `${ms / 86_400_000} d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  return `${Math.round(ms / 60_000)} min`;
}

/** What an expired request says. */
export function expiredWords(planTtlMs: number): string {
  return `This plan waited longer than PLAN_TTL (${ttlWords(planTtlMs)}) for approval and can no longer be applied: run /vm create again for a fresh plan.`;
}
