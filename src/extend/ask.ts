import { z } from "zod";
import type { Access } from "../access.js";
import { storeWriteFailure } from "../actions/store-failure.js";
import { inFlight } from "../commands/destroy.js";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import { approvalRuleFor, DEFAULT_RULE } from "../policy/approvals.js";
import type { PolicyFile } from "../policy/schema.js";
import { askOf } from "../policy/usage.js";
import type { VmRecord } from "../store/inventory.js";
import type { AsyncStore } from "../store/async.js";
import type { RequestRecord } from "../store/store.js";
import type { LeaseSettings } from "../vm/lease.js";
import {
  extensionBusyWords,
  extensionNoLeaseWords,
  extensionNoRuleWords,
  extensionNotOwnerWords,
  extensionNoVmWords,
} from "../views/extend.js";

/**
 * A lease past VM_LEASE_MAX: offered only where the policy has an `extend` approval rule that
 * matches the VM. The owner asks; a request opens in the channel, and the approvers decide on it
 * as on a destroy (the rule's N-of-M, self-approval and lapse). Within the maximum, Extend needs
 * nobody.
 */

export interface ExtensionDeps {
  config: Config;
  access: Pick<Access, "policy">;
  store: AsyncStore;
  log: Logger;
}

const VmNameSchema = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);

/** How long an extension past the maximum lends a VM for: twice the maximum, from the approval. */
export function longerLeaseMs(settings: LeaseSettings): number | null {
  return settings.maxMs === null ? null : settings.maxMs * 2;
}

/** Whether the policy has an `extend` rule for this VM (and leases have a maximum to go past). */
export function mayAskLonger(policy: PolicyFile, settings: LeaseSettings, vm: VmRecord): boolean {
  if (longerLeaseMs(settings) === null || vm.leaseUntil === null || vm.status !== "live") {
    return false;
  }
  return approvalRuleFor(policy, "extend", askOf(vm.spec)) !== DEFAULT_RULE;
}

/** Why `user` may not ask for a longer lease of the VM named `value` now; the VM when they may. */
export async function checkExtension(
  deps: ExtensionDeps,
  user: string,
  value: unknown,
): Promise<{ vm: VmRecord; ms: number } | { refusal: string }> {
  const name = VmNameSchema.safeParse(value);
  const vm = name.success ? await deps.store.inventory.get(name.data) : undefined;
  if (vm?.status !== "live") return { refusal: extensionNoVmWords };
  if (vm.owner !== user) return { refusal: extensionNotOwnerWords(vm.name, vm.owner) };
  if (vm.leaseUntil === null) return { refusal: extensionNoLeaseWords(vm.name) };
  const ms = longerLeaseMs(deps.config.lease);
  if (ms === null || !mayAskLonger(deps.access.policy(), deps.config.lease, vm)) {
    return { refusal: extensionNoRuleWords(vm.name, deps.config.lease.maxMs) };
  }
  const busy = await inFlight(deps.store, vm.name);
  if (busy !== undefined) return { refusal: extensionBusyWords(vm.name, busy) };
  return { vm, ms };
}

/**
 * Records the extension request for `vm`, once: two clicks at once make the same key (the VM's
 * latest request), so only one request. Audited as `extension_requested` in the same write.
 */
export async function openExtensionRequest(
  deps: ExtensionDeps,
  ask: { vm: VmRecord; ms: number; requester: string; channel: string },
): Promise<{ request: RequestRecord; created: boolean } | "not_recorded"> {
  const { vm } = ask;
  const latest = (await deps.store.requestsForVm(vm.name))[0]?.id ?? vm.requestId;
  try {
    const stored = await deps.store.createRequest(
      {
        kind: "extend",
        requester: ask.requester,
        spec: { ...vm.spec, leaseMs: ask.ms },
        notes: [],
        channel: ask.channel,
        submissionKey: `extend:${vm.name}:${latest}`,
        stateName: vm.stateName,
      },
      {
        actor: ask.requester,
        action: "extension_requested",
        detail: { name: vm.name, leaseUntil: vm.leaseUntil, lengthMs: ask.ms },
      },
    );
    if (stored.created) {
      deps.log.info({ requestId: stored.request.id, name: vm.name }, "lease extension requested");
    }
    return stored;
  } catch (error) {
    if (storeWriteFailure(error) === undefined) throw error;
    deps.log.error({ err: error }, "could not record the extension request");
    return "not_recorded";
  }
}
