import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  createPlanTextParser,
  parsePlanText,
  type PlanResource,
  type PlanTextResult,
} from "../../src/terraform/plan-text.js";
import { fixturePath, readFixture } from "../support/fixtures.js";

const DIR = "terraform-plan-text";
const FIXTURES = [
  "atlantis-import-multiple-project-exp-output-plan-again.txt",
  "atlantis-import-single-project-exp-output-plan-again.txt",
  "atlantis-simple-exp-output-atlantis-plan.txt",
  "atlantis-simple-yaml-exp-output-plan-maintenance-lock.txt",
  "terraform-plan-comment-basic-1-modify-plan.txt",
  "terraform-plan-comment-basic-2-delete-plan.txt",
];

/** The same text fed one line at a time, as lines come out of a job log. */
function parseLineByLine(text: string): PlanTextResult {
  const parser = createPlanTextParser();
  for (const line of text.split("\n")) parser.push(line);
  return parser.result();
}

const actions = (result: PlanTextResult) =>
  result.resources.map(({ address, action }) => [address, action]);

describe("reading plan text from test/fixtures/terraform-plan-text", () => {
  it("has a test for every plan text fixture", () => {
    expect(readdirSync(fixturePath(DIR)).sort()).toEqual(FIXTURES);
  });

  it("reads three creates and two output changes from an Atlantis comment, counting its repeated Plan line once", () => {
    const result = parsePlanText(
      readFixture(`${DIR}/atlantis-simple-exp-output-atlantis-plan.txt`),
    );

    expect(actions(result)).toEqual([
      ["null_resource.simple[0]", "create"],
      ["null_resource.simple2", "create"],
      ["null_resource.simple3", "create"],
    ]);
    expect(result.counts).toEqual({ add: 3, change: 0, destroy: 0 });
    expect(result.derivedCounts).toEqual({ add: 3, change: 0, destroy: 0, replace: 0, import: 0 });
    expect(result.planLines).toBe(1);
    expect(result.notes).toEqual([
      'Skipped 1 "Plan:" line that repeated the one before with no resources in between.',
    ]);
    expect(result.outputChanges).toEqual([
      { name: "var", action: "create" },
      { name: "workspace", action: "create" },
    ]);
    expect(result.noChanges).toBe(false);
    expect(result.errors).toEqual([]);
    expect(result.mismatch).toBeUndefined();
  });

  it("reads a two-project Atlantis comment where one project has no changes", () => {
    const result = parsePlanText(
      readFixture(`${DIR}/atlantis-import-multiple-project-exp-output-plan-again.txt`),
    );

    expect(actions(result)).toEqual([["random_id.dummy2", "create"]]);
    expect(result.counts).toEqual({ add: 1, change: 0, destroy: 0 });
    expect(result.planLines).toBe(1);
    expect(result.noChanges).toBe(false);
    expect(result.mismatch).toBeUndefined();
  });

  it("reports no changes for Terraform's 'No changes.' plan", () => {
    const result = parsePlanText(
      readFixture(`${DIR}/atlantis-import-single-project-exp-output-plan-again.txt`),
    );

    expect(result.resources).toEqual([]);
    expect(result.counts).toBeUndefined();
    expect(result.noChanges).toBe(true);
    expect(result.errors).toEqual([]);
    expect(result.mismatch).toBeUndefined();
  });

  it("does not take an Atlantis maintenance error for a Terraform diagnostic or a plan", () => {
    const result = parsePlanText(
      readFixture(`${DIR}/atlantis-simple-yaml-exp-output-plan-maintenance-lock.txt`),
    );

    expect(result).toMatchObject({
      resources: [],
      counts: undefined,
      noChanges: false,
      errors: [],
      planLines: 0,
    });
  });

  it("reports 'must be replaced' with -/+ as a delete-first replace, with the attribute that forces it", () => {
    const result = parsePlanText(
      readFixture(`${DIR}/terraform-plan-comment-basic-1-modify-plan.txt`),
    );

    expect(result.resources).toEqual<PlanResource[]>([
      {
        address: "local_file.test",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "content forces replacement",
      },
      {
        address: "local_file.test3",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "content forces replacement",
      },
    ]);
    expect(result.counts).toEqual({ add: 2, change: 0, destroy: 2 });
    expect(result.derivedCounts).toEqual({ add: 2, change: 0, destroy: 2, replace: 2, import: 0 });
    expect(result.resources.some((resource) => resource.action === "update")).toBe(false);
    expect(result.mismatch).toBeUndefined();
  });

  it("reads destroys with Terraform's reason", () => {
    const result = parsePlanText(
      readFixture(`${DIR}/terraform-plan-comment-basic-2-delete-plan.txt`),
    );

    expect(result.resources).toEqual<PlanResource[]>([
      {
        address: "local_file.test",
        action: "delete",
        reason: "because local_file.test is not in configuration",
      },
      {
        address: "local_file.test3",
        action: "delete",
        reason: "because local_file.test3 is not in configuration",
      },
    ]);
    expect(result.counts).toEqual({ add: 0, change: 0, destroy: 2 });
    expect(result.derivedCounts).toEqual({ add: 0, change: 0, destroy: 2, replace: 0, import: 0 });
    expect(result.noChanges).toBe(false);
  });

  it("reads a destroy heading that a carriage return hides from a terminal", () => {
    const text = readFixture(`${DIR}/terraform-plan-comment-basic-2-delete-plan.txt`).replace(
      "  # local_file.test will be destroyed",
      "  # local_file.test will be destroyed\r  Refreshing state...                 ",
    );
    expect(text).toContain("destroyed\r");
    for (const result of [parsePlanText(text), parseLineByLine(text)]) {
      expect(actions(result)).toEqual([
        ["local_file.test", "delete"],
        ["local_file.test3", "delete"],
      ]);
      expect(result.derivedCounts.destroy).toBe(2);
    }
  });

  it("sums the Plan lines of several plans in one text and says so", () => {
    const text = [
      readFixture(`${DIR}/atlantis-simple-exp-output-atlantis-plan.txt`),
      readFixture(`${DIR}/terraform-plan-comment-basic-1-modify-plan.txt`),
    ].join("\n");
    const result = parsePlanText(text);

    expect(result.counts).toEqual({ add: 5, change: 0, destroy: 2 });
    expect(result.planLines).toBe(2);
    expect(result.notes).toContain(
      'Found 2 "Plan:" lines (one per project or run); the counts are their sum.',
    );
    expect(result.derivedCounts).toMatchObject({ add: 5, change: 0, destroy: 2, replace: 2 });
    expect(result.mismatch).toBeUndefined();
  });

  it.each(FIXTURES)("gives the same result for %s fed line by line", (name) => {
    const text = readFixture(`${DIR}/${name}`);
    expect(parseLineByLine(text)).toEqual(parsePlanText(text));
  });
});

const PROXMOX_PLAN = `
Note: Objects have changed outside of Terraform

Terraform detected the following changes made outside of Terraform since the
last "terraform apply" which may have affected this plan:

  # proxmox_virtual_environment_vm.app has changed
  ~ resource "proxmox_virtual_environment_vm" "app" {
        id      = "103"
      ~ started = true -> false
        # (24 unchanged attributes hidden)
    }


Unless you have made equivalent changes to your configuration, or ignored the
relevant attributes using ignore_changes, the following plan may include
actions to undo or respond to these changes.

─────────────────────────────────────────────────────────────────────────────

Terraform used the selected providers to generate the following execution
plan. Resource actions are indicated with the following symbols:
  + create
  ~ update in-place
  - destroy
-/+ destroy and then create replacement
+/- create replacement and then destroy
 <= read (data resources)

Terraform will perform the following actions:

  # data.proxmox_virtual_environment_nodes.all will be read during apply
  # (depends on a resource or a module with changes pending)
 <= data "proxmox_virtual_environment_nodes" "all" {
      + cpu_count = (known after apply)
      + id        = (known after apply)
      + names     = (known after apply)
    }

  # proxmox_virtual_environment_vm.app will be updated in-place
  ~ resource "proxmox_virtual_environment_vm" "app" {
        id      = "103"
        name    = "app-01"
      ~ started = false -> true
        # (23 unchanged attributes hidden)
    }

  # proxmox_virtual_environment_vm.cache must be replaced
+/- resource "proxmox_virtual_environment_vm" "cache" {
      ~ id        = "104" -> (known after apply)
      ~ vm_id     = 104 -> 0 # forces replacement
        name      = "cache-01"
        # (21 unchanged attributes hidden)
    }

  # proxmox_virtual_environment_vm.db must be replaced
-/+ resource "proxmox_virtual_environment_vm" "db" {
      ~ id        = "101" -> (known after apply)
        name      = "db-01"
      ~ node_name = "pve" -> "pve2" # forces replacement
        # (20 unchanged attributes hidden)

      ~ disk {
          ~ size              = 20 -> 40
            # (8 unchanged attributes hidden)
        }
    }

  # proxmox_virtual_environment_vm.legacy is tainted, so must be replaced
-/+ resource "proxmox_virtual_environment_vm" "legacy" {
      ~ id   = "105" -> (known after apply)
        name = "legacy-01"
        # (22 unchanged attributes hidden)
    }

  # proxmox_virtual_environment_vm.vm["web-01"] will be created
  + resource "proxmox_virtual_environment_vm" "vm" {
      + id                      = (known after apply)
      + name                    = "web-01"
      + node_name               = "pve"
      + vm_id                   = (known after apply)

      + clone {
          + full    = true
          + retries = 1
          + vm_id   = 9000
        }

      + cpu {
          + cores = 2
          + type  = "x86-64-v2-AES"
        }

      + initialization {
          + ip_config {
              + ipv4 {
                  + address = "192.168.1.50/24"
                  + gateway = "192.168.1.1"
                }
            }
        }

      + memory {
          + dedicated = 2048
        }
    }

  # module.dns.proxmox_virtual_environment_vm.ns (deposed object 5c8e2a1f) will be destroyed
  # (left over from a partially-failed replacement of this instance)
  - resource "proxmox_virtual_environment_vm" "ns" {
      - id   = "102" -> null
      - name = "ns-01" -> null
    }

Plan: 4 to add, 1 to change, 4 to destroy.

Changes to Outputs:
  ~ node_resources = {
      ~ pve = {
          ~ cpu_usage_percent = 12.5 -> 13
            # (2 unchanged attributes hidden)
        }
        # (1 unchanged element hidden)
    }
  + vm_ip          = (known after apply)

─────────────────────────────────────────────────────────────────────────────

Saved the plan to: tfplan

To perform exactly these actions, run the following command to apply:
    terraform apply "tfplan"
`;

describe("reading a Proxmox VM plan", () => {
  const result = parsePlanText(PROXMOX_PLAN);

  it("lists every planned resource with its action and none of the drift", () => {
    expect(result.resources).toEqual<PlanResource[]>([
      {
        address: "data.proxmox_virtual_environment_nodes.all",
        action: "read",
        reason: "depends on a resource or a module with changes pending",
      },
      { address: "proxmox_virtual_environment_vm.app", action: "update" },
      {
        address: "proxmox_virtual_environment_vm.cache",
        action: "replace",
        replaceOrder: "create-first",
        reason: "vm_id forces replacement",
      },
      {
        address: "proxmox_virtual_environment_vm.db",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "node_name forces replacement",
      },
      {
        address: "proxmox_virtual_environment_vm.legacy",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "tainted",
      },
      { address: 'proxmox_virtual_environment_vm.vm["web-01"]', action: "create" },
      {
        address: "module.dns.proxmox_virtual_environment_vm.ns",
        action: "delete",
        deposed: "5c8e2a1f",
        reason: "left over from a partially-failed replacement of this instance",
      },
    ]);
  });

  it("counts a replace as one add and one destroy, matching Terraform's Plan line", () => {
    expect(result.counts).toEqual({ add: 4, change: 1, destroy: 4 });
    expect(result.derivedCounts).toEqual({ add: 4, change: 1, destroy: 4, replace: 3, import: 0 });
    expect(result.mismatch).toBeUndefined();
    expect(result.noChanges).toBe(false);
  });

  it("lists the top-level output changes", () => {
    expect(result.outputChanges).toEqual([
      { name: "node_resources", action: "update" },
      { name: "vm_ip", action: "create" },
    ]);
  });
});

describe("reading plan text", () => {
  it("reads a single VM create", () => {
    const result = parsePlanText(
      [
        "Terraform will perform the following actions:",
        "",
        "  # proxmox_virtual_environment_vm.vm will be created",
        '  + resource "proxmox_virtual_environment_vm" "vm" {',
        '      + name = "web-01"',
        "    }",
        "",
        "Plan: 1 to add, 0 to change, 0 to destroy.",
      ].join("\n"),
    );

    expect(result.resources).toEqual([
      { address: "proxmox_virtual_environment_vm.vm", action: "create" },
    ]);
    expect(result.counts).toEqual({ add: 1, change: 0, destroy: 0 });
  });

  it("reads a replace marked only by -/+ and a forces-replacement attribute as replace, never update", () => {
    const result = parsePlanText(
      [
        "  # proxmox_virtual_environment_vm.vm must be replaced",
        '-/+ resource "proxmox_virtual_environment_vm" "vm" {',
        '      ~ node_name = "pve" -> "pve2" # forces replacement',
        "    }",
        "",
        "Plan: 1 to add, 0 to change, 1 to destroy.",
      ].join("\n"),
    );

    expect(result.resources).toEqual([
      {
        address: "proxmox_virtual_environment_vm.vm",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "node_name forces replacement",
      },
    ]);
    expect(result.derivedCounts).toMatchObject({ add: 1, destroy: 1, replace: 1, change: 0 });
  });

  it("reads Terraform 1.5+ imports and the import count on the Plan line", () => {
    const result = parsePlanText(
      [
        "  # proxmox_virtual_environment_vm.old will be imported",
        '    resource "proxmox_virtual_environment_vm" "old" {',
        '        id = "120"',
        "    }",
        "",
        "  # proxmox_virtual_environment_vm.web will be updated in-place",
        '  # (imported from "pve/qemu/121")',
        '  ~ resource "proxmox_virtual_environment_vm" "web" {',
        '      ~ description = "" -> "web"',
        "    }",
        "",
        "Plan: 2 to import, 0 to add, 1 to change, 0 to destroy.",
      ].join("\n"),
    );

    expect(result.resources).toEqual([
      { address: "proxmox_virtual_environment_vm.old", action: "no-op", importing: true },
      {
        address: "proxmox_virtual_environment_vm.web",
        action: "update",
        importing: true,
        reason: 'imported from "pve/qemu/121"',
      },
    ]);
    expect(result.counts).toEqual({ import: 2, add: 0, change: 1, destroy: 0 });
    expect(result.derivedCounts).toEqual({ add: 0, change: 1, destroy: 0, replace: 0, import: 2 });
    expect(result.mismatch).toBeUndefined();
  });

  it("reports a moved resource as no-op under its new address", () => {
    const result = parsePlanText(
      [
        "  # proxmox_virtual_environment_vm.web has moved to proxmox_virtual_environment_vm.vm",
        '    resource "proxmox_virtual_environment_vm" "vm" {',
        '        id   = "103"',
        "    }",
        "",
        "Plan: 0 to add, 0 to change, 0 to destroy.",
      ].join("\n"),
    );

    expect(result.resources).toEqual([
      {
        address: "proxmox_virtual_environment_vm.vm",
        action: "no-op",
        reason: "moved from proxmox_virtual_environment_vm.web",
      },
    ]);
  });

  it("says so when the Plan line and the resources disagree", () => {
    const result = parsePlanText(
      [
        "  # proxmox_virtual_environment_vm.vm will be created",
        '  + resource "proxmox_virtual_environment_vm" "vm" {',
        "    }",
        "Plan: 2 to add, 0 to change, 1 to destroy.",
      ].join("\n"),
    );

    expect(result.mismatch).toBe(
      'The "Plan:" line says 2 to add, 0 to change, 1 to destroy, but the resources listed add up to 1 to add, 0 to change, 0 to destroy.',
    );
  });

  it("says so when resources are listed but the Plan line is missing", () => {
    const result = parsePlanText(
      [
        "  # proxmox_virtual_environment_vm.vm will be destroyed",
        '  - resource "proxmox_virtual_environment_vm" "vm" {',
      ].join("\n"),
    );

    expect(result.counts).toBeUndefined();
    expect(result.mismatch).toBe(
      'Resources with changes were listed (0 to add, 0 to change, 1 to destroy) but no "Plan:" line was found; the output may have been cut short.',
    );
  });

  it("reads a framed error diagnostic with its summary and detail, and skips warnings", () => {
    const result = parsePlanText(
      [
        "Planning failed. Terraform encountered an error while generating this plan.",
        "",
        "╷",
        "│ Warning: Argument is deprecated",
        "│ ",
        "│ Use clone.node_name instead.",
        "╵",
        "╷",
        "│ Error: Invalid value for variable",
        "│ ",
        "│   on variables.tf line 9:",
        '│    9: variable "vm_ip" {',
        "│     ├────────────────",
        '│     │ var.vm_ip is "192.168.1.500/24"',
        "│ ",
        "│ vm_ip must be an IPv4 address with a prefix length, e.g. 192.168.1.50/24.",
        "│ ",
        "│ This was checked by the validation rule at variables.tf:12,3-13.",
        "╵",
      ].join("\n"),
    );

    expect(result.errors).toEqual([
      {
        summary: "Invalid value for variable",
        detail: [
          "  on variables.tf line 9:",
          '   9: variable "vm_ip" {',
          "    ├────────────────",
          '    │ var.vm_ip is "192.168.1.500/24"',
          "",
          "vm_ip must be an IPv4 address with a prefix length, e.g. 192.168.1.50/24.",
          "",
          "This was checked by the validation rule at variables.tf:12,3-13.",
        ].join("\n"),
      },
    ]);
    expect(result.noChanges).toBe(false);
    expect(result.resources).toEqual([]);
  });

  it("reads an error whose frame top was cut off, and one from an older unframed Terraform", () => {
    const result = parsePlanText(
      [
        "│ Error: error retrieving VM 105: received an HTTP 500 response",
        "│ ",
        '│   with proxmox_virtual_environment_vm.vm["web-01"],',
        "╵",
        "Error: Unsupported argument",
        "",
        '  on main.tf line 5, in resource "proxmox_virtual_environment_vm" "vm":',
        "   5:   cores = 2",
        "",
        'An argument named "cores" is not expected here.',
        "",
        "Plan: 0 to add, 0 to change, 0 to destroy.",
      ].join("\n"),
    );

    expect(result.errors).toEqual([
      {
        summary: "error retrieving VM 105: received an HTTP 500 response",
        detail: '  with proxmox_virtual_environment_vm.vm["web-01"],',
      },
      {
        summary: "Unsupported argument",
        detail: [
          '  on main.tf line 5, in resource "proxmox_virtual_environment_vm" "vm":',
          "   5:   cores = 2",
          "",
          'An argument named "cores" is not expected here.',
        ].join("\n"),
      },
    ]);
    expect(result.counts).toEqual({ add: 0, change: 0, destroy: 0 });
  });

  it("keeps an error diagnostic's detail bounded", () => {
    const parser = createPlanTextParser();
    parser.push("╷");
    parser.push("│ Error: Too much");
    for (let i = 0; i < 10_000; i += 1) parser.push(`│ line ${i}`);
    parser.push("╵");
    const [error] = parser.result().errors;

    expect(error?.summary).toBe("Too much");
    expect(error?.detail.split("\n").length).toBeLessThanOrEqual(201);
    expect(error?.detail.endsWith("…")).toBe(true);
  });

  it("reports an error still open when the input ends", () => {
    const parser = createPlanTextParser();
    parser.push("╷");
    parser.push("│ Error: Cut short");
    parser.push("│ ");
    parser.push("│ The log ends here.");

    expect(parser.result().errors).toEqual([
      { summary: "Cut short", detail: "The log ends here." },
    ]);
  });

  it("reads headings, markers and Plan: lines whatever the whitespace around them", () => {
    const result = parsePlanText(
      [
        "\t# local_file.a will be created",
        '\t+ resource "local_file" "a" {',
        "\t}",
        "\u00a0 # local_file.b must be replaced",
        '  -/+ resource "local_file" "b" {  ',
        '      ~ content = "x" -> "y" # forces replacement   ',
        "    }",
        "  Plan: 1 to add, 0 to change, 1 to destroy.  ",
      ].join("\n"),
    );

    expect(result.resources).toEqual([
      { address: "local_file.a", action: "create" },
      {
        address: "local_file.b",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "content forces replacement",
      },
    ]);
    expect(result.counts).toEqual({ add: 1, change: 0, destroy: 1 });
  });

  it("ignores a carriage return at the end of a line", () => {
    const result = parsePlanText(
      "  # proxmox_virtual_environment_vm.vm will be created\r\nPlan: 1 to add, 0 to change, 0 to destroy.\r\n",
    );

    expect(result.resources).toEqual([
      { address: "proxmox_virtual_environment_vm.vm", action: "create" },
    ]);
    expect(result.counts).toEqual({ add: 1, change: 0, destroy: 0 });
  });
});

describe("reading older and unusual plan layouts", () => {
  it("lists the resources of Terraform 0.11 plans with their actions", () => {
    const recreate = parsePlanText(
      readFixture("corpus/terraform/tfminer-0.11-create-and-recreate.txt"),
    );
    expect(recreate.resources).toEqual([
      { address: "aws_ebs_volume.logging[0]", action: "replace", replaceOrder: "delete-first" },
      { address: "aws_ebs_volume.logging[1]", action: "replace", replaceOrder: "delete-first" },
      { address: "aws_ebs_volume.registry-sync", action: "create" },
    ]);
    expect(recreate.mismatch).toBeUndefined();

    const update = parsePlanText(
      readFixture("corpus/terraform/tfminer-0.11-create-and-update.txt"),
    );
    expect(actions(update)).toEqual([
      ["aws_ebs_volume.logging[0]", "update"],
      ["aws_ebs_volume.logging[1]", "update"],
      ["aws_ebs_volume.registry-sync", "create"],
    ]);
  });

  it("reads 0.11's tainted, read and create-first lines, never the symbol legend", () => {
    const result = parsePlanText(
      [
        "Resource actions are indicated with the following symbols:",
        "  + create",
        " <= read (data resources)",
        "-/+ destroy and then create replacement",
        "",
        "Terraform will perform the following actions:",
        "",
        " <= data.aws_ami.ubuntu",
        "      id: <computed>",
        "",
        "-/+ aws_route_table.private_kube (tainted) (new resource required)",
        '      id: "rtb-0eef28cd989935468" => <computed> (forces new resource)',
        "",
        "+/- module.vm.aws_instance.web (new resource required)",
        "",
        "Plan: 2 to add, 0 to change, 2 to destroy.",
      ].join("\n"),
    );
    expect(result.resources).toEqual([
      { address: "data.aws_ami.ubuntu", action: "read" },
      {
        address: "aws_route_table.private_kube",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "tainted",
      },
      { address: "module.vm.aws_instance.web", action: "replace", replaceOrder: "create-first" },
    ]);
    expect(result.mismatch).toBeUndefined();
  });

  it("keeps an unboxed error's whole diagnostic, bullets included, up to the next paragraph", () => {
    // As Terraform 0.11 prints a failed apply (backend/local/backend_apply.go).
    const result = parsePlanText(
      [
        "Error: Error applying plan:",
        "",
        "1 error(s) occurred:",
        "",
        "* proxmox_vm_qemu.web (destroy): 1 error(s) occurred:",
        "",
        "* proxmox_vm_qemu.web: vm locked, could not obtain config",
        "\tstatus code: 500",
        "",
        "Terraform does not automatically rollback in the face of errors.",
        "Instead, your Terraform state file has been partially updated with",
      ].join("\n"),
    );
    expect(result.errors).toEqual([
      {
        summary: "Error applying plan:",
        detail: [
          "1 error(s) occurred:",
          "",
          "* proxmox_vm_qemu.web (destroy): 1 error(s) occurred:",
          "",
          "* proxmox_vm_qemu.web: vm locked, could not obtain config",
          "\tstatus code: 500",
        ].join("\n"),
      },
    ]);
  });

  it("skips a heredoc attribute value as data, plan-like lines inside it included", () => {
    const result = parsePlanText(
      [
        "  # proxmox_virtual_environment_file.cloud_config will be created",
        '  + resource "proxmox_virtual_environment_file" "cloud_config" {',
        "      + source_raw {",
        "          + data      = <<-EOT",
        "                #cloud-config",
        "                # proxmox_virtual_environment_vm.other will be destroyed",
        "                Plan: 0 to add, 0 to change, 9 to destroy.",
        "                Error: not an error",
        "            EOT",
        '          + file_name = "web-01.yaml"',
        "        }",
        "    }",
        "",
        "  # proxmox_virtual_environment_vm.vm must be replaced",
        '-/+ resource "proxmox_virtual_environment_vm" "vm" {',
        "      ~ description = <<-EOT # forces replacement",
        "          - old",
        "          + new",
        "        EOT",
        "    }",
        "",
        "Plan: 2 to add, 0 to change, 1 to destroy.",
      ].join("\n"),
    );
    expect(result.resources).toEqual([
      { address: "proxmox_virtual_environment_file.cloud_config", action: "create" },
      {
        address: "proxmox_virtual_environment_vm.vm",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "description forces replacement",
      },
    ]);
    expect(result.counts).toEqual({ add: 2, change: 0, destroy: 1 });
    expect(result.errors).toEqual([]);
    expect(result.planLines).toBe(1);
  });

  it("reads what follows a heredoc opener that never ends once a line is printed less far in", () => {
    // A `<<WORD` that no line closes (a value that merely looks like one) hides nothing after it.
    const result = parsePlanText(
      [
        "Terraform will perform the following actions:",
        "",
        "  + proxmox_virtual_environment_vm.a",
        "      <<A",
        "",
        "  - proxmox_virtual_environment_vm.b",
        "      id: <<EOT",
        "  # proxmox_virtual_environment_vm.c will be destroyed",
        '  - resource "proxmox_virtual_environment_vm" "c" {',
        "    }",
        "",
        "Plan: 1 to add, 0 to change, 2 to destroy.",
      ].join("\n"),
    );
    expect(result.resources.map(({ address, action }) => [address, action])).toEqual([
      ["proxmox_virtual_environment_vm.a", "create"],
      ["proxmox_virtual_environment_vm.b", "delete"],
      ["proxmox_virtual_environment_vm.c", "delete"],
    ]);
    expect(result.counts).toEqual({ add: 1, change: 0, destroy: 2 });
  });
});
