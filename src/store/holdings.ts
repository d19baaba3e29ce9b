import type { VmRecord } from "./inventory.js";
import type { HeldVm, Holding } from "./store.js";

/**
 * Every VM held against the quotas, with its owner: the live VMs of the inventory, and the
 * create requests on their way (one VM each, counted once when the inventory already has it).
 */
export function holdingsOf(
  vms: readonly Pick<VmRecord, "owner" | "spec" | "status">[],
  coming: readonly HeldVm[],
): Holding[] {
  const live = vms
    .filter((vm) => vm.status === "live")
    .map((vm) => ({ owner: vm.owner, spec: vm.spec }));
  const names = new Set(live.map((vm) => vm.spec.name));
  const asked = coming
    .filter((request) => !names.has(request.spec.name))
    .map((request) => ({ owner: request.requester, spec: request.spec }));
  return [...live, ...asked];
}
