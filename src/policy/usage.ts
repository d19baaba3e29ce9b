import type { Access } from "../access.js";
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

/** Who is in each policy group a group quota counts: `everyone` needs no list. */
export type QuotaMembers = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * The quota state of `person`: their own holdings, and each group quota's members' together;
 * `members` gives each group quota's members.
 */
export function quotaStateOf(
  held: readonly Holding[],
  policy: Policy,
  person: string,
  members: QuotaMembers,
): QuotaState {
  const personal = held
    .filter((vm) => vm.owner === person)
    .reduce((u, vm) => add(u, vm.spec), NO_USAGE);
  const usage: Record<string, Usage> = {};
  for (const group of groupQuotaGroups(policy)) {
    usage[group] = held
      .filter((vm) => group === "everyone" || members.get(group)?.has(vm.owner) === true)
      .reduce((u, vm) => add(u, vm.spec), NO_USAGE);
  }
  return { person: personal, groups: usage };
}

const groupQuotaGroups = (policy: Policy) => [
  ...new Set(policy.quotas.filter((q) => q.per === "group").map((q) => q.group)),
];

/**
 * What the quotas of `person` are counted from, read now: every VM held, the policy groups of
 * `person`, and the members of each group a group quota counts.
 */
export async function quotaInputs(
  store: Pick<AsyncStore, "inventory" | "listHeld">,
  policy: Policy,
  person: string,
  access: Pick<Access, "groupsOf" | "membersOf">,
) {
  const wanted = groupQuotaGroups(policy).filter((group) => group !== "everyone");
  const [held, own, lists] = await Promise.all([
    holdings(store),
    access.groupsOf(person),
    Promise.all(wanted.map(async (group) => [group, await access.membersOf(group)] as const)),
  ]);
  return { held, own, members: new Map(lists) as QuotaMembers };
}

/**
 * The check of `spec` against the quotas, to be made again inside the request's write: under
 * the quotas `person` (in the policy groups `own`) counts against, with what is held then.
 */
export function quotaGuardOf(
  policy: Policy,
  person: string,
  own: readonly string[],
  spec: VmSpec,
  members: QuotaMembers,
): QuotaGuard | undefined {
  const mine = policy.quotas.filter((quota) => inGroups([quota.group], own));
  if (mine.length === 0) return undefined;
  const scopes = mine.map((q) => (q.per === "person" ? `person:${person}` : `group:${q.group}`));
  return {
    scopes: [...new Set(scopes)],
    fits(held) {
      const quota = quotaStateOf(held, policy, person, members);
      return decide(policy, { person, groups: own, action: "create", request: askOf(spec), quota })
        .allowed;
    },
  };
}
