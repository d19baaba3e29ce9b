import type { Clock } from "../clock.js";
import type { RequestRecord } from "../store/store.js";
import type { Closure } from "./closure.js";
import { planExpired } from "./review.js";

/**
 * Plans that waited longer than PLAN_TTL, by `now`: each is expired, its pipeline canceled and
 * its plan deleted in GitLab so it cannot be applied, and its message turns to "expired". A
 * destroy request has no plan: it expires PLAN_TTL after it began to wait for approval, and vmbot
 * never plays its destroy job afterwards (the VM stays listed). A lease extension likewise: its
 * lease stays as it was.
 */
export async function expirePlans(
  deps: { closure: Pick<Closure, "expire">; planTtlMs: number; now: Clock },
  unfinished: readonly RequestRecord[],
): Promise<void> {
  for (const request of unfinished) {
    if (request.status !== "awaiting_approval") continue;
    const expired =
      request.kind !== "create"
        ? deps.now().getTime() - Date.parse(request.stageAt) > deps.planTtlMs
        : planExpired(request.review, deps.planTtlMs, deps.now());
    if (!expired) continue;
    await deps.closure.expire(request);
  }
}
