import { describe, expect, it } from "vitest";
import {
  FAILING_TASKS,
  syntheticAnsibleRun,
  syntheticApply,
  syntheticPlan,
} from "../../sandbox/simulators/gitlab/traces.js";
import { REDACTED } from "../../src/redact.js";
import {
  APPROVER,
  CHANNEL,
  askForVm,
  harnessPerTest,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";
import { PLANTED_SECRETS, plantedSecretsOutput } from "../support/secrets.js";

const start = harnessPerTest();

/** Everything the bot sent to Slack: Web API calls, response URL posts, uploaded files. */
function slackPayloads(h: Harness): string[] {
  return [
    ...h.slack.calls.map((call) => `${call.method}: ${JSON.stringify(call.args)}`),
    ...h.slack.responses.map((post) => `response_url: ${JSON.stringify(post.body)}`),
    ...h.slack.uploads.map((upload) => `upload: ${JSON.stringify(upload)}`),
  ];
}

function expectNoPlantedSecret(h: Harness): void {
  const leaks = [...slackPayloads(h), ...h.logs].flatMap((text) =>
    Object.entries(PLANTED_SECRETS)
      .filter(([, secret]) => text.includes(secret))
      .map(([name]) => `${name} in: ${text.slice(0, 200)}`),
  );
  expect(leaks).toEqual([]);
}

/** A Terraform run's output with the planted secrets printed in the middle of it. */
const withSecrets = (output: string) => `${plantedSecretsOutput()}\n${output}`;

/** An Ansible run whose failing task's message carries the secrets, as a verbose module would. */
const ansibleWithSecrets = () =>
  syntheticAnsibleRun({
    host: "web-01",
    tasks: [
      ...FAILING_TASKS.slice(0, 2),
      { name: "Enable and start qemu-guest-agent", result: "fatal", msg: plantedSecretsOutput() },
    ],
  });

const terraformError = `
Error: creating VM: received an HTTP 500 response

  with proxmox_virtual_environment_vm.vm,
  on main.tf line 1, in resource "proxmox_virtual_environment_vm" "vm":
   1: resource "proxmox_virtual_environment_vm" "vm" {
`;

async function approve(h: Harness, pipelineId: number): Promise<string> {
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "tf:plan");
  await h.bot.tracker.tick();
  const request = (await h.bot.store.listActive())[0]!;
  expect(request.status).toBe("awaiting_approval");
  const message = h.slack.message(CHANNEL, request.messageTs!)!;
  await h.signer.blockAction({ message, userId: APPROVER, actionId: "plan_approve" });
  await h.slack.waitFor("chat.update", (call) =>
    JSON.stringify(call.args.blocks).includes(`Approved by <@${APPROVER}>`),
  );
  return request.id;
}

describe("secrets printed by a job", () => {
  it("reach neither Slack nor the debug log from the plan, the apply, the address and a failed configure", async () => {
    const h = await start({
      project: {
        traces: {
          "tf:plan": withSecrets(syntheticPlan({ name: "web-01" })),
          "tf:apply": withSecrets(syntheticApply({ name: "web-01" })),
          "ansible:configure": ansibleWithSecrets(),
        },
      },
    });
    const pipelineId = await askForVm(h);
    const requestId = await approve(h, pipelineId);

    // The plan file went up with the secrets taken out, and the plan was still read.
    expect(h.slack.uploads).toHaveLength(1);
    const planFile = JSON.stringify(h.slack.uploads[0]);
    expect(planFile).toContain(REDACTED);
    expect(planFile).toContain("proxmox_virtual_environment_vm.vm will be created");

    h.gitlab.setJobArtifact(
      pipelineId,
      "tf:apply",
      "vm_ip.txt",
      `${PLANTED_SECRETS.gitlabDeployToken}\n`,
    );
    runUntilSettled(h, pipelineId, "tf:apply");
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "ansible:configure");
    await h.bot.tracker.tick();

    // The barrier: the request ended, with the configure failure's recap in the thread.
    const failed = (await h.bot.store.getRequest(requestId))!;
    expect(failed.status).toBe("failed");
    const replies = h.slack.callsTo("chat.postMessage").map((call) => String(call.args.text));
    expect(replies.some((text) => text.includes("Configuration failed"))).toBe(true);
    expect(replies.some((text) => text.includes(`address ${REDACTED}`))).toBe(true);
    // The channel message carries no log lines at all: the failed task is in the thread.
    const last = JSON.stringify(h.slack.callsTo("chat.update").at(-1)?.args);
    expect(last).toContain("failed in GitLab");
    expect(last).not.toContain("```");
    // Bolt's Web API client logged what it sent (LOG_LEVEL=debug), and those lines were scanned.
    expect(h.logs.some((line) => line.includes("http request body"))).toBe(true);
    expectNoPlantedSecret(h);
  });

  it("reach neither Slack nor the debug log from a failed apply's last lines", async () => {
    const h = await start({
      project: {
        traces: {
          "tf:apply": `${withSecrets(syntheticApply({ name: "web-01" }))}${terraformError}`,
        },
      },
    });
    const pipelineId = await askForVm(h);
    const requestId = await approve(h, pipelineId);
    runUntilSettled(h, pipelineId, "tf:apply");
    await h.bot.tracker.tick();

    const failed = (await h.bot.store.getRequest(requestId))!;
    expect(failed.status).toBe("failed");
    expect(failed.error).toContain("creating VM: received an HTTP 500 response");
    expectNoPlantedSecret(h);
  });

  it("reach neither Slack nor the debug log from a failed plan's last lines", async () => {
    const h = await start({
      project: {
        traces: { "tf:plan": `${terraformError}\n${plantedSecretsOutput()}\nError: plan failed\n` },
      },
    });
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();

    const failed = (await h.bot.store.listAudit()).find((entry) => entry.action === "failed");
    expect(failed).toBeDefined();
    // The log's excerpt goes to the thread, redacted.
    const excerpt = h.slack
      .callsTo("chat.postMessage")
      .map((call) => String(call.args.text))
      .find((text) => text.startsWith(":x: Terraform's error:"));
    expect(excerpt).toContain(REDACTED);
    expectNoPlantedSecret(h);
  });

  it("are kept out of an immediate answer too: a secret pasted after /vm is not echoed back", async () => {
    const h = await start();
    const delivery = await h.signer.slashCommand({
      text: `frobnicate ${PLANTED_SECRETS.gitlabTriggerToken}`,
      userId: APPROVER,
      channelId: CHANNEL,
    });
    expect(delivery.status).toBe(200);
    // The barrier: the answer is the usage, naming the unknown subcommand.
    expect(delivery.body).toContain("frobnicate");
    expect(delivery.body).not.toContain(PLANTED_SECRETS.gitlabTriggerToken);
    expect(delivery.body).toContain(REDACTED);
  });
});
