import type { AsyncStore } from "../store/async.js";
import { holdingsOf } from "../store/holdings.js";
import type { Holding, QuotaGuard } from "../store/store.js";
import { HOLDING } from "../vm/conflicts.js";
import type { VmSpec } from "../vm/spec.js";
import { decide, inGroups, NO_USAGE, type Ask, type QuotaState, type Usage } from "./decide.js";
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
  return holdingsOf(await store.inventory.list(), await store.listHeld(HOLDING));
}

/** The policy groups of each owner of `held` and of `person`, looked up side by side. */
export async function groupsByOwner(
  held: readonly Holding[],
  person: string,
  groupsOf: (user: string) => Promise<string[]>,
): Promise<ReadonlyMap<string, readonly string[]>> {
  const owners = [...new Set([person, ...held.map((vm) => vm.owner)])];
  return new Map(
    await Promise.all(owners.map(async (owner) => [owner, await groupsOf(owner)] as const)),
  );
}

/**
 * The quota state of `person`: their own holdings, and each group quota's members' together;
 * `groups` gives each owner's policy groups.
 */
export function quotaStateOf(
  held: readonly Holding[],
  policy: Policy,
  person: string,
  groups: ReadonlyMap<string, readonly string[]>,
): QuotaState {
  const personal = held
    .filter((vm) => vm.owner === person)
    .reduce((u, vm) => add(u, vm.spec), NO_USAGE);
  const usage: Record<string, Usage> = {};
  for (const group of new Set(policy.quotas.filter((q) => q.per === "group").map((q) => q.group))) {
    usage[group] = held
      .filter((vm) => inGroups([group], groups.get(vm.owner) ?? []))
      .reduce((u, vm) => add(u, vm.spec), NO_USAGE);
  }
  return { person: personal, groups: usage };
}

/**
 * What the quotas of `person` are counted from, read now: every VM held, and the policy groups of
 * `person` and (for a group quota) of each owner; a person's quota counts only their own VMs.
 */
export async function quotaInputs(
  store: Pick<AsyncStore, "inventory" | "listHeld">,
  policy: Policy,
  person: string,
  groupsOf: (user: string) => Promise<string[]>,
) {
  const held = await holdings(store);
  const byGroup = policy.quotas.some((quota) => quota.per === "group");
  return { held, groups: await groupsByOwner(byGroup ? held : [], person, groupsOf) };
}

/** What `person` and their quotas' groups hold now, read from the store. */
export async function quotaUse(
  store: Pick<AsyncStore, "inventory" | "listHeld">,
  policy: Policy,
  person: string,
  groupsOf: (user: string) => Promise<string[]>,
): Promise<QuotaState> {
  const { held, groups } = await quotaInputs(store, policy, person, groupsOf);
  return quotaStateOf(held, policy, person, groups);
}

/**
 * The check of `spec` against the quotas, to be made again inside the request's write: under
 * the quotas `person` counts against, with what is held then.
 */
export function quotaGuardOf(
  policy: Policy,
  person: string,
  spec: VmSpec,
  groups: ReadonlyMap<string, readonly string[]>,
): QuotaGuard | undefined {
  const own = groups.get(person) ?? [];
  const mine = policy.quotas.filter((quota) => inGroups([quota.group], own));
  if (mine.length === 0) return undefined;
  const scopes = mine.map((q) => (q.per === "person" ? `person:${person}` : `group:${q.group}`));
  const byGroup = mine.some((quota) => quota.per === "group");
  return {
    scopes: [...new Set(scopes)],
    fits(held) {
      // An owner the check did not know may be in a group quota: unknown, so not taken as fitting.
      if (byGroup && held.some((vm) => !groups.has(vm.owner))) return false;
      const quota = quotaStateOf(held, policy, person, groups);
      return decide(policy, { person, groups: own, action: "create", request: askOf(spec), quota })
        .allowed;
    },
  };
}
