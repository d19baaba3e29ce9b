import { describe, expect, it } from "vitest";
import {
  approvalRuleFor,
  DEFAULT_RULE,
  tally,
  tallyWords,
  type GivenApproval,
} from "../../src/policy/approvals.js";
import type { ApprovalRule } from "../../src/policy/schema.js";
import { policyFromLists } from "../../src/policy/schema.js";

const RULE: ApprovalRule = {
  name: "big",
  action: "create",
  require: [
    { group: "platform", count: 1 },
    { group: "security", count: 1 },
  ],
  requester_group_may_approve: true,
  self_approval: false,
};
const NOW = new Date("2026-12-03T12:00:00Z");
const given = (user: string, groups: string[], hoursAgo = 0): GivenApproval => ({
  user,
  groups,
  at: new Date(NOW.getTime() - hoursAgo * 3_600_000).toISOString(),
});

describe("counting approvals", () => {
  it("fills both places when one approver is in both groups and another only in one", () => {
    // Counted in click order, the first would take platform's place; a matching moves them.
    const result = tally(
      RULE,
      [given("U0BOTH", ["platform", "security"]), given("U0PLAT", ["platform"])],
      "U0REQ",
      [],
      NOW,
    );
    expect(result.met).toBe(true);
    expect(tallyWords(result)).toBe("2 of 2 approvals: 1 of 1 from platform, 1 of 1 from security");
  });

  it("removes approvals older than lapse_after", () => {
    const rule = { ...RULE, lapse_after: "24h" };
    const result = tally(
      rule,
      [given("U0PLAT", ["platform"], 25), given("U0SEC", ["security"], 1)],
      "U0REQ",
      [],
      NOW,
    );
    expect(result.met).toBe(false);
    expect(result.lapsed.map((a) => a.user)).toEqual(["U0PLAT"]);
    expect(tallyWords(result)).toBe("1 of 2 approvals: 0 of 1 from platform, 1 of 1 from security");
  });

  it("does not count the requester's own group when the rule says so, nor the requester", () => {
    const rule = { ...RULE, requester_group_may_approve: false };
    const result = tally(
      rule,
      [given("U0REQ", ["platform"]), given("U0PLAT", ["platform"]), given("U0SEC", ["security"])],
      "U0REQ",
      ["platform"],
      NOW,
    );
    expect(result.requirements).toEqual([
      { group: "platform", count: 1, by: [] },
      { group: "security", count: 1, by: ["U0SEC"] },
    ]);
  });

  it("picks the first rule that matches the request, else one approval from any approver", () => {
    const policy = {
      ...policyFromLists({
        requesters: [],
        approvers: ["U0A"],
        admins: ["U0A"],
        allowSelfApproval: false,
      }),
      approvals: [
        { ...RULE, name: "destroys", when: { destructive: true } },
        { ...RULE, name: "big", when: { cores_over: 16 } },
      ],
    };
    const ask = { template: "ubuntu", node: "pve", cores: 32, memoryGib: 4, diskGib: 20 };
    expect(approvalRuleFor(policy, "create", ask, true).name).toBe("destroys");
    expect(approvalRuleFor(policy, "create", ask).name).toBe("big");
    expect(approvalRuleFor(policy, "create", { ...ask, cores: 16 })).toBe(DEFAULT_RULE);
  });
});
