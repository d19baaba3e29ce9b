import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parsePlanJson, readPlanJson, type PlanOutput } from "../../src/terraform/plan-json.js";
import type { PlanResource } from "../../src/terraform/plan-text.js";
import { fixturePath, readFixture } from "../support/fixtures.js";

const DIR = "terraform-json";
const FIXTURES = [
  "basic.plan.json",
  "deep_module.plan.json",
  "explicit_null.plan.json",
  "output_depends_on.plan.json",
];

const created = (...addresses: string[]): PlanResource[] =>
  addresses.map((address) => ({ address, action: "create" }));

describe("reading JSON plans from test/fixtures/terraform-json", () => {
  it("has a test for every JSON plan fixture", () => {
    expect(readdirSync(fixturePath(DIR)).sort()).toEqual(FIXTURES);
  });

  it("reads basic.plan.json: a data source read, seven creates and eight outputs", () => {
    const result = parsePlanJson(readFixture(`${DIR}/basic.plan.json`));

    expect(result.resources).toEqual<PlanResource[]>([
      { address: "data.null_data_source.baz", action: "read" },
      ...created(
        "module.foo.null_resource.aliased",
        "module.foo.null_resource.foo",
        "null_resource.bar",
        "null_resource.baz[0]",
        "null_resource.baz[1]",
        "null_resource.baz[2]",
        "null_resource.foo",
      ),
    ]);
    expect(result.counts).toEqual({ add: 7, change: 0, destroy: 0 });
    expect(result.derivedCounts).toEqual({ add: 7, change: 0, destroy: 0, replace: 0, import: 0 });
    expect(result.outputs).toEqual<PlanOutput[]>([
      { name: "foo", action: "create", sensitive: true, known: true, value: "bar" },
      { name: "interpolated", action: "create", sensitive: false, known: false },
      { name: "interpolated_deep", action: "create", sensitive: false, known: false },
      { name: "list", action: "create", sensitive: false, known: true, value: ["foo", "bar"] },
      {
        name: "map",
        action: "create",
        sensitive: false,
        known: true,
        value: { foo: "bar", number: 42 },
      },
      { name: "referenced", action: "create", sensitive: false, known: false },
      { name: "referenced_deep", action: "create", sensitive: false, known: false },
      { name: "string", action: "create", sensitive: false, known: true, value: "foo" },
    ]);
    expect(result.outputChanges.map((output) => output.name)).toEqual([
      "foo",
      "interpolated",
      "interpolated_deep",
      "list",
      "map",
      "referenced",
      "referenced_deep",
      "string",
    ]);
    expect(result.terraformVersion).toBe("0.12.6");
    expect(result.noChanges).toBe(false);
    expect(result.errors).toEqual([]);
    expect(result.mismatch).toBeUndefined();
  });

  it("says why node resources are missing from a plan without that output", () => {
    const result = parsePlanJson(readFixture(`${DIR}/basic.plan.json`));

    expect(result.nodeResources).toBeUndefined();
    expect(result.nodeResourcesProblem).toBe("The plan has no output named node_resources.");
  });

  it("reads deep_module.plan.json: a create two modules down", () => {
    const result = parsePlanJson(readFixture(`${DIR}/deep_module.plan.json`));

    expect(result.resources).toEqual(created("module.foo.module.bar.null_resource.baz"));
    expect(result.counts).toEqual({ add: 1, change: 0, destroy: 0 });
    expect(result.outputs).toEqual([]);
  });

  it("reads explicit_null.plan.json: three creates", () => {
    const result = parsePlanJson(readFixture(`${DIR}/explicit_null.plan.json`));

    expect(result.resources).toEqual(
      created("null_resource.bar", "null_resource.baz", "null_resource.foo"),
    );
    expect(result.counts).toEqual({ add: 3, change: 0, destroy: 0 });
    expect(result.outputChanges).toEqual([]);
  });

  it("reads output_depends_on.plan.json: two creates and an output known only after apply", () => {
    const result = parsePlanJson(readFixture(`${DIR}/output_depends_on.plan.json`));

    expect(result.resources).toEqual(created("null_resource.bar", "null_resource.foo"));
    expect(result.counts).toEqual({ add: 2, change: 0, destroy: 0 });
    expect(result.outputs).toEqual([
      { name: "id", action: "create", sensitive: false, known: false },
    ]);
    expect(result.outputChanges).toEqual([{ name: "id", action: "create" }]);
  });
});

/** A plan document in the shape `terraform show -json` writes. */
function plan(parts: Record<string, unknown>): Record<string, unknown> {
  return { format_version: "1.2", terraform_version: "1.9.5", ...parts };
}

function vmChange(address: string, actions: string[], extra: Record<string, unknown> = {}) {
  const name = address.split(".").at(-1) ?? address;
  return {
    address,
    mode: "managed",
    type: "proxmox_virtual_environment_vm",
    name,
    provider_name: "registry.terraform.io/bpg/proxmox",
    change: { actions, before: null, after: {}, after_unknown: {} },
    ...extra,
  };
}

describe("reading JSON plans", () => {
  it("maps every action list Terraform writes, with the order of a replace", () => {
    const result = readPlanJson(
      plan({
        resource_changes: [
          vmChange("proxmox_virtual_environment_vm.new", ["create"]),
          vmChange("proxmox_virtual_environment_vm.grow", ["update"]),
          vmChange("proxmox_virtual_environment_vm.old", ["delete"], {
            action_reason: "delete_because_no_resource_config",
          }),
          vmChange("proxmox_virtual_environment_vm.moved", ["delete", "create"], {
            action_reason: "replace_because_cannot_update",
            change: {
              actions: ["delete", "create"],
              replace_paths: [["node_name"], ["disk", 0, "datastore_id"]],
            },
          }),
          vmChange("proxmox_virtual_environment_vm.cbd", ["create", "delete"], {
            action_reason: "replace_because_tainted",
          }),
          {
            address: "data.proxmox_virtual_environment_nodes.all",
            mode: "data",
            type: "proxmox_virtual_environment_nodes",
            name: "all",
            action_reason: "read_because_dependency_pending",
            change: { actions: ["read"] },
          },
          vmChange("proxmox_virtual_environment_vm.same", ["no-op"]),
        ],
      }),
    );

    expect(result.resources).toEqual<PlanResource[]>([
      { address: "proxmox_virtual_environment_vm.new", action: "create" },
      { address: "proxmox_virtual_environment_vm.grow", action: "update" },
      {
        address: "proxmox_virtual_environment_vm.old",
        action: "delete",
        reason: "because proxmox_virtual_environment_vm.old is not in configuration",
      },
      {
        address: "proxmox_virtual_environment_vm.moved",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "node_name, disk[0].datastore_id forces replacement",
      },
      {
        address: "proxmox_virtual_environment_vm.cbd",
        action: "replace",
        replaceOrder: "create-first",
        reason: "tainted",
      },
      {
        address: "data.proxmox_virtual_environment_nodes.all",
        action: "read",
        reason: "depends on a resource or a module with changes pending",
      },
      { address: "proxmox_virtual_environment_vm.same", action: "no-op" },
    ]);
    expect(result.counts).toEqual({ add: 3, change: 1, destroy: 3 });
    expect(result.derivedCounts).toEqual({ add: 3, change: 1, destroy: 3, replace: 2, import: 0 });
    expect(result.noChanges).toBe(false);
  });

  it("reports no changes when every resource is a no-op and no output changes", () => {
    const result = readPlanJson(
      plan({
        resource_changes: [vmChange("proxmox_virtual_environment_vm.vm", ["no-op"])],
        output_changes: { vm_ip: { actions: ["no-op"], after: "192.168.1.50" } },
      }),
    );

    expect(result.noChanges).toBe(true);
    expect(result.counts).toBeUndefined();
    expect(result.outputChanges).toEqual([]);
  });

  it("reads imports, moves and deposed objects as Terraform describes them", () => {
    const result = readPlanJson(
      plan({
        resource_changes: [
          vmChange("proxmox_virtual_environment_vm.imported", ["no-op"], {
            change: { actions: ["no-op"], importing: { id: "pve/qemu/120" } },
          }),
          vmChange("proxmox_virtual_environment_vm.renamed", ["no-op"], {
            previous_address: "proxmox_virtual_environment_vm.web",
          }),
          vmChange("proxmox_virtual_environment_vm.vm", ["delete"], { deposed: "5c8e2a1f" }),
        ],
      }),
    );

    expect(result.resources).toEqual<PlanResource[]>([
      { address: "proxmox_virtual_environment_vm.imported", action: "no-op", importing: true },
      {
        address: "proxmox_virtual_environment_vm.renamed",
        action: "no-op",
        reason: "moved from proxmox_virtual_environment_vm.web",
      },
      {
        address: "proxmox_virtual_environment_vm.vm",
        action: "delete",
        deposed: "5c8e2a1f",
        reason: "left over from a partially-failed replacement of this instance",
      },
    ]);
    expect(result.counts).toEqual({ import: 1, add: 0, change: 0, destroy: 1 });
  });

  it("leaves out a data source dropped from the configuration and notes a forgotten resource", () => {
    const result = readPlanJson(
      plan({
        resource_changes: [
          {
            address: "data.proxmox_virtual_environment_nodes.all",
            mode: "data",
            change: { actions: ["delete"] },
          },
          vmChange("proxmox_virtual_environment_vm.kept", ["forget"]),
        ],
      }),
    );

    expect(result.resources).toEqual([]);
    expect(result.notes).toEqual([
      "proxmox_virtual_environment_vm.kept leaves Terraform's state but is not destroyed; it is not listed.",
    ]);
  });

  it("reports an action list it does not know as an error rather than guessing", () => {
    const result = readPlanJson(
      plan({ resource_changes: [vmChange("proxmox_virtual_environment_vm.vm", ["teleport"])] }),
    );

    expect(result.resources).toEqual([]);
    expect(result.errors).toEqual([
      {
        summary: "Unrecognised change for proxmox_virtual_environment_vm.vm",
        detail:
          'Terraform plans the actions ["teleport"], which vmbot does not know; the plan cannot be summarised safely.',
      },
    ]);
    expect(result.noChanges).toBe(false);
  });

  it("reports a plan Terraform marked as errored", () => {
    const result = readPlanJson(plan({ errored: true }));

    expect(result.errors.map((error) => error.summary)).toEqual(["Planning failed"]);
    expect(result.noChanges).toBe(false);
  });

  it("reports text that is not JSON, and JSON that is not a plan", () => {
    const notJson = parsePlanJson("Plan: 1 to add, 0 to change, 0 to destroy.");
    expect(notJson.errors[0]?.summary).toBe("The plan is not valid JSON");
    expect(notJson.resources).toEqual([]);

    const notPlan = parsePlanJson(JSON.stringify({ resource_changes: "none" }));
    expect(notPlan.errors[0]?.summary).toBe("This is not the JSON of a Terraform plan");
    expect(notPlan.errors[0]?.detail).toContain("format_version");
    expect(notPlan.errors[0]?.detail).toContain("resource_changes");
    expect(notPlan.noChanges).toBe(false);
  });
});

describe("reading node resources from a JSON plan", () => {
  const withNodes = (value: unknown, extra: Record<string, unknown> = {}) =>
    readPlanJson(
      plan({
        planned_values: { outputs: { node_resources: { sensitive: false, value } } },
        output_changes: { node_resources: { actions: ["update"], after: value } },
        ...extra,
      }),
    );

  it("reads each node's CPU and memory use", () => {
    const result = withNodes({
      pve: { cpu_usage_percent: 12.5, memory_used_gb: 20.1, memory_total_gb: 62.8 },
      pve2: { cpu_usage_percent: 3, memory_used_gb: 8, memory_total_gb: 31.3 },
    });

    expect(result.nodeResources).toEqual({
      pve: { cpuUsagePercent: 12.5, memoryUsedGb: 20.1, memoryTotalGb: 62.8 },
      pve2: { cpuUsagePercent: 3, memoryUsedGb: 8, memoryTotalGb: 31.3 },
    });
    expect(result.nodeResourcesProblem).toBeUndefined();
    expect(result.outputChanges).toEqual([{ name: "node_resources", action: "update" }]);
  });

  it("accepts numbers that Terraform turned into strings", () => {
    const result = withNodes({
      pve: { cpu_usage_percent: "12.5", memory_used_gb: "20", memory_total_gb: "62.8" },
    });

    expect(result.nodeResources).toEqual({
      pve: { cpuUsagePercent: 12.5, memoryUsedGb: 20, memoryTotalGb: 62.8 },
    });
  });

  it("reads the value from output_changes when planned_values lacks it", () => {
    const nodes = { pve: { cpu_usage_percent: 1, memory_used_gb: 2, memory_total_gb: 4 } };
    const result = readPlanJson(
      plan({ output_changes: { node_resources: { actions: ["create"], after: nodes } } }),
    );

    expect(result.nodeResources).toEqual({
      pve: { cpuUsagePercent: 1, memoryUsedGb: 2, memoryTotalGb: 4 },
    });
  });

  it("reads the output under a configured name", () => {
    const nodes = { pve: { cpu_usage_percent: 1, memory_used_gb: 2, memory_total_gb: 4 } };
    const result = readPlanJson(
      plan({ planned_values: { outputs: { capacity: { sensitive: false, value: nodes } } } }),
      { nodeResourcesOutput: "capacity" },
    );

    expect(result.nodeResources).toEqual({
      pve: { cpuUsagePercent: 1, memoryUsedGb: 2, memoryTotalGb: 4 },
    });
  });

  it("gives a reason when the value is only known after apply", () => {
    const result = readPlanJson(
      plan({
        planned_values: { outputs: { node_resources: { sensitive: false } } },
        output_changes: { node_resources: { actions: ["create"], after_unknown: true } },
      }),
    );

    expect(result.nodeResources).toBeUndefined();
    expect(result.nodeResourcesProblem).toBe(
      "The output node_resources is only known after apply.",
    );
  });

  it("gives a reason when the value is malformed", () => {
    const result = withNodes({
      pve: { cpu_usage_percent: "high", memory_used_gb: -1, memory_total_gb: 62.8 },
    });

    expect(result.nodeResources).toBeUndefined();
    expect(result.nodeResourcesProblem).toMatch(
      /^The output node_resources is not a map of node name to \{ cpu_usage_percent, memory_used_gb, memory_total_gb \}: pve\.cpu_usage_percent: .+; pve\.memory_used_gb: .+\.$/,
    );
  });

  it("gives a reason when the value is null or not a map", () => {
    expect(withNodes(null).nodeResourcesProblem).toBe("The output node_resources is null.");
    expect(withNodes(["pve"]).nodeResourcesProblem).toMatch(/is not a map of node name/);
  });
});
