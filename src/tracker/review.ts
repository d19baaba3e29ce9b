import type { PlanReviewRecord } from "../requests/records.js";

export {
  DecisionSchema,
  PlanReviewRecordSchema,
  PlanSummarySchema,
  type Decision,
  type PlanReviewRecord,
} from "../requests/records.js";

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
