import { describe, expect, it } from "vitest";
import { longerLeaseMs, mayAskLonger } from "../../src/extend/ask.js";
import { policyFromLists, type ApprovalRule } from "../../src/policy/schema.js";
import type { VmRecord } from "../../src/store/inventory.js";
import type { LeaseSettings } from "../../src/vm/lease.js";
import { SAMPLE_SPEC } from "../support/requests.js";

const LEASES: LeaseSettings = {
  defaultMs: 60_000,
  maxMs: 120_000,
  warnMs: [30_000],
  onExpiry: "request-destroy",
};

const VM: VmRecord = {
  name: SAMPLE_SPEC.name,
  requestId: "vm-abc-12345678",
  owner: "U0OWNER",
  spec: SAMPLE_SPEC,
  stateName: null,
  address: null,
  pipelineId: 1,
  approvedBy: null,
  createdAt: "2026-12-03T12:00:00Z",
  leaseUntil: "2026-12-03T12:01:00Z",
  status: "live",
  statusNote: null,
  checkedAt: null,
};

const rule = (when?: ApprovalRule["when"]): ApprovalRule => ({
  name: "long leases",
  action: "extend",
  ...(when === undefined ? {} : { when }),
  require: [{ group: "approvers", count: 1 }],
  requester_group_may_approve: true,
  self_approval: false,
});

const policyWith = (approvals: ApprovalRule[]) => ({
  ...policyFromLists({
    requesters: [],
    approvers: ["U0A"],
    admins: ["U0A"],
    allowSelfApproval: false,
  }),
  approvals,
});

describe("a lease past the maximum", () => {
  it("is twice the maximum, and nothing without a maximum", () => {
    expect(longerLeaseMs(LEASES)).toBe(240_000);
    expect(longerLeaseMs({ ...LEASES, maxMs: null })).toBeNull();
  });

  it.each([
    ["an extend rule for every VM", [rule()], VM, LEASES, true],
    ["an extend rule for the VM's node", [rule({ nodes: [SAMPLE_SPEC.node] })], VM, LEASES, true],
    ["an extend rule for another node", [rule({ nodes: ["elsewhere"] })], VM, LEASES, false],
    ["only create rules", [{ ...rule(), action: "create" as const }], VM, LEASES, false],
    ["today's lists as the policy", undefined, VM, LEASES, false],
    ["a VM without a lease", [rule()], { ...VM, leaseUntil: null }, LEASES, false],
    ["a VM gone outside vmbot", [rule()], { ...VM, status: "gone" as const }, LEASES, false],
    ["leases without a maximum", [rule()], VM, { ...LEASES, maxMs: null }, false],
  ])("with %s: offered: %s", (_, approvals, vm, settings, offered) => {
    const policy =
      approvals === undefined
        ? policyFromLists({
            requesters: [],
            approvers: ["U0A"],
            admins: ["U0A"],
            allowSelfApproval: false,
          })
        : policyWith(approvals);
    expect(mayAskLonger(policy, settings, vm)).toBe(offered);
  });
});
