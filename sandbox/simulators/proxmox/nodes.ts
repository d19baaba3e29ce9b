/** The cluster's nodes, as `/cluster/resources` and `/nodes` show them, and the API's constants. */
import { createHash } from "node:crypto";
import { type FakeNode, type NodeOptions, type ProxmoxPath } from "./types.js";

/** How long pveproxy holds back a 401 (`$delay = 3` in `PVE::APIServer::AnyEvent`). */
export const PVEPROXY_UNAUTHORIZED_DELAY_MS = 3000;

const GIB = 1024 ** 3;

/** Two online nodes with some load and one that has been offline for a while. */
export const DEFAULT_NODES: readonly FakeNode[] = [
  fakeNode("pve1", { cores: 16, cpu: 0.08, memoryGiB: 128, memoryUsedGiB: 40 }),
  fakeNode("pve2", { cores: 8, cpu: 0.35, memoryGiB: 64, memoryUsedGiB: 50 }),
  fakeNode("pve3", { status: "offline", cores: 8, memoryGiB: 64 }),
];

/** `enum` of `/cluster/resources`' `type` parameter (PVE::API2::Cluster). */
export const RESOURCE_TYPES = ["vm", "storage", "node", "sdn"] as const;

/** The API's parameters per call; any other is refused (`additionalProperties => 0`). */
export const PARAMETERS: Readonly<Record<ProxmoxPath, readonly string[]>> = {
  "/cluster/resources": ["type"],
  "/nodes": [],
  "/version": [],
};

/** Methods pveproxy handles at all; others get 501 before authentication. */
export const KNOWN_METHODS = new Set(["GET", "POST", "PUT", "DELETE"]);

// Token IDs: PVE::Auth::Plugin's `$user_regex` and `$realm_regex`, and PVE::AccessControl's
// `$token_full_regex` (the token name follows the realm's rule).
const USER_PATTERN = String.raw`[^\s:/]+`;
const REALM_PATTERN = String.raw`[A-Za-z][A-Za-z0-9.\-_]+`;
export const TOKEN_ID = new RegExp(`^((${USER_PATTERN})@(${REALM_PATTERN}))!(${REALM_PATTERN})$`);

function fingerprintOf(name: string): string {
  const hex = createHash("sha256").update(`pve-ssl:${name}`).digest("hex").toUpperCase();
  return (hex.match(/../g) ?? []).join(":");
}

function nonNegative(value: number, what: string, node: string): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new Error(`fakeNode(${node}): ${what} must be a number >= 0, not ${value}`);
  }
  return value;
}

/** Builds a node from human sizes; see `NodeOptions` for the defaults. */
export function fakeNode(name: string, options: NodeOptions = {}): FakeNode {
  const memoryGiB = nonNegative(options.memoryGiB ?? 64, "memoryGiB", name);
  const diskGiB = nonNegative(options.diskGiB ?? 100, "diskGiB", name);
  const cpu = nonNegative(options.cpu ?? 0.05, "cpu", name);
  if (cpu > 1)
    throw new Error(`fakeNode(${name}): cpu is a fraction of all cores (0..1), not ${cpu}`);
  return {
    name,
    status: options.status ?? "online",
    maxcpu: Math.round(nonNegative(options.cores ?? 8, "cores", name)),
    cpu,
    maxmem: Math.round(memoryGiB * GIB),
    mem: Math.round(
      nonNegative(options.memoryUsedGiB ?? memoryGiB / 4, "memoryUsedGiB", name) * GIB,
    ),
    maxdisk: Math.round(diskGiB * GIB),
    disk: Math.round(nonNegative(options.diskUsedGiB ?? diskGiB / 10, "diskUsedGiB", name) * GIB),
    uptime: Math.round(nonNegative(options.uptimeSeconds ?? 14 * 86_400, "uptimeSeconds", name)),
    level: options.level ?? "",
    cgroupMode: options.cgroupMode === null ? undefined : (options.cgroupMode ?? 2),
    lastReport: options.lastReport ?? "expired",
    sslFingerprint: options.sslFingerprint ?? fingerprintOf(name),
  };
}

export function optionsOf(node: FakeNode): NodeOptions {
  return {
    status: node.status,
    cores: node.maxcpu,
    cpu: node.cpu,
    memoryGiB: node.maxmem / GIB,
    memoryUsedGiB: node.mem / GIB,
    diskGiB: node.maxdisk / GIB,
    diskUsedGiB: node.disk / GIB,
    uptimeSeconds: node.uptime,
    level: node.level,
    cgroupMode: node.cgroupMode ?? null,
    lastReport: node.lastReport,
    sslFingerprint: node.sslFingerprint,
  };
}

/** A node's entry as `PVE::API2Tools::extract_node_stats` builds it. */
export function nodeStats(node: FakeNode, canAudit: boolean): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    id: `node/${node.name}`,
    type: "node",
    node: node.name,
    status: node.status,
  };
  // Without a status report from the node (pmxcfs's RRD data) there is nothing more to show.
  if (node.status !== "online" && node.lastReport === "expired") return entry;
  const load = node.status === "online" && canAudit;
  if (load) entry.cpu = node.cpu;
  if (canAudit) entry.maxcpu = node.maxcpu;
  if (load) entry.mem = node.mem;
  if (canAudit) entry.maxmem = node.maxmem;
  if (load) entry.disk = node.disk;
  if (canAudit) entry.maxdisk = node.maxdisk;
  if (load) entry.uptime = node.uptime;
  entry.level = node.level;
  return entry;
}
