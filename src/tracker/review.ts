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
