import type { AsyncStore } from "../store/async.js";
import { HOLDING } from "../vm/conflicts.js";
import type { VmSpec } from "../vm/spec.js";
import { NO_USAGE, type Ask, type QuotaState, type Usage } from "./decide.js";
import type { Policy } from "./schema.js";

/**
 * What people hold, for quotas: the live VMs of the inventory, and the requests on their way
 * (one VM each, counted once when the inventory already has it).
 */

export const askOf = (spec: VmSpec): Ask => ({
  template: spec.templateName,
  node: spec.node,
  cores: spec.cores,
  memoryGib: spec.memoryMb / 1024,
  diskGib: spec.diskGb,
});

const add = (usage: Usage, spec: VmSpec): Usage => ({
  vms: usage.vms + 1,
  cores: usage.cores + spec.cores,
  memoryGib: usage.memoryGib + spec.memoryMb / 1024,
  diskGib: usage.diskGib + spec.diskGb,
});

/** Every VM held, with its owner: live in the inventory, or asked for and on its way. */
export async function holdings(store: Pick<AsyncStore, "inventory" | "listHeld">) {
  const live = (await store.inventory.list())
    .filter((vm) => vm.status === "live")
    .map((vm) => ({ owner: vm.owner, spec: vm.spec }));
  const names = new Set(live.map((vm) => vm.spec.name));
  const coming = (await store.listHeld(HOLDING))
    .filter((request) => !names.has(request.spec.name))
    .map((request) => ({ owner: request.requester, spec: request.spec }));
  return [...live, ...coming];
}

/** The quota state of `person`: their own holdings, and each group quota's members' together. */
export async function quotaStateOf(
  store: Pick<AsyncStore, "inventory" | "listHeld">,
  policy: Policy,
  person: string,
  groupsOf: (user: string) => Promise<string[]>,
): Promise<QuotaState> {
  const held = await holdings(store);
  const personal = held
    .filter((vm) => vm.owner === person)
    .reduce((u, vm) => add(u, vm.spec), NO_USAGE);
  const wanted = [...new Set(policy.quotas.filter((q) => q.per === "group").map((q) => q.group))];
  if (wanted.length === 0) return { person: personal, groups: {} };
  const owners = [...new Set(held.map((vm) => vm.owner))];
  const ownerGroups = new Map(
    await Promise.all(owners.map(async (owner) => [owner, await groupsOf(owner)] as const)),
  );
  const groups: Record<string, Usage> = {};
  for (const group of wanted) {
    groups[group] = held
      .filter((vm) => group === "everyone" || (ownerGroups.get(vm.owner) ?? []).includes(group))
      .reduce((u, vm) => add(u, vm.spec), NO_USAGE);
  }
  return { person: personal, groups };
}
