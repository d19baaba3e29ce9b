import type { webApi } from "@slack/bolt";
import type { Logger } from "./logger.js";

export interface AccessLists {
  /** Empty means everyone may ask. */
  requesters: readonly string[];
  approvers: readonly string[];
  admins: readonly string[];
}

export type Role = "requester" | "approver" | "admin";

/** Who may do what, answered at the moment of asking. User groups (S…) are expanded via Slack. */
export interface Access {
  allows(role: Role, userId: string): Promise<boolean>;
}

const GROUP_CACHE_MS = 5 * 60_000;

export function createAccess(options: {
  lists: AccessLists;
  client: Pick<webApi.WebClient, "usergroups">;
  log: Logger;
  now?: () => number;
}): Access {
  const now = options.now ?? Date.now;
  const groups = new Map<string, { users: Set<string>; at: number }>();

  async function members(groupId: string): Promise<Set<string>> {
    const cached = groups.get(groupId);
    if (cached && now() - cached.at < GROUP_CACHE_MS) return cached.users;
    try {
      const result = await options.client.usergroups.users.list({ usergroup: groupId });
      const users = new Set(result.users ?? []);
      groups.set(groupId, { users, at: now() });
      return users;
    } catch (error) {
      options.log.warn({ err: error, groupId }, "could not expand a Slack user group");
      // A stale answer is better than locking everyone out while Slack hiccups.
      return cached?.users ?? new Set();
    }
  }

  const listFor = (role: Role) =>
    role === "requester"
      ? options.lists.requesters
      : role === "approver"
        ? options.lists.approvers
        : options.lists.admins;

  return {
    async allows(role, userId) {
      const list = listFor(role);
      if (role === "requester" && list.length === 0) return true;
      if (list.includes(userId)) return true;
      for (const id of list) {
        if (id.startsWith("S") && (await members(id)).has(userId)) return true;
      }
      return false;
    },
  };
}
