import type { ProxmoxNode } from "../proxmox/proxmox.js";

const GIB = 1024 ** 3;

/** One Proxmox node's load, from Terraform's `node_resources` output or the Proxmox API. */
export interface NodeUsage {
  name: string;
  online: boolean;
  cpuPercent?: number;
  memoryUsedGb?: number;
  memoryTotalGb?: number;
}

/** A node as the Proxmox API reports it (CPU as a fraction, memory in bytes), as a load. */
export function usageOf(node: ProxmoxNode): NodeUsage {
  return {
    name: node.name,
    online: node.status === "online",
    ...(node.cpu === undefined ? {} : { cpuPercent: node.cpu * 100 }),
    ...(node.memUsed === undefined ? {} : { memoryUsedGb: node.memUsed / GIB }),
    ...(node.memTotal === undefined ? {} : { memoryTotalGb: node.memTotal / GIB }),
  };
}

/** The chosen node first, then the other online ones by name, then the offline ones. */
export function orderNodes(nodes: readonly NodeUsage[], chosen: string): NodeUsage[] {
  const rank = (node: NodeUsage) => (node.name === chosen ? 0 : node.online ? 1 : 2);
  return [...nodes].sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
}
