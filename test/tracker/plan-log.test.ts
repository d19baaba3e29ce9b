import { describe, expect, it } from "vitest";
import { syntheticPlan } from "../../sandbox/simulators/gitlab/traces.js";
import { cleanTrace } from "../../src/gitlab/trace.js";
import { parsePlanText } from "../../src/terraform/plan-text.js";
import { PlanSummarySchema } from "../../src/tracker/review.js";
import { PLANTED_SECRETS, plantedSecretsOutput } from "../support/secrets.js";
import { CHANNEL, askForVm, harnessPerTest, runUntilSettled } from "../support/harness.js";

const start = harnessPerTest();

/** A plan run that prints a lot before its plan, as a chatty provider's debug output would. */
function longPlanOutput(bytes: number): string {
  const line =
    "2026-01-05T09:00:01.000Z [DEBUG] provider.terraform-provider-proxmox: reading node\n";
  return `${line.repeat(Math.ceil(bytes / line.length))}${syntheticPlan({ name: "web-01" })}`;
}

describe("reading a plan job's log", () => {
  it("stops at GITLAB_LOG_MAX_BYTES and says in the message and the plan file that the log was cut, with the job's link", async () => {
    const h = await start({
      env: { GITLAB_LOG_MAX_BYTES: "65536" },
      project: { traces: { "tf:plan": longPlanOutput(300_000) } },
    });
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();

    const job = h.gitlab.job(pipelineId, "tf:plan");
    expect(job.log.length).toBeGreaterThan(300_000);
    const request = (await h.bot.store.listActive())[0]!;
    expect(request.status).toBe("awaiting_approval");
    expect(request.review?.logCutAt).toBe(65536);

    const message = JSON.stringify(h.slack.message(CHANNEL, request.messageTs!)!.blocks);
    expect(message).toContain("The plan job's log is longer than 64 KB");
    expect(message).toContain(`<${request.review!.planJobUrl}|Read the whole log in GitLab>`);

    expect(h.slack.uploads).toHaveLength(1);
    const file = String(h.slack.uploads[0]!.content);
    expect(file.startsWith("[vmbot read only the first 64 KB of this job's log")).toBe(true);
    expect(file).toContain(request.review!.planJobUrl);
    expect(
      file.trimEnd().endsWith(`the log goes on beyond 64 KB: ${request.review!.planJobUrl}]`),
    ).toBe(true);
    expect(Buffer.byteLength(file)).toBeLessThan(65536 + 1024);
  });

  it("reads the whole log when it is within the cap, and says nothing about a cut", async () => {
    const h = await start({ env: { GITLAB_LOG_MAX_BYTES: "65536" } });
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();

    const request = (await h.bot.store.listActive())[0]!;
    expect(request.review?.logCutAt).toBeUndefined();
    expect(request.review?.plan.resources.length).toBeGreaterThan(0);
    expect(JSON.stringify(h.slack.message(CHANNEL, request.messageTs!)!.blocks)).not.toContain(
      "log is longer than",
    );
    expect(String(h.slack.uploads[0]!.content)).not.toContain("vmbot read only");
  });

  it("warns of a destroy whose heading a carriage return hides, and asks to confirm it", async () => {
    const plan = `${syntheticPlan({ name: "web-01" })}
  # proxmox_virtual_environment_vm.old will be destroyed\r  Still reading...                                        
  - resource "proxmox_virtual_environment_vm" "old" {
      - name = "old-01" -> null
    }
`;
    const h = await start({ project: { traces: { "tf:plan": plan } } });
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();

    const request = (await h.bot.store.listActive())[0]!;
    expect(request.review?.plan.resources).toContainEqual({
      address: "proxmox_virtual_environment_vm.old",
      action: "delete",
    });
    const blocks = JSON.stringify(h.slack.message(CHANNEL, request.messageTs!)!.blocks);
    expect(blocks).toContain("This plan destroys");
    expect(blocks).toContain("Approve (destroys)");
    expect(String(h.slack.uploads[0]!.content)).toContain(
      "# proxmox_virtual_environment_vm.old will be destroyed",
    );
  });

  it("reads a log of many pieces once: the plan from it, and a plan file that is the log cleaned and redacted", async () => {
    // About 400 KB of coloured, sectioned output with secrets in it, then the plan.
    const chatter = Array.from(
      { length: 4_000 },
      (_, i) => `\u001b[0;33m[DEBUG]\u001b[0m provider: reading node pve (${String(i)})\n`,
    ).join("");
    const log = [
      "\u001b[0Ksection_start:1700000000:step_script\r\u001b[0K\u001b[0;1m$ terraform plan\u001b[0m\n",
      chatter,
      `${plantedSecretsOutput()}\n`,
      chatter,
      syntheticPlan({ name: "web-01" }),
      "\u001b[0Ksection_end:1700000001:step_script\r\u001b[0K\n",
    ].join("");
    const h = await start({ project: { traces: { "tf:plan": log } } });
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();

    const request = (await h.bot.store.listActive())[0]!;
    expect(request.status).toBe("awaiting_approval");
    expect(request.review?.plan).toEqual(
      PlanSummarySchema.parse(parsePlanText(cleanTrace(log, { overwritten: "keep" }))),
    );
    expect(request.review?.logCutAt).toBeUndefined();

    const file = String(h.slack.uploads[0]!.content);
    expect(file).not.toContain("\u001b");
    expect(file).not.toContain("section_start");
    expect(file).toContain("$ terraform plan");
    expect(file).toContain("provider: reading node pve (3999)");
    expect(file).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    for (const value of Object.values(PLANTED_SECRETS)) expect(file).not.toContain(value);
  });
});

/** A plan of `creates` VMs made and `destroys` destroyed, as `terraform plan` prints it. */
function hugePlan(creates: number, destroys: number): string {
  const made = Array.from(
    { length: creates },
    (_, i) => `  # proxmox_virtual_environment_vm.web[${String(i)}] will be created
  + resource "proxmox_virtual_environment_vm" "web" {
      + name = "web-${String(i)}"
    }
`,
  );
  const gone = Array.from(
    { length: destroys },
    (_, i) => `  # proxmox_virtual_environment_vm.old[${String(i)}] will be destroyed
  - resource "proxmox_virtual_environment_vm" "old" {
      - name = "old-${String(i)}" -> null
    }
`,
  );
  return `
Terraform will perform the following actions:

${made.join("\n")}
${gone.join("\n")}
Plan: ${String(creates)} to add, 0 to change, ${String(destroys)} to destroy.
`;
}

describe("the review a request keeps", () => {
  it("keeps the counts and the first resources of a plan of 20,000, within a few kilobytes, and the message still gives every figure", async () => {
    const log = hugePlan(15_000, 5_000);
    const h = await start({
      env: { GITLAB_LOG_MAX_BYTES: String(16 * 1024 * 1024) },
      project: { traces: { "tf:plan": log } },
    });
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();

    const request = (await h.bot.store.listActive())[0]!;
    expect(request.status).toBe("awaiting_approval");
    expect(request.review?.logCutAt).toBeUndefined();
    expect(log.length).toBeGreaterThan(2_000_000);
    // What the store holds for the review, as it writes it: bounded, whatever the plan's size.
    expect(JSON.stringify(request.review).length).toBeLessThan(16 * 1024);
    const plan = request.review!.plan;
    expect(plan.counts).toEqual({ add: 15_000, change: 0, destroy: 5_000 });
    expect(plan.derivedCounts).toEqual({
      add: 15_000,
      change: 0,
      destroy: 5_000,
      replace: 0,
      import: 0,
    });
    expect(plan.mismatch).toBeUndefined();
    expect(plan.resources.slice(0, 2).map((r) => r.address)).toEqual([
      "proxmox_virtual_environment_vm.web[0]",
      "proxmox_virtual_environment_vm.web[1]",
    ]);
    expect(plan.resources.filter((r) => r.action === "delete")).toHaveLength(20);
    expect(plan.omitted).toEqual({
      changing: 19_960,
      destroying: 4_980,
      outputChanges: 0,
      notes: 0,
    });

    const blocks = JSON.stringify(h.slack.message(CHANNEL, request.messageTs!)!.blocks);
    expect(blocks).toContain("This plan destroys 5000 resources");
    expect(blocks).toContain("proxmox_virtual_environment_vm.old[9]");
    expect(blocks).toContain("and 4990 more");
    expect(blocks).toContain("and 19980 more");
    expect(blocks).toContain("Approve (destroys)");
    expect(blocks).toContain("*15000* to add");
  });
});
