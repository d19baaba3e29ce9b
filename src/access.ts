import type { webApi } from "@slack/bolt";
import { millisOf, systemClock, type Clock } from "./clock.js";
import type { Logger } from "./logger.js";
import {
  ACTION_ROLE,
  decide as decidePolicy,
  type DecisionInput,
  type PolicyAction,
  type PolicyDecision,
} from "./policy/decide.js";
import { policyFromLists, type Policy } from "./policy/schema.js";
import type { AuditEntry } from "./store/store.js";

export interface AccessLists {
  /** Empty means everyone may ask. */
  requesters: readonly string[];
  approvers: readonly string[];
  admins: readonly string[];
  /** Whether a requester may approve their own request (ALLOW_SELF_APPROVAL). */
  allowSelfApproval?: boolean;
}

export type Role = "requester" | "approver" | "admin";

/**
 * Every action a person can take and the role it needs: the one table of who may do what.
 * Requesters may see capacity too (it is what they need to choose a node); `/vm help` is open.
 * The policy decides who holds each role (src/policy/decide.ts).
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
  /** The policy in force now. */
  policy(): Policy;
  /** The policy groups `userId` belongs to, user groups expanded. */
  groupsOf(userId: string): Promise<string[]>;
  /** Everyone in the policy group `name`: its user IDs, and its user groups' members. */
  membersOf(name: string): Promise<ReadonlySet<string>>;
  /** The policy's decision for `userId`, with its reason and rule; denials are audited. */
  check(input: Omit<DecisionInput, "groups">): Promise<PolicyDecision>;
}

const GROUP_CACHE_MS = 5 * 60_000;

const ROLE_ACTION = { requester: "create", approver: "approve", admin: "admin" } as const;

export function createAccess(options: {
  lists: AccessLists;
  client: Pick<webApi.WebClient, "usergroups">;
  log: Logger;
  /** What time it is, for the user-group cache; the machine's clock by default. */
  clock?: Clock;
  /** The policy in force; the access lists (one approval) when not given. */
  policy?: () => Policy;
  /** Where decisions are audited. */
  audit?: (entry: AuditEntry) => void | Promise<void>;
}): Access {
  const members = createGroupMembers({
    client: options.client,
    log: options.log,
    now: millisOf(options.clock ?? systemClock),
  });
  const fromLists = policyFromLists({
    ...options.lists,
    allowSelfApproval: options.lists.allowSelfApproval ?? false,
  });
  const policy = options.policy ?? (() => fromLists);

  async function groupsOf(userId: string): Promise<string[]> {
    const entries = Object.entries(policy().groups);
    const found = await Promise.all(
      entries.map(async ([name, ids]) => {
        if (ids.includes(userId)) return name;
        const expanded = await Promise.all(ids.filter((id) => id.startsWith("S")).map(members));
        return expanded.some((users) => users.has(userId)) ? name : undefined;
      }),
    );
    return found.filter((name): name is string => name !== undefined);
  }

  async function membersOf(name: string): Promise<ReadonlySet<string>> {
    const ids = policy().groups[name] ?? [];
    const expanded = await Promise.all(ids.filter((id) => id.startsWith("S")).map(members));
    return new Set([
      ...ids.filter((id) => !id.startsWith("S")),
      ...expanded.flatMap((u) => [...u]),
    ]);
  }

  async function check(input: Omit<DecisionInput, "groups">): Promise<PolicyDecision> {
    const current = policy();
    const decision = decidePolicy(current, { ...input, groups: await groupsOf(input.person) });
    if (!decision.allowed) await audit(options, input.person, input.action, decision);
    return decision;
  }

  const allowsAction = async (action: PolicyAction, userId: string) =>
    (await check({ person: userId, action })).allowed;
  const allows = (role: Role, userId: string) => allowsAction(ROLE_ACTION[role], userId);
  const within = (action: PolicyAction, userId: string, budgetMs: number) =>
    decideWithin(() => allowsAction(action, userId), budgetMs);

  return {
    allows,
    decide: (role, userId, budgetMs) => within(ROLE_ACTION[role], userId, budgetMs),
    may: allowsAction,
    mayWithin: within,
    who: (action) => whoMay(policy(), action),
    policy,
    groupsOf,
    membersOf,
    check,
  };
}

/** A Slack user group's members, from a five-minute cache; concurrent askers share one Slack call. */
function createGroupMembers(deps: {
  client: Pick<webApi.WebClient, "usergroups">;
  log: Logger;
  now: () => number;
}): (groupId: string) => Promise<Set<string>> {
  const { now } = deps;
  const groups = new Map<string, { users: Set<string>; at: number }>();
  const pending = new Map<string, Promise<Set<string>>>();

  async function fetchMembers(groupId: string): Promise<Set<string>> {
    const cached = groups.get(groupId);
    try {
      const result = await deps.client.usergroups.users.list({ usergroup: groupId });
      const users = new Set(result.users ?? []);
      groups.set(groupId, { users, at: now() });
      return users;
    } catch (error) {
      deps.log.warn({ err: error, groupId }, "could not expand a Slack user group");
      // A stale answer is better than locking everyone out while Slack hiccups.
      return cached?.users ?? new Set();
    } finally {
      pending.delete(groupId);
    }
  }

  return (groupId) => {
    const cached = groups.get(groupId);
    if (cached && now() - cached.at < GROUP_CACHE_MS) return Promise.resolve(cached.users);
    let inflight = pending.get(groupId);
    if (!inflight) {
      inflight = fetchMembers(groupId);
      pending.set(groupId, inflight);
    }
    return inflight;
  };
}

async function audit(
  options: { log: Logger; audit?: (entry: AuditEntry) => void | Promise<void> },
  person: string,
  action: PolicyAction,
  decision: PolicyDecision,
) {
  try {
    await options.audit?.({
      requestId: null,
      actor: person,
      action: "policy_denied",
      detail: { action, rule: decision.rule, reason: decision.reason },
    });
  } catch (error) {
    options.log.warn({ err: error }, "could not audit a policy decision");
  }
}

/** The answer of `allowed` if it comes within `budgetMs`, else "unknown". */
async function decideWithin(allowed: () => Promise<boolean>, budgetMs: number): Promise<Decision> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"unknown">((resolve) => {
    timer = setTimeout(() => {
      resolve("unknown");
    }, budgetMs);
  });
  const answer = allowed().then((ok): Decision => (ok ? "allowed" : "denied"));
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The Slack IDs of the people and user groups in the role's policy groups. */
function whoMay(current: Policy, action: Action): string[] {
  const role = ACTION_ROLE[action];
  const names =
    role === "requester"
      ? current.roles.requesters
      : role === "approver"
        ? current.roles.approvers
        : current.roles.admins;
  if (names === undefined || names.includes("everyone")) return [];
  return [...new Set(names.flatMap((name) => current.groups[name] ?? []))];
}
