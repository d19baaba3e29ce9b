import { millisOf, systemClock, type Clock } from "../clock.js";
import type { Proxmox, ProxmoxNode } from "./proxmox.js";

/**
 * The cluster's nodes as last read, shared by the create form, its submission and
 * `/vm capacity`: a read younger than `maxAgeMs` is reused, and callers that ask while a read
 * is under way share it, so a burst of `/vm create` costs Proxmox one request.
 */
export interface NodeDirectory {
  readonly proxmox: Proxmox;
  /** Nodes no older than the directory's freshness, read now if need be. */
  nodes(): Promise<ProxmoxNode[]>;
  /** A fresh read, whatever the age of the last one. */
  refresh(): Promise<ProxmoxNode[]>;
  /** The last answer Proxmox gave, however old; undefined before the first. */
  last(): ProxmoxNode[] | undefined;
  /** The last answer with when it came. */
  snapshot(): { nodes: ProxmoxNode[]; at: Date } | undefined;
}

export function createNodeDirectory(
  proxmox: Proxmox,
  options: { maxAgeMs?: number; clock?: Clock } = {},
): NodeDirectory {
  const maxAgeMs = options.maxAgeMs ?? 15_000;
  const now = millisOf(options.clock ?? systemClock);
  let latest: { nodes: ProxmoxNode[]; at: number } | undefined;
  let pending: Promise<ProxmoxNode[]> | undefined;

  const read = (): Promise<ProxmoxNode[]> => {
    pending ??= proxmox
      .nodes()
      .then((nodes) => {
        latest = { nodes, at: now() };
        return nodes;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };

  return {
    proxmox,
    nodes: () =>
      latest !== undefined && now() - latest.at < maxAgeMs ? Promise.resolve(latest.nodes) : read(),
    refresh: read,
    last: () => latest?.nodes,
    snapshot: () =>
      latest === undefined ? undefined : { nodes: latest.nodes, at: new Date(latest.at) },
  };
}

/** Resolves with the promise's value if it settles within `ms`, else with "late" (it runs on). */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | "late"> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => {
      resolve("late");
    }, ms);
  });
  return Promise.race([promise, late]).finally(() => {
    clearTimeout(timer);
  });
}
