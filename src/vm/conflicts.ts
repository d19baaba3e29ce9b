import ipaddr from "ipaddr.js";
import { parseIpv4Cidr } from "../net/ipv4.js";
import type { RequestRecord, RequestStatus } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import type { VmSpec } from "./spec.js";

/**
 * A new request's name and address against the VMs that exist or are on their way: a request
 * holds its name and address from the form until it ends without a VM (failed, rejected,
 * withdrawn, expired or canceled before anything was applied).
 */

/** The statuses in which a request holds its name and address. */
export const HOLDING: readonly RequestStatus[] = [
  "queued",
  "planning",
  "awaiting_approval",
  "applying",
  "configuring",
  "ready",
];

export interface Conflicts {
  /** The request that holds the name, if one does. */
  name?: RequestRecord;
  /** The request that holds the address, if one does. */
  ip?: RequestRecord;
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
 * Which of `spec`'s name and address `holding` (requests in HOLDING: all of them, or those that
 * use the name or the address) already use. `held` gives every address held, for the
 * suggestion; it is asked only when the address is taken.
 */
export function findConflicts(
  spec: VmSpec,
  holding: readonly RequestRecord[],
  held: () => Iterable<string> = () => holding.map((r) => r.spec.ip),
): Conflicts {
  const address = addressOf(spec.ip);
  const name = holding.find((r) => r.spec.name === spec.name);
  const ip = holding.find((r) => addressOf(r.spec.ip) === address);
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

/** `spec`'s conflicts with the requests in HOLDING, matched by the store. */
export async function findHeldConflicts(
  store: Pick<AsyncStore, "findHolding" | "listHeld">,
  spec: VmSpec,
): Promise<Conflicts> {
  const address = addressOf(spec.ip);
  const holding = await store.findHolding(HOLDING, { name: spec.name, address });
  // Every address held is read only when the address is taken, for the suggestion.
  const held = holding.some((r) => addressOf(r.spec.ip) === address)
    ? (await store.listHeld(HOLDING)).map((r) => r.spec.ip)
    : [];
  return findConflicts(spec, holding, () => held);
}
