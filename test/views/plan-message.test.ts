import { describe, expect, it } from "vitest";
import type { PlanResource, PlanSummary } from "../../src/terraform/plan-text.js";
import { LISTED_RESOURCES, planMessage } from "../../src/views/plan-message.js";
import { planSummary, sampleRequest } from "../support/requests.js";

const request = sampleRequest({
  status: "awaiting_approval",
  messageTs: "1700000000.000100",
  pipelineId: 1001,
  pipelineUrl: "https://gitlab.example.com/infra/vms/-/pipelines/1001",
});

const plan = planSummary;

const create: PlanResource = { address: "proxmox_virtual_environment_vm.vm", action: "create" };
const replace: PlanResource = {
  address: "proxmox_virtual_environment_vm.vm",
  action: "replace",
  replaceOrder: "delete-first",
};

const review = (p: PlanSummary) => ({
  plan: p,
  nodes: [
    { name: "pve2", online: true, cpuPercent: 40, memoryUsedGb: 20, memoryTotalGb: 64 },
    { name: "pve3", online: false },
    { name: "pve", online: true, cpuPercent: 12.4, memoryUsedGb: 3.1, memoryTotalGb: 16 },
  ],
  planJobUrl: "https://gitlab.example.com/infra/vms/-/jobs/5002",
  planFile: "uploaded" as const,
});

const json = (value: unknown) => JSON.stringify(value);

/** Every mrkdwn text object in a message: the only text Slack parses for mentions and links. */
function mrkdwnTexts(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(mrkdwnTexts);
  if (value === null || typeof value !== "object") return [];
  const object = value as Record<string, unknown>;
  const own = object.type === "mrkdwn" && typeof object.text === "string" ? [object.text] : [];
  return [...own, ...Object.values(object).flatMap(mrkdwnTexts)];
}

describe("planMessage", () => {
  it("shows the counts, each resource with its action, and Approve and Reject carrying only the request ID", () => {
    const message = planMessage(request, review(plan([create])));
    expect(message.text).toBe("VM web-01 — Awaiting approval");
    const body = json(message.blocks);
    expect(body).toContain("*Plan:* *1* to add, *0* to change, *0* to destroy");
    expect(body).toContain("`+` `proxmox_virtual_environment_vm.vm` create");
    expect(body).not.toContain("rotating_light");
    const actions = message.blocks.find((b) => b.type === "actions") as {
      elements: { action_id: string; value: string; style: string; confirm?: unknown }[];
    };
    expect(actions.elements.map((e) => [e.action_id, e.value, e.style])).toEqual([
      ["plan_approve", "vm-abc-1234", "primary"],
      ["plan_reject", "vm-abc-1234", "danger"],
      ["request_withdraw", "vm-abc-1234", undefined],
    ]);
    expect(actions.elements[0]!.confirm).toBeUndefined();
  });

  it("counts and lists what an import block brings into the state, changed or not", () => {
    const imported: PlanResource = {
      address: "terraform_data.test",
      action: "no-op",
      importing: true,
    };
    const updated: PlanResource = {
      address: "proxmox_virtual_environment_vm.old",
      action: "update",
      importing: true,
    };
    const unchanged: PlanResource = { address: "terraform_data.after", action: "no-op" };
    const body = json(planMessage(request, review(plan([imported, updated, unchanged]))).blocks);
    expect(body).toContain("*Plan:* *2* to import, *0* to add, *1* to change, *0* to destroy");
    expect(body).toContain("`<-` `terraform_data.test` import");
    expect(body).toContain("`~` `proxmox_virtual_environment_vm.old` import, then update in place");
    expect(body).not.toContain("terraform_data.after");
  });

  it("lists a resource that only moves, with where it moved from", () => {
    const moved: PlanResource = {
      address: "terraform_data.after",
      action: "no-op",
      reason: "moved from terraform_data.before",
    };
    const body = json(planMessage(request, review(plan([moved]))).blocks);
    expect(body).toContain(
      "*Plan:* *0* to add, *0* to change, *0* to destroy\\n`->` `terraform_data.after` moved from `terraform_data.before`",
    );
  });

  it("shows the plan's notes, escaped, the first five of them", () => {
    const notes = [
      "terraform_data.old leaves Terraform's state but is not destroyed; it is not listed.",
      "The plan job kept no plan.json; this summary was read from its log.",
      "<!channel> 3",
      "4",
      "5",
      "6",
      "7",
    ];
    const body = json(planMessage(request, review(plan([create], { notes }))).blocks);
    expect(body).toContain("terraform_data.old leaves Terraform's state but is not destroyed");
    expect(body).toContain("this summary was read from its log.");
    expect(body).toContain("&lt;!channel&gt; 3");
    expect(body).toContain("and 2 more");
    expect(body).not.toContain("<!channel>");
  });

  it("makes up no counts when Terraform printed no Plan line and listed nothing", () => {
    const refreshOnly = plan([], { counts: undefined, noChanges: false });
    const body = json(planMessage(request, review(refreshOnly)).blocks);
    expect(body).toContain('Terraform printed no \\"Plan:\\" line and no resource change');
    expect(body).not.toContain("to add");

    const outputsOnly = plan([], {
      counts: undefined,
      noChanges: false,
      outputChanges: [
        { name: "ip", action: "update" },
        { name: "node", action: "create" },
      ],
    });
    expect(json(planMessage(request, review(outputsOnly)).blocks)).toContain(
      "*Plan:* no resource changes, only outputs: `ip` (update in place), `node` (create)",
    );
  });

  it("warns loudly about a replace, never calls it an update, and asks to confirm the approval", () => {
    const message = planMessage(request, review(plan([replace])));
    const body = json(message.blocks);
    expect(body).toContain(":rotating_light: *This plan destroys a resource of VM web-01.*");
    expect(body).toContain(
      "`-/+` `proxmox_virtual_environment_vm.vm` replace (destroy before create)",
    );
    expect(body).toContain(
      "• `proxmox_virtual_environment_vm.vm` is replaced: destroyed, then created again",
    );
    expect(body).toContain("of which *1* replaced");
    expect(body).not.toContain("update in place");
    const approve = (
      message.blocks.find((b) => b.type === "actions") as {
        elements: { confirm?: { text: { text: string }; style: string } }[];
      }
    ).elements[0]!;
    expect(approve.confirm?.style).toBe("danger");
    expect(approve.confirm?.text.text).toBe(
      "Applying this plan destroys resources of VM web-01: proxmox_virtual_environment_vm.vm. This cannot be undone.",
    );
    // The destructive Approve is red, not the green default.
    expect((approve as { style?: string }).style).toBe("danger");
  });

  it("says why a resource is replaced, from the plan's `# forces replacement`", () => {
    const forced = { ...replace, reason: "node_name forces replacement" };
    const body = json(planMessage(request, review(plan([forced]))).blocks);
    expect(body).toContain(
      "• `proxmox_virtual_environment_vm.vm` is replaced: destroyed, then created again, because node_name forces replacement",
    );
    expect(body).not.toContain("((");
  });

  it("lists the chosen node first, then the other online ones, then the offline ones", () => {
    const body = json(planMessage(request, review(plan([create]))).blocks);
    const nodes = /\*Nodes\*\\n(.*?)"/.exec(body)?.[1]?.split("\\n");
    expect(nodes).toEqual([
      "*pve* (chosen): CPU 12%, memory 3.1 / 16.0 GiB",
      "*pve2*: CPU 40%, memory 20.0 / 64.0 GiB",
      "*pve3*: offline",
    ]);
  });

  it(`lists the first ${LISTED_RESOURCES} resources and says how many more`, () => {
    const many = Array.from({ length: 45 }, (_, i) => ({
      address: `null_resource.n[${i}]`,
      action: "create" as const,
    }));
    const body = json(planMessage(request, review(plan(many))).blocks);
    expect(body).toContain("null_resource.n[19]");
    expect(body).not.toContain("null_resource.n[20]");
    expect(body).toContain("and 25 more");
  });

  it("escapes resource names in every mrkdwn text so a plan cannot ping a channel", () => {
    const hostile = {
      address: 'null_resource.x["<!channel> & <@U123>"]',
      action: "delete" as const,
    };
    const message = planMessage(request, review(plan([hostile])));
    const mrkdwn = json(mrkdwnTexts(message.blocks));
    expect(mrkdwn).not.toContain("<!channel>");
    expect(mrkdwn).not.toContain("<@U123>");
    expect(mrkdwn).toContain("&lt;!channel&gt; &amp; &lt;@U123&gt;");
  });

  it("says so when the counts line and the resources disagree", () => {
    const p = plan([create], { mismatch: "Terraform counted 2 to add, the plan lists 1." });
    expect(json(planMessage(request, review(p)).blocks)).toContain(
      ":warning: Terraform counted 2 to add, the plan lists 1.",
    );
  });

  it("drops the buttons once the request is no longer awaiting approval", () => {
    const message = planMessage({ ...request, status: "applying" }, review(plan([create])));
    expect(message.blocks.some((b) => b.type === "actions")).toBe(false);
  });

  it("stays within Slack's limits for a plan of a thousand resources", () => {
    const many = Array.from({ length: 1000 }, (_, i) => ({
      address: `module.very_long_module_name_${"x".repeat(200)}.null_resource.n[${i}]`,
      action: i % 2 === 0 ? ("replace" as const) : ("delete" as const),
    }));
    const message = planMessage(request, review(plan(many)));
    expect(message.blocks.length).toBeLessThanOrEqual(50);
    for (const block of message.blocks) {
      const text = (block as { text?: { text: string } }).text?.text ?? "";
      expect(text.length).toBeLessThanOrEqual(3000);
    }
    const approve = (
      message.blocks.find((b) => b.type === "actions") as {
        elements: { confirm: { text: { text: string } } }[];
      }
    ).elements[0]!;
    expect(approve.confirm.text.text.length).toBeLessThanOrEqual(300);
    expect(approve.confirm.text.text).toMatch(/and \d+ more/);
  });
});
