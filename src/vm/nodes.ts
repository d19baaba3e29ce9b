/** One Proxmox node's load, from Terraform's `node_resources` output or the Proxmox API. */
export interface NodeUsage {
  name: string;
  online: boolean;
  cpuPercent?: number;
  memoryUsedGb?: number;
  memoryTotalGb?: number;
}

/** The chosen node first, then the other online ones by name, then the offline ones. */
export function orderNodes(nodes: readonly NodeUsage[], chosen: string): NodeUsage[] {
  const rank = (node: NodeUsage) => (node.name === chosen ? 0 : node.online ? 1 : 2);
  return [...nodes].sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
}
