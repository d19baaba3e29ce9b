import type { Access } from "../access.js";
import type { CreateField } from "../ids.js";
import type { Logger } from "../logger.js";
import { within } from "../proxmox/directory.js";
import type { AsyncStore } from "../store/async.js";
import type { QuotaGuard } from "../store/store.js";
import type { VmSpec } from "../vm/spec.js";
import { policyLateWords } from "../views/policy-words.js";
import type { PolicyDecision } from "./decide.js";
import { askOf, quotaGuardOf, quotaInputs, quotaStateOf } from "./usage.js";

/**
 * A create form's request checked against the policy and the quotas before anything is stored
 * or started: the refusal goes under the field it is about.
 */

/** How long a request waits for the policy check (user groups are usually cached by then). */
export const POLICY_CHECK_BUDGET_MS = 1_000;

export type RequestVerdict =
  | { ok: true; decision: PolicyDecision; quota?: QuotaGuard }
  | { ok: false; errors: Partial<Record<CreateField, string>> };

export async function checkRequest(
  deps: { access: Access; store: Pick<AsyncStore, "inventory" | "listHeld">; log: Logger },
  person: string,
  spec: VmSpec,
  budgetMs: number,
): Promise<RequestVerdict> {
  const { access } = deps;
  const decided = await within(
    (async () => {
      const policy = access.policy();
      // With no quota in the policy, what people hold decides nothing: it is not added up.
      if (policy.quotas.length === 0) {
        const decision = await access.check({ person, action: "create", request: askOf(spec) });
        return { decision, guard: undefined };
      }
      const { held, own, members } = await quotaInputs(deps.store, policy, person, access);
      const quota = quotaStateOf(held, policy, person, members);
      const decision = await access.check({
        person,
        action: "create",
        request: askOf(spec),
        quota,
      });
      return { decision, guard: quotaGuardOf(policy, person, own, spec, members) };
    })(),
    budgetMs,
  );
  if (decided === "late") {
    deps.log.warn("the policy check of a create form did not finish in time");
    return { ok: false, errors: { name: policyLateWords } };
  }
  const { decision, guard } = decided;
  if (decision.allowed) return { ok: true, decision, ...(guard ? { quota: guard } : {}) };
  deps.log.info(
    { rule: decision.rule, field: decision.field },
    "create form refused by the policy",
  );
  return { ok: false, errors: { [decision.field ?? "name"]: decision.reason } };
}
