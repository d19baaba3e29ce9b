import type { webApi } from "@slack/bolt";
import type { Logger } from "./logger.js";

export interface AccessLists {
  /** Empty means everyone may ask. */
  requesters: readonly string[];
  approvers: readonly string[];
  admins: readonly string[];
}

export type Role = "requester" | "approver" | "admin";

/**
 * Every action a person can take and the role it needs: the one table of who may do what.
 * Requesters may see capacity too (it is what they need to choose a node); `/vm help` is open.
 */
export const ACTION_ROLES = {
  create: "requester",
  capacity: "requester",
  list: "requester",
  approve: "approver",
  reject: "approver",
  unlock: "admin",
  /** Destroying any VM; a VM's owner may always ask to destroy their own. */
  destroy: "admin",
} as const satisfies Record<string, Role>;

export type Action = keyof typeof ACTION_ROLES;

export type Decision = "allowed" | "denied" | "unknown";

/** Who may do what, answered at the moment of asking. User groups (S…) are expanded via Slack. */
export interface Access {
  /** Whether `userId` may take `action`, asked at the moment of the click or command. */
  may(action: Action, userId: string): Promise<boolean>;
  /** `may` within a time budget, for Slack's three-second windows (see `decide`). */
  mayWithin(action: Action, userId: string, budgetMs: number): Promise<Decision>;
  allows(role: Role, userId: string): Promise<boolean>;
  /**
   * The same answer within a time budget, for Slack's three-second windows: "unknown" when a
   * user group could not be expanded in time (the expansion goes on and is cached).
   */
  decide(role: Role, userId: string, budgetMs: number): Promise<Decision>;
  /**
   * Who may take `action`, as configured: Slack user and user-group IDs, for naming them to
   * someone refused. Empty for requesters means everyone.
   */
  who(action: Action): readonly string[];
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
  const pending = new Map<string, Promise<Set<string>>>();

  async function fetchMembers(groupId: string): Promise<Set<string>> {
    const cached = groups.get(groupId);
    try {
      const result = await options.client.usergroups.users.list({ usergroup: groupId });
      const users = new Set(result.users ?? []);
      groups.set(groupId, { users, at: now() });
      return users;
    } catch (error) {
      options.log.warn({ err: error, groupId }, "could not expand a Slack user group");
      // A stale answer is better than locking everyone out while Slack hiccups.
      return cached?.users ?? new Set();
    } finally {
      pending.delete(groupId);
    }
  }

  /** A group's members, from a five-minute cache; concurrent askers share one Slack call. */
  function members(groupId: string): Promise<Set<string>> {
    const cached = groups.get(groupId);
    if (cached && now() - cached.at < GROUP_CACHE_MS) return Promise.resolve(cached.users);
    let inflight = pending.get(groupId);
    if (!inflight) {
      inflight = fetchMembers(groupId);
      pending.set(groupId, inflight);
    }
    return inflight;
  }

  const listFor = (role: Role) =>
    role === "requester"
      ? options.lists.requesters
      : role === "approver"
        ? options.lists.approvers
        : options.lists.admins;

  const allows = async (role: Role, userId: string) => {
    const list = listFor(role);
    if (role === "requester" && list.length === 0) return true;
    if (list.includes(userId)) return true;
    const groups = await Promise.all(list.filter((id) => id.startsWith("S")).map(members));
    return groups.some((users) => users.has(userId));
  };

  const decide = async (role: Role, userId: string, budgetMs: number): Promise<Decision> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"unknown">((resolve) => {
      timer = setTimeout(() => {
        resolve("unknown");
      }, budgetMs);
    });
    const answer = allows(role, userId).then((ok): Decision => (ok ? "allowed" : "denied"));
    try {
      return await Promise.race([answer, late]);
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    allows,
    decide,
    may: (action, userId) => allows(ACTION_ROLES[action], userId),
    mayWithin: (action, userId, budgetMs) => decide(ACTION_ROLES[action], userId, budgetMs),
    who: (action) => listFor(ACTION_ROLES[action]),
  };
}
