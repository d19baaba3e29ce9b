import { describe, expect, it } from "vitest";
import {
  decide,
  NO_USAGE,
  type Ask,
  type DecisionInput,
  type PolicyAction,
  type QuotaState,
  type Usage,
} from "../../src/policy/decide.js";
import { parsePolicy, policyFromLists, type Policy } from "../../src/policy/schema.js";

const FILE = `
version: 1
groups:
  platform: [U0PLAT1, U0PLAT2]
  security: [U0SEC1, S0SECURITY]
  devs: [S0DEVS]
  interns: [U0INTERN]
roles:
  requesters: [devs, platform, interns]
  approvers: [platform, security]
  admins: [platform]
requests:
  - group: interns
    templates: [ubuntu]
    nodes: [pve]
    max: { cores: 2, memory_gib: 4, disk_gib: 20 }
  - group: devs
    templates: [ubuntu, debian]
    nodes: [pve, pve2]
    max: { cores: 16, memory_gib: 64, disk_gib: 200 }
  - group: platform
quotas:
  - group: devs
    per: person
    max: { vms: 3, cores: 24, memory_gib: 96, disk_gib: 400 }
  - group: devs
    per: group
    max: { vms: 10, cores: 64 }
  - group: interns
    max: { vms: 1 }
approvals:
  - name: big
    when: { cores_over: 16 }
    require: [{ group: platform }, { group: security }]
`;

const parsed = parsePolicy(FILE);
if (!parsed.ok) throw new Error(parsed.problems.join("\n"));
const POLICY: Policy = { ...parsed.policy, source: "test" };
const LISTS = policyFromLists({
  requesters: [],
  approvers: ["U0APPROVER", "S0TEAM"],
  admins: ["U0ADMIN"],
  allowSelfApproval: false,
});

const ask = (over: Partial<Ask> = {}): Ask => ({
  template: "ubuntu",
  node: "pve",
  cores: 2,
  memoryGib: 2,
  diskGib: 20,
  ...over,
});
const use = (over: Partial<Usage> = {}): Usage => ({ ...NO_USAGE, ...over });
const quota = (person: Partial<Usage> = {}, devs: Partial<Usage> = {}): QuotaState => ({
  person: use(person),
  groups: { devs: use(devs) },
});

type Row = [
  string, // what the row shows
  Policy,
  string[], // the person's groups
  PolicyAction,
  Ask | undefined,
  QuotaState | undefined,
  boolean, // allowed
  string, // rule
  RegExp, // reason
];

const ROWS: Row[] = [
  // Roles, with the policy file.
  [
    "dev may open the form",
    POLICY,
    ["devs"],
    "create",
    undefined,
    undefined,
    true,
    "roles.requesters",
    /allowed/,
  ],
  [
    "intern may open the form",
    POLICY,
    ["interns"],
    "create",
    undefined,
    undefined,
    true,
    "roles.requesters",
    /allowed/,
  ],
  [
    "security alone may not ask",
    POLICY,
    ["security"],
    "create",
    undefined,
    undefined,
    false,
    "roles.requesters",
    /may ask for VMs: the policy lets devs, platform or interns/,
  ],
  [
    "nobody in a group may not ask",
    POLICY,
    [],
    "create",
    undefined,
    undefined,
    false,
    "roles.requesters",
    /not among the people who may ask/,
  ],
  [
    "dev may see capacity",
    POLICY,
    ["devs"],
    "capacity",
    undefined,
    undefined,
    true,
    "roles.requesters",
    /allowed/,
  ],
  [
    "stranger may not see capacity",
    POLICY,
    [],
    "capacity",
    undefined,
    undefined,
    false,
    "roles.requesters",
    /ask for VMs/,
  ],
  [
    "dev may list",
    POLICY,
    ["devs"],
    "list",
    undefined,
    undefined,
    true,
    "roles.requesters",
    /allowed/,
  ],
  [
    "security may approve",
    POLICY,
    ["security"],
    "approve",
    undefined,
    undefined,
    true,
    "roles.approvers",
    /allowed/,
  ],
  [
    "platform may reject",
    POLICY,
    ["platform"],
    "reject",
    undefined,
    undefined,
    true,
    "roles.approvers",
    /allowed/,
  ],
  [
    "dev may not approve",
    POLICY,
    ["devs"],
    "approve",
    undefined,
    undefined,
    false,
    "roles.approvers",
    /approve or reject plans: the policy lets platform or security/,
  ],
  [
    "dev may not reject",
    POLICY,
    ["devs"],
    "reject",
    undefined,
    undefined,
    false,
    "roles.approvers",
    /approve or reject/,
  ],
  [
    "platform may unlock",
    POLICY,
    ["platform"],
    "unlock",
    undefined,
    undefined,
    true,
    "roles.admins",
    /allowed/,
  ],
  [
    "security may not unlock",
    POLICY,
    ["security"],
    "unlock",
    undefined,
    undefined,
    false,
    "roles.admins",
    /admins only/,
  ],
  [
    "platform sees the whole policy",
    POLICY,
    ["platform", "devs"],
    "admin",
    undefined,
    undefined,
    true,
    "roles.admins",
    /allowed/,
  ],
  [
    "a dev does not",
    POLICY,
    ["devs"],
    "admin",
    undefined,
    undefined,
    false,
    "roles.admins",
    /admins only/,
  ],
  // Allowances.
  [
    "a small ubuntu VM for a dev",
    POLICY,
    ["devs"],
    "create",
    ask(),
    quota(),
    true,
    "requests.1",
    /inside/,
  ],
  [
    "debian for a dev",
    POLICY,
    ["devs"],
    "create",
    ask({ template: "debian" }),
    quota(),
    true,
    "requests.1",
    /inside/,
  ],
  [
    "windows for a dev",
    POLICY,
    ["devs"],
    "create",
    ask({ template: "windows" }),
    quota(),
    false,
    "requests.1",
    /not ask for the windows template: you may use ubuntu or debian\. Ask someone in platform/,
  ],
  [
    "debian for an intern",
    POLICY,
    ["interns"],
    "create",
    ask({ template: "debian" }),
    quota(),
    false,
    "requests.0",
    /you may use ubuntu\./,
  ],
  [
    "pve2 for a dev",
    POLICY,
    ["devs"],
    "create",
    ask({ node: "pve2" }),
    quota(),
    true,
    "requests.1",
    /inside/,
  ],
  [
    "pve3 for a dev",
    POLICY,
    ["devs"],
    "create",
    ask({ node: "pve3" }),
    quota(),
    false,
    "requests.1",
    /may not place VMs on pve3: you may use pve or pve2/,
  ],
  [
    "pve2 for an intern",
    POLICY,
    ["interns"],
    "create",
    ask({ node: "pve2" }),
    quota(),
    false,
    "requests.0",
    /on pve2: you may use pve\./,
  ],
  [
    "16 cores for a dev",
    POLICY,
    ["devs"],
    "create",
    ask({ cores: 16 }),
    quota(),
    true,
    "requests.1",
    /inside/,
  ],
  [
    "17 cores for a dev",
    POLICY,
    ["devs"],
    "create",
    ask({ cores: 17 }),
    quota(),
    false,
    "requests.1",
    /17 cores is more cores than you may ask for in one VM: your limit is 16 cores/,
  ],
  [
    "4 cores for an intern",
    POLICY,
    ["interns"],
    "create",
    ask({ cores: 4 }),
    quota(),
    false,
    "requests.0",
    /your limit is 2 cores/,
  ],
  [
    "65 GiB for a dev",
    POLICY,
    ["devs"],
    "create",
    ask({ memoryGib: 65 }),
    quota(),
    false,
    "requests.1",
    /65 GiB is more memory .* 64 GiB/,
  ],
  [
    "300 GiB of disk for a dev",
    POLICY,
    ["devs"],
    "create",
    ask({ diskGib: 300 }),
    quota(),
    false,
    "requests.1",
    /300 GiB is more disk .* 200 GiB/,
  ],
  [
    "an intern who is a dev gets the dev's limits",
    POLICY,
    ["interns", "devs"],
    "create",
    ask({ cores: 8 }),
    quota(),
    true,
    "requests.1",
    /inside/,
  ],
  [
    "platform asks for anything",
    POLICY,
    ["platform"],
    "create",
    ask({ template: "windows", node: "pve9", cores: 64 }),
    quota(),
    true,
    "requests.2",
    /inside/,
  ],
  [
    "a requester without an allowance",
    { ...POLICY, roles: { ...POLICY.roles, requesters: ["everyone"] } },
    ["security"],
    "create",
    ask(),
    quota(),
    false,
    "requests",
    /No rule of the policy lets you ask/,
  ],
  // Quotas.
  [
    "a dev holding 2 VMs asks a third",
    POLICY,
    ["devs"],
    "create",
    ask(),
    quota({ vms: 2, cores: 4 }),
    true,
    "requests.1",
    /inside/,
  ],
  [
    "a dev holding 3 VMs asks a fourth",
    POLICY,
    ["devs"],
    "create",
    ask(),
    quota({ vms: 3, cores: 6, memoryGib: 6, diskGib: 60 }),
    false,
    "quotas.0",
    /Over quota: you may hold at most 3 VMs in all, and you hold 3 VMs with 6 cores, 6 GiB of memory and 60 GiB of disk .*make it 4 VMs/,
  ],
  [
    "a dev at 20 cores asks 4 more",
    POLICY,
    ["devs"],
    "create",
    ask({ cores: 4 }),
    quota({ vms: 1, cores: 20 }),
    true,
    "requests.1",
    /inside/,
  ],
  [
    "a dev at 20 cores asks 5 more",
    POLICY,
    ["devs"],
    "create",
    ask({ cores: 5 }),
    quota({ vms: 1, cores: 20 }),
    false,
    "quotas.0",
    /at most 24 cores in all.*25 cores/,
  ],
  [
    "a dev over the memory quota",
    POLICY,
    ["devs"],
    "create",
    ask({ memoryGib: 8 }),
    quota({ vms: 1, memoryGib: 90 }),
    false,
    "quotas.0",
    /at most 96 GiB in all.*98 GiB/,
  ],
  [
    "a dev over the disk quota",
    POLICY,
    ["devs"],
    "create",
    ask({ diskGib: 50 }),
    quota({ vms: 2, diskGib: 380 }),
    false,
    "quotas.0",
    /at most 400 GiB in all.*430 GiB/,
  ],
  [
    "the devs' group is at 10 VMs",
    POLICY,
    ["devs"],
    "create",
    ask(),
    quota({ vms: 0 }, { vms: 10 }),
    false,
    "quotas.1",
    /the devs group may hold at most 10 VMs in all.*it holds 10 VMs/,
  ],
  [
    "the devs' group at 62 cores, 2 more fits",
    POLICY,
    ["devs"],
    "create",
    ask({ cores: 2 }),
    quota({}, { vms: 5, cores: 62 }),
    true,
    "requests.1",
    /inside/,
  ],
  [
    "the devs' group at 62 cores, 4 more does not",
    POLICY,
    ["devs"],
    "create",
    ask({ cores: 4 }),
    quota({}, { vms: 5, cores: 62 }),
    false,
    "quotas.1",
    /64 cores/,
  ],
  [
    "an intern holding one VM",
    POLICY,
    ["interns"],
    "create",
    ask(),
    quota({ vms: 1, cores: 2 }),
    false,
    "quotas.2",
    /you may hold at most 1 VM in all/,
  ],
  [
    "an intern holding none",
    POLICY,
    ["interns"],
    "create",
    ask(),
    quota(),
    true,
    "requests.0",
    /inside/,
  ],
  [
    "platform has no quota",
    POLICY,
    ["platform"],
    "create",
    ask({ cores: 64 }),
    quota({ vms: 40, cores: 900 }),
    true,
    "requests.2",
    /inside/,
  ],
  [
    "no quota state reads as nothing held",
    POLICY,
    ["devs"],
    "create",
    ask(),
    undefined,
    true,
    "requests.1",
    /inside/,
  ],
  [
    "the allowance is checked before the quota",
    POLICY,
    ["devs"],
    "create",
    ask({ template: "windows" }),
    quota({ vms: 3 }),
    false,
    "requests.1",
    /windows template/,
  ],
  // Today's lists as the policy.
  [
    "lists: anyone may ask",
    LISTS,
    [],
    "create",
    ask({ cores: 128 }),
    quota({ vms: 99 }),
    true,
    "roles.requesters",
    /inside/,
  ],
  [
    "lists: an approver may approve",
    LISTS,
    ["approvers"],
    "approve",
    undefined,
    undefined,
    true,
    "roles.approvers",
    /allowed/,
  ],
  [
    "lists: a stranger may not approve",
    LISTS,
    [],
    "approve",
    undefined,
    undefined,
    false,
    "roles.approvers",
    /approve or reject/,
  ],
  [
    "lists: an admin may unlock",
    LISTS,
    ["admins"],
    "unlock",
    undefined,
    undefined,
    true,
    "roles.admins",
    /allowed/,
  ],
  [
    "lists: an approver may not unlock",
    LISTS,
    ["approvers"],
    "unlock",
    undefined,
    undefined,
    false,
    "roles.admins",
    /admins only/,
  ],
  [
    "lists with requesters: outsiders refused",
    policyFromLists({
      requesters: ["U0R"],
      approvers: ["U0A"],
      admins: ["U0A"],
      allowSelfApproval: false,
    }),
    [],
    "create",
    undefined,
    undefined,
    false,
    "roles.requesters",
    /ask for VMs/,
  ],
];

describe("the policy decision", () => {
  it("has a table of at least 40 decisions", () => {
    expect(ROWS.length).toBeGreaterThanOrEqual(40);
  });

  it.each(ROWS)(
    "%s",
    (_what, policy, groups, action, request, quotaState, allowed, rule, reason) => {
      const input: DecisionInput = {
        person: "U0PERSON",
        groups,
        action,
        ...(request === undefined ? {} : { request }),
        ...(quotaState === undefined ? {} : { quota: quotaState }),
      };
      const decision = decide(policy, input);
      expect({ allowed: decision.allowed, rule: decision.rule }).toEqual({ allowed, rule });
      expect(decision.reason).toMatch(reason);
    },
  );

  it("puts a refusal under the field it is about", () => {
    const field = (over: Partial<Ask>, held = quota()) =>
      decide(POLICY, {
        person: "U0D",
        groups: ["devs"],
        action: "create",
        request: ask(over),
        quota: held,
      }).field;
    expect(field({ template: "windows" })).toBe("template");
    expect(field({ node: "pve9" })).toBe("node");
    expect(field({ cores: 99 })).toBe("cores");
    expect(field({ memoryGib: 99 })).toBe("memory");
    expect(field({ diskGib: 999 })).toBe("disk");
    expect(field({}, quota({ vms: 3 }))).toBe("name");
  });
});
