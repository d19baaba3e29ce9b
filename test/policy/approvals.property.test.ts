import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Access } from "../../src/access.js";
import { recordApproval, shownOf } from "../../src/policy/approval-step.js";
import { tally } from "../../src/policy/approvals.js";
import type { ApprovalRule, Policy } from "../../src/policy/schema.js";
import { asAsyncStore } from "../../src/store/async.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { RequestRecord, Store } from "../../src/store/store.js";
import type { PlanReviewRecord } from "../../src/tracker/review.js";
import type { VmSpec } from "../../src/vm/spec.js";

/**
 * For random policies (groups, an approval rule) and random click orders, the apply (or, for a
 * destroy request, the destroy job) is played (the one conditional claim won) exactly when the
 * rule is met, and never twice.
 */

const PEOPLE = ["U0P0", "U0P1", "U0P2", "U0P3", "U0P4", "U0P5"];
const GROUPS = ["g0", "g1", "g2"];
const REQUESTER = "U0P0";

const SPEC: VmSpec = {
  name: "web-01",
  node: "pve",
  templateId: 9000,
  templateName: "ubuntu",
  cores: 4,
  memoryMb: 4096,
  diskGb: 40,
  ip: "192.168.1.50/24",
  gateway: "192.168.1.1",
  dns: "192.168.1.1",
  vmId: 0,
  vlanId: 0,
};

const REVIEW: PlanReviewRecord = {
  plan: {
    resources: [],
    derivedCounts: { add: 1, change: 0, destroy: 0, replace: 0, import: 0 },
    noChanges: false,
    errors: [],
    outputChanges: [],
    notes: [],
  },
  planJobId: 7,
  planJobUrl: "http://127.0.0.1/job/7",
  planFile: "none",
};

const scenario = fc.record({
  /** Who is in which group. */
  membership: fc.array(fc.subarray(GROUPS), { minLength: PEOPLE.length, maxLength: PEOPLE.length }),
  require: fc.uniqueArray(
    fc.record({ group: fc.constantFrom(...GROUPS), count: fc.integer({ min: 1, max: 2 }) }),
    { minLength: 1, maxLength: 3, selector: (need) => need.group },
  ),
  requesterGroupMayApprove: fc.boolean(),
  selfApproval: fc.boolean(),
  clicks: fc.array(fc.constantFrom(...PEOPLE), { minLength: 0, maxLength: 12 }),
  kind: fc.constantFrom("create" as const, "destroy" as const),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

/** Whether distinct approvers among `people` can fill every place, by trying every assignment. */
function meetable(
  places: string[],
  people: string[],
  fits: (person: string, group: string) => boolean,
): boolean {
  const [first, ...rest] = places;
  if (first === undefined) return true;
  return people.some(
    (person, i) =>
      fits(person, first) &&
      meetable(
        rest,
        people.filter((_, j) => j !== i),
        fits,
      ),
  );
}

function policyOf(s: Scenario): Policy {
  const groups: Record<string, string[]> = {};
  for (const group of GROUPS) {
    groups[group] = PEOPLE.filter((_, i) => s.membership[i]?.includes(group));
  }
  const rule: ApprovalRule = {
    name: "rule",
    action: s.kind,
    require: s.require,
    requester_group_may_approve: s.requesterGroupMayApprove,
    self_approval: s.selfApproval,
  };
  return {
    source: "test",
    version: 1,
    groups,
    roles: { approvers: GROUPS, admins: GROUPS },
    requests: [],
    quotas: [],
    approvals: [rule],
  };
}

function fakeAccess(policy: Policy): Access {
  const groupsOf = (user: string) =>
    Promise.resolve(GROUPS.filter((group) => policy.groups[group]?.includes(user)));
  return { policy: () => policy, groupsOf } as unknown as Access;
}

/**
 * Every call to the store answered when the scheduler says, in an order it picks: clicks on
 * replicas of their own, whose reads and writes land in any order.
 */
function scheduled<T extends object>(target: T, scheduler: fc.Scheduler): T {
  return new Proxy(target, {
    get(object, key, receiver) {
      const value: unknown = Reflect.get(object, key, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        await scheduler.schedule(Promise.resolve(), String(key));
        return (value as (...a: unknown[]) => unknown).apply(object, args);
      };
    },
  });
}

async function run(s: Scenario, store: Store, scheduler: fc.Scheduler) {
  const policy = policyOf(s);
  const access = fakeAccess(policy);
  const async = asAsyncStore(store);
  const shared = Object.assign(scheduled(async, scheduler), {
    approvals: scheduled(async.approvals, scheduler),
  });
  const { request } = store.createRequest({
    requester: REQUESTER,
    spec: SPEC,
    notes: [],
    channel: "C0VMBOT",
    submissionKey: `view:${String(Math.random())}`,
    kind: s.kind,
  });
  // A plan's approvals are kept by its plan job, a destroy's by its pipeline.
  store.transition(
    request.id,
    ["queued"],
    "awaiting_approval",
    s.kind === "create" ? { review: REVIEW } : { pipelineId: 900 },
  );
  let plays = 0;
  // All clicks at once, each on a replica of its own: none waits for another.
  const clicks = Promise.all(
    s.clicks.map(async (user: string) => {
      const current = store.getRequest(request.id);
      if (current?.status !== "awaiting_approval") return;
      const outcome = await recordApproval({ access, store: shared }, current, user, new Date());
      if (outcome.kind !== "met") return;
      const claimed = store.transition(request.id, ["awaiting_approval"], "applying");
      if (claimed) plays += 1;
    }),
  );
  await scheduler.waitFor(clicks);
  return { policy, plays, request: store.getRequest(request.id) };
}

/** Who the request's message shows as having approved, and who the store holds approvals of. */
function shownAndGiven(store: Store, request: RequestRecord | undefined, policy: Policy) {
  if (request === undefined) throw new Error("the request vanished");
  const key = request.kind === "create" ? REVIEW.planJobId : 900;
  const rule = policy.approvals[0]!;
  const groupsOf = (user: string) => GROUPS.filter((group) => policy.groups[group]?.includes(user));
  const counted = tally(
    rule,
    store.approvals.list(request.id, key),
    REQUESTER,
    groupsOf(REQUESTER),
    new Date(),
  );
  return {
    shown: [...(shownOf(request)?.by ?? [])].sort(),
    given: counted.requirements.flatMap((need) => need.by).sort(),
  };
}

describe("N-of-M approvals", () => {
  it("play the apply or the destroy exactly when the rule is met, and never twice", async () => {
    const store = openSqliteStore(":memory:");
    try {
      await fc.assert(
        fc.asyncProperty(scenario, fc.scheduler(), async (s, scheduler) => {
          const { policy, plays, request } = await run(s, store, scheduler);
          const requesterGroups = GROUPS.filter((g) => policy.groups[g]?.includes(REQUESTER));
          const fits = (person: string, group: string) =>
            (person !== REQUESTER || s.selfApproval) &&
            (policy.groups[group]?.includes(person) ?? false) &&
            (s.requesterGroupMayApprove ||
              !requesterGroups.includes(group) ||
              person === REQUESTER);
          const places = s.require.flatMap((need) => Array<string>(need.count).fill(need.group));
          const clickers = [...new Set(s.clicks)];
          expect(plays).toBe(meetable(places, clickers, fits) ? 1 : 0);
          // Waiting still, the message shows every approval counted, whatever order the clicks'
          // writes landed in.
          if (request?.status === "awaiting_approval" && s.clicks.length > 0) {
            const { shown, given } = shownAndGiven(store, request, policy);
            expect(shown).toEqual(given);
          }
        }),
        { numRuns: 300 },
      );
    } finally {
      store.close();
    }
  });
});
