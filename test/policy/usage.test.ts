/**
 * A create request's quota check as its write makes it again: under which quotas, and with what
 * is held at the write.
 */
import { describe, expect, it } from "vitest";
import { parsePolicy, type Policy } from "../../src/policy/schema.js";
import { quotaGuardOf } from "../../src/policy/usage.js";
import { SAMPLE_SPEC } from "../support/requests.js";

function policyOf(text: string): Policy {
  const parsed = parsePolicy(text);
  if (!parsed.ok) throw new Error(parsed.problems.join("; "));
  return { ...parsed.policy, source: "test" };
}

const POLICY = policyOf(`
version: 1
groups:
  ops: [U0OPS1, U0OPS2]
  devs: [U0DEV1]
roles: { requesters: [everyone], approvers: [ops], admins: [ops] }
quotas:
  - { group: everyone, per: person, max: { vms: 2 } }
  - { group: ops, per: group, max: { vms: 3 } }
`);

/** The members of the one group a group quota counts. */
const MEMBERS = new Map([["ops", new Set(["U0OPS1", "U0OPS2"])]]);

const held = (owner: string, name: string) => ({ owner, spec: { ...SAMPLE_SPEC, name } });

describe("a create request's quota check, made again in its write", () => {
  it("counts under the person's own quota and each group quota they share, and nothing else", () => {
    expect(quotaGuardOf(POLICY, "U0OPS1", ["ops"], SAMPLE_SPEC, MEMBERS)?.scopes).toEqual([
      "person:U0OPS1",
      "group:ops",
    ]);
    expect(quotaGuardOf(POLICY, "U0DEV1", ["devs"], SAMPLE_SPEC, MEMBERS)?.scopes).toEqual([
      "person:U0DEV1",
    ]);
    const none = policyOf(
      "version: 1\ngroups: { ops: [U0OPS1] }\nroles: { requesters: [everyone], approvers: [ops], admins: [ops] }\n",
    );
    expect(quotaGuardOf(none, "U0DEV1", [], SAMPLE_SPEC, new Map())).toBeUndefined();
  });

  it("fits while the person's and the group's VMs held at the write leave room, counting the others' only in their group", () => {
    const guard = quotaGuardOf(POLICY, "U0OPS1", ["ops"], SAMPLE_SPEC, MEMBERS);
    expect(guard?.fits([held("U0OPS1", "a"), held("U0DEV1", "b"), held("U0DEV1", "c")])).toBe(true);
    expect(guard?.fits([held("U0OPS1", "a"), held("U0OPS1", "b")])).toBe(false);
    expect(guard?.fits([held("U0OPS1", "a"), held("U0OPS2", "b")])).toBe(true);
    expect(guard?.fits([held("U0OPS1", "a"), held("U0OPS2", "b"), held("U0OPS2", "c")])).toBe(
      false,
    );
    // Someone who held nothing when the form was checked counts as well, by the group's members.
    expect(guard?.fits([held("U0OPS2", "a"), held("U0OPS2", "b"), held("U0NEW", "c")])).toBe(true);
    const grown = new Map([["ops", new Set(["U0OPS1", "U0OPS2", "U0NEW"])]]);
    const again = quotaGuardOf(POLICY, "U0OPS1", ["ops"], SAMPLE_SPEC, grown);
    expect(again?.fits([held("U0OPS2", "a"), held("U0OPS2", "b"), held("U0NEW", "c")])).toBe(false);
  });
});
