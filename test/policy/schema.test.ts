import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parsePolicy, policyFromLists } from "../../src/policy/schema.js";

const GOOD = `
version: 1
groups:
  platform: [U0PLAT1, S0PLATFORM]
  security: [U0SEC1]
roles:
  approvers: [platform, security]
  admins: [platform]
quotas:
  - group: everyone
    max: { vms: 2 }
approvals:
  - name: big
    when: { cores_over: 16 }
    require: [{ group: platform }, { group: security, count: 1 }]
    lapse_after: 24h
`;

describe("the policy file", () => {
  it("reads a good file, with defaults filled in", () => {
    const parsed = parsePolicy(GOOD);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.policy.quotas[0]?.per).toBe("person");
    expect(parsed.policy.approvals[0]).toMatchObject({
      action: "create",
      requester_group_may_approve: true,
      self_approval: false,
      require: [
        { group: "platform", count: 1 },
        { group: "security", count: 1 },
      ],
    });
  });

  it("names every problem with where it is", () => {
    const parsed = parsePolicy(`
version: 1
groups:
  platform: [alice]
roles:
  approvers: [platform]
  admins: []
quotas:
  - group: platform
    max: { cpus: 4 }
approvals:
  - name: big
    lapse_after: tomorrow
    require: [{ group: platform, count: 0 }]
`);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^groups\.platform\.0: is not a Slack user ID/),
        expect.stringMatching(/^roles\.admins: /),
        expect.stringMatching(/^quotas\.0\.max: .*cpus/),
        expect.stringMatching(/^approvals\.0\.lapse_after: is not a duration/),
        expect.stringMatching(/^approvals\.0\.require\.0\.count: /),
      ]),
    );
    expect(parsed.problems).toHaveLength(5);
  });

  it("names a group that rules use and nobody defined", () => {
    const parsed = parsePolicy(`
version: 1
groups: { platform: [U0PLAT1] }
roles: { approvers: [platform, secuirty], admins: [platform] }
requests: [{ group: devs }]
approvals:
  - { name: big, require: [{ group: security }] }
  - { name: big, require: [{ group: platform }] }
`);
    expect(parsed).toEqual({
      ok: false,
      problems: [
        'roles.approvers.1 names the group "secuirty", which groups does not define',
        'requests.0.group names the group "devs", which groups does not define',
        'approvals.0.require.0.group names the group "security", which groups does not define',
        'approvals.1.name "big" is used twice',
      ],
    });
  });

  it("says where YAML itself is broken", () => {
    const parsed = parsePolicy("version: 1\ngroups: [unclosed\n");
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems[0]).toMatch(/^the file is not valid YAML \(line \d+/);
  });

  it("refuses an empty file and one of another version", () => {
    expect(parsePolicy("").ok).toBe(false);
    const other = parsePolicy(GOOD.replace("version: 1", "version: 2"));
    expect(other.ok ? [] : other.problems).toEqual([expect.stringMatching(/^version: /)]);
  });

  it("makes today's lists a policy of one approval from an approver, for a create and a destroy", () => {
    const policy = policyFromLists({
      requesters: [],
      approvers: ["U0A", "S0TEAM"],
      admins: ["U0ADMIN"],
      allowSelfApproval: true,
    });
    expect(policy.roles.requesters).toBeUndefined();
    expect(policy.groups).toEqual({ approvers: ["U0A", "S0TEAM"], admins: ["U0ADMIN"] });
    expect(policy.approvals).toEqual([
      expect.objectContaining({
        action: "create",
        require: [{ group: "approvers", count: 1 }],
        self_approval: true,
      }),
      expect.objectContaining({
        action: "destroy",
        require: [{ group: "approvers", count: 1 }],
        self_approval: true,
      }),
    ]);
  });
});

describe("the example policy", () => {
  it("passes, with two groups that approve, a quota and a two-group rule for big VMs", () => {
    const parsed = parsePolicy(
      readFileSync(join(import.meta.dirname, "../../examples/policy/policy.yaml"), "utf8"),
    );
    expect(parsed.ok ? [] : parsed.problems).toEqual([]);
    if (!parsed.ok) return;
    expect(parsed.policy.roles.approvers).toEqual(["platform", "security"]);
    expect(parsed.policy.quotas.length).toBeGreaterThan(0);
    expect(parsed.policy.approvals[0]?.require.map((need) => need.group)).toEqual([
      "platform",
      "security",
    ]);
  });
});
