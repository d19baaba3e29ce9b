import type { Access } from "../access.js";
import type { ShownApprovals } from "../requests/records.js";
import type { RequestPatch, RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import {
  approvalNotCountingWords,
  approvalRecordedWords,
  earlierPlanResetWords,
  lapsedWords,
} from "../views/policy-words.js";
import { approvalRuleFor, tally, tallyWords, type Tally } from "./approvals.js";
import type { ApprovalRule, PolicyFile } from "./schema.js";
import { askOf } from "./usage.js";

/**
 * One approval click under the policy's approval rule: recorded for the plan (or the destroy
 * pipeline) it was given on, counted, and either enough (the caller plays the job through its one
 * conditional claim) or shown on the message as what is still needed.
 */

export type ApprovalOutcome =
  | { kind: "met"; rule: string; tally: string; by: string[] }
  | { kind: "waiting"; words: string; request: RequestRecord | undefined };

interface ApprovalDeps {
  access: Pick<Access, "policy" | "groupsOf">;
  store: AsyncStore;
}

const destructive = (request: RequestRecord) =>
  (request.review?.plan.resources ?? []).some(
    (resource) => resource.action === "delete" || resource.action === "replace",
  );

/** The rule that decides a request's approvals: a destroy's, an extension's, or a create's by its plan. */
export function ruleOf(policy: PolicyFile, request: RequestRecord): ApprovalRule {
  if (request.kind === "destroy")
    return approvalRuleFor(policy, "destroy", askOf(request.spec), true);
  if (request.kind === "extend") return approvalRuleFor(policy, "extend", askOf(request.spec));
  return approvalRuleFor(policy, "create", askOf(request.spec), destructive(request));
}

/** An extension request has no pipeline or plan: its approvals are kept under one key. */
export const EXTENSION_KEY = 1;

/**
 * What a request's approvals are kept under: the plan job they were given on (a re-run plan
 * starts with none), or a destroy request's pipeline. Undefined while there is nothing to approve.
 */
export function approvalKey(request: RequestRecord): number | undefined {
  if (request.kind === "destroy") return request.pipelineId ?? undefined;
  if (request.kind === "extend") return EXTENSION_KEY;
  return request.review?.planJobId;
}

/**
 * Who may fill a place of `rule` (Slack user and user-group IDs), for the message and the call to
 * approvers; the requester is left out unless the rule lets them approve their own request.
 */
export function approversOf(policy: PolicyFile, rule: ApprovalRule, requester: string): string[] {
  const names = rule.require.flatMap((need) =>
    need.group === "everyone" ? policy.roles.approvers : [need.group],
  );
  const ids = names.includes("everyone") ? [] : names.flatMap((name) => policy.groups[name] ?? []);
  return [...new Set(ids)].filter((id) => rule.self_approval || id !== requester);
}

/** The approvals a request shows: a plan's in its review, a destroy's or extension's on the request. */
export const shownOf = (request: RequestRecord): ShownApprovals | undefined =>
  request.kind === "create" ? request.review?.approvals : (request.approvals ?? undefined);

/** The change that makes a request show `shown`. */
function showing(request: RequestRecord, shown: ShownApprovals): RequestPatch {
  if (request.kind !== "create" || request.review === null) return { approvals: shown };
  return { review: { ...request.review, approvals: shown } };
}

/** Counts the approvals kept for `key`, removing (and naming) those that lapsed. */
async function count(
  deps: ApprovalDeps,
  request: RequestRecord,
  requesterGroups: readonly string[],
  rule: ApprovalRule,
  key: number,
  now: Date,
): Promise<{ counted: Tally; notes: string[] }> {
  const { approvals } = deps.store;
  const counted = tally(
    rule,
    await approvals.list(request.id, key),
    request.requester,
    requesterGroups,
    now,
  );
  const notes: string[] = [];
  if (counted.lapsed.length > 0) {
    const users = counted.lapsed.map((a) => a.user);
    await approvals.remove(request.id, key, users);
    notes.push(lapsedWords(users, rule.lapse_after ?? ""));
  }
  if (await approvals.earlier(request.id, key)) notes.push(earlierPlanResetWords);
  return { counted, notes };
}

/** What a request waiting for approval shows before (or between) clicks. */
function shownFor(
  policy: PolicyFile,
  request: RequestRecord,
  rule: ApprovalRule,
  counted: Tally,
  notes: string[],
): ShownApprovals {
  return {
    tally: tallyWords(counted),
    by: counted.requirements.flatMap((need) => need.by),
    notes,
    approvers: approversOf(policy, rule, request.requester),
  };
}

/**
 * As a request starts waiting for approval (a plan just posted, a destroy job waiting): who may
 * approve it, and the approvals it shows when its rule needs more than one (none given yet
 * unless some were kept for this plan) or there is something to say about earlier ones.
 */
export async function waitingApprovals(
  deps: ApprovalDeps,
  request: RequestRecord,
  now: Date,
): Promise<{ approvers: string[]; approvals: ShownApprovals | undefined }> {
  const policy = deps.access.policy();
  const rule = ruleOf(policy, request);
  const approvers = approversOf(policy, rule, request.requester);
  const key = approvalKey(request);
  if (key === undefined) return { approvers, approvals: undefined };
  const requesterGroups = await deps.access.groupsOf(request.requester);
  const { counted, notes } = await count(deps, request, requesterGroups, rule, key, now);
  const places = rule.require.reduce((n, need) => n + need.count, 0);
  const shown = shownFor(policy, request, rule, counted, notes);
  return { approvers, approvals: places > 1 || notes.length > 0 ? shown : undefined };
}

/** How many times a tally is written again when the approvals changed as it was written. */
const TALLY_WRITES = 3;

/**
 * Writes the tally a request shows. Another replica may have counted a click of its own at the
 * same time and written its tally after this one counted: the approvals are counted again once
 * it is written, and the tally written again while they changed, so that the last one written
 * counts every approval given before it.
 */
async function showApprovals(
  deps: ApprovalDeps,
  about: {
    request: RequestRecord;
    rule: ApprovalRule;
    key: number;
    requesterGroups: string[];
    now: Date;
  },
  first: { counted: Tally; notes: string[] },
): Promise<{ shown: ShownApprovals; moved: RequestRecord | undefined }> {
  const { request, rule, key, requesterGroups, now } = about;
  const policy = deps.access.policy();
  let { counted, notes } = first;
  for (let write = 1; ; write += 1) {
    // The request as the store holds it now: the notes it shows are kept, the new ones added.
    const current = (await deps.store.getRequest(request.id)) ?? request;
    const kept = [...new Set([...(shownOf(current)?.notes ?? []), ...notes])];
    const shown = shownFor(policy, current, rule, counted, kept);
    const moved = await deps.store.transition(
      request.id,
      ["awaiting_approval"],
      "awaiting_approval",
      showing(current, shown),
    );
    if (moved === undefined || write === TALLY_WRITES) return { shown, moved };
    const again = await count(deps, request, requesterGroups, rule, key, now);
    const by = again.counted.requirements.flatMap((need) => need.by);
    const same = by.join(" ") === shown.by.join(" ") && tallyWords(again.counted) === shown.tally;
    if (same || again.counted.met) return { shown, moved };
    ({ counted, notes } = again);
  }
}

const WHAT = { create: "plan", destroy: "destroy", extend: "extension" } as const;

export async function recordApproval(
  deps: ApprovalDeps,
  request: RequestRecord,
  user: string,
  now: Date,
): Promise<ApprovalOutcome> {
  const policy = deps.access.policy();
  const rule = ruleOf(policy, request);
  const key = approvalKey(request);
  if (key === undefined) return { kind: "met", rule: rule.name, tally: "", by: [user] };
  const [groups, requesterGroups] = await Promise.all([
    deps.access.groupsOf(user),
    deps.access.groupsOf(request.requester),
  ]);
  // From here to the write below, clicks on one request are counted one at a time (callers
  // hold the request's turn: requests/one-at-a-time.ts).
  const at = now.toISOString();
  await deps.store.approvals.add({ requestId: request.id, planJobId: key, user, groups, at });
  const { counted, notes } = await count(deps, request, requesterGroups, rule, key, now);
  const words = tallyWords(counted);
  if (counted.met) {
    const by = counted.requirements.flatMap((need) => need.by);
    return { kind: "met", rule: rule.name, tally: words, by };
  }
  const { shown, moved } = await showApprovals(
    deps,
    { request, rule, key, requesterGroups, now },
    { counted, notes },
  );
  await deps.store.audit({
    requestId: request.id,
    actor: user,
    action: "approval_recorded",
    detail: { rule: rule.name, tally: words, counts: shown.by.includes(user) },
  });
  const what = WHAT[request.kind];
  return {
    kind: "waiting",
    words: shown.by.includes(user)
      ? approvalRecordedWords(words, what)
      : approvalNotCountingWords(words, what),
    request: moved,
  };
}

/**
 * The tracker's pass over a request waiting for approval: approvals older than the rule allows
 * are removed, the message says whose lapsed, and the removal is audited. The request as it now
 * shows, or undefined when nothing lapsed.
 */
export async function dropLapsed(
  deps: ApprovalDeps,
  request: RequestRecord,
  now: Date,
): Promise<RequestRecord | undefined> {
  if (request.status !== "awaiting_approval") return undefined;
  const key = approvalKey(request);
  const policy = deps.access.policy();
  const rule = ruleOf(policy, request);
  if (key === undefined || rule.lapse_after === undefined) return undefined;
  const requesterGroups = await deps.access.groupsOf(request.requester);
  const given = await deps.store.approvals.list(request.id, key);
  const counted = tally(rule, given, request.requester, requesterGroups, now);
  if (counted.lapsed.length === 0) return undefined;
  const users = counted.lapsed.map((a) => a.user);
  await deps.store.approvals.remove(request.id, key, users);
  const current = (await deps.store.getRequest(request.id)) ?? request;
  const note = lapsedWords(users, rule.lapse_after);
  const shown = shownFor(policy, current, rule, counted, [
    ...(shownOf(current)?.notes ?? []),
    note,
  ]);
  const moved = await deps.store.transition(
    request.id,
    ["awaiting_approval"],
    "awaiting_approval",
    showing(current, shown),
    undefined,
    {
      actor: "vmbot",
      action: "approval_lapsed",
      detail: { rule: rule.name, users, tally: shown.tally },
    },
  );
  return moved;
}
