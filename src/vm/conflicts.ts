import ipaddr from "ipaddr.js";
import { parseIpv4Cidr } from "../net/ipv4.js";
import type { VmRecord } from "../store/inventory.js";
import type { HoldGuard, RequestRecord, RequestStatus } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import type { VmSpec } from "./spec.js";

/**
 * A new request's name and address against the VMs that exist or are on their way. A create
 * request holds its name and address from the form until Terraform has made its VM, or it ends
 * without one (failed, rejected, withdrawn, expired or canceled before anything was applied);
 * the VM then holds them, from the inventory, until Terraform destroys it. Destroy and extension
 * requests hold nothing: their VM does.
 */

/** The statuses in which a create request holds its name and address. */
export const HOLDING: readonly RequestStatus[] = [
  "queued",
  "planning",
  "awaiting_approval",
  "applying",
  "configuring",
];

/** What holds a name or an address: a VM, or a create request on its way. */
export interface Holder {
  /** The VM's name. */
  name: string;
  /** Its address, with the prefix asked for. */
  ip: string;
  /** The request that made the VM, or the one on its way. */
  requestId: string;
  /** "vm": the VM exists; else the status of the request on its way. */
  state: "vm" | RequestStatus;
}

export const vmHolder = (vm: VmRecord): Holder => ({
  name: vm.name,
  ip: vm.spec.ip,
  requestId: vm.requestId,
  state: "vm",
});

export const requestHolder = (request: RequestRecord): Holder => ({
  name: request.spec.name,
  ip: request.spec.ip,
  requestId: request.id,
  state: request.status,
});

export interface Conflicts {
  /** What holds the name, if something does. */
  name?: Holder;
  /** What holds the address, if something does. */
  ip?: Holder;
  /** The next address of the subnet that nobody holds, when the address is taken and one is. */
  suggestion?: string;
}

const addressOf = (cidr: string) => cidr.split("/")[0] ?? cidr;

/** How far through the subnet a suggestion is looked for. */
const SEARCH_LIMIT = 4_096;

/**
 * The next host address of `spec.ip`'s subnet after its address (wrapping round) that is neither
 * held, the network or broadcast address, nor the gateway; with its prefix, e.g. `192.168.1.51/24`.
 */
export function nextFreeAddress(spec: VmSpec, held: ReadonlySet<string>): string | undefined {
  const cidr = parseIpv4Cidr(spec.ip);
  if (cidr === undefined) return undefined;
  const toNumber = (address: string) =>
    ipaddr.IPv4.parse(address).octets.reduce((n, octet) => n * 256 + octet, 0);
  const toAddress = (n: number) =>
    [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");
  const network = toNumber(cidr.network);
  const broadcast = toNumber(cidr.broadcast);
  const size = broadcast - network + 1;
  const start = toNumber(cidr.address);
  for (let step = 1; step < Math.min(size, SEARCH_LIMIT); step += 1) {
    const n = network + ((start - network + step) % size);
    const address = toAddress(n);
    if (n === network || n === broadcast || address === spec.gateway || held.has(address)) continue;
    return `${address}/${cidr.prefix}`;
  }
  return undefined;
}

/**
 * Which of `spec`'s name and address `holding` (all that hold, or those that use the name or the
 * address) already use. `held` gives every address held, for the suggestion; it is asked only
 * when the address is taken.
 */
export function findConflicts(
  spec: VmSpec,
  holding: readonly Holder[],
  held: () => Iterable<string> = () => holding.map((h) => h.ip),
): Conflicts {
  const address = addressOf(spec.ip);
  const name = holding.find((h) => h.name === spec.name);
  const ip = holding.find((h) => addressOf(h.ip) === address);
  const conflicts: Conflicts = {
    ...(name === undefined ? {} : { name }),
    ...(ip === undefined ? {} : { ip }),
  };
  if (ip !== undefined) {
    const suggestion = nextFreeAddress(spec, new Set([...held()].map(addressOf)));
    if (suggestion !== undefined) conflicts.suggestion = suggestion;
  }
  return conflicts;
}

/** What a create request for `spec` is written with: nothing may hold its name or address. */
export const holdGuard = (spec: VmSpec): HoldGuard => ({
  statuses: HOLDING,
  name: spec.name,
  address: addressOf(spec.ip),
});

/** `spec`'s conflicts with the live VMs and the create requests in HOLDING, matched by the store. */
export async function findHeldConflicts(
  store: Pick<AsyncStore, "findHolding" | "listHeld" | "inventory">,
  spec: VmSpec,
): Promise<Conflicts> {
  const vm = { name: spec.name, address: addressOf(spec.ip) };
  // A VM first: one being configured is also its request's, and exists already.
  const holding = [
    ...(await store.inventory.holding(vm)).map(vmHolder),
    ...(await store.findHolding(HOLDING, vm)).map(requestHolder),
  ];
  // Every address held is read only when the address is taken, for the suggestion.
  const held = holding.some((h) => addressOf(h.ip) === vm.address)
    ? [
        ...(await store.inventory.list()).filter((v) => v.status === "live").map((v) => v.spec.ip),
        ...(await store.listHeld(HOLDING)).map((r) => r.spec.ip),
      ]
    : [];
  return findConflicts(spec, holding, () => held);
}
