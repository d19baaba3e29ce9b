import { describe, expect, it } from "vitest";
import type { FakeMessage } from "../../sandbox/simulators/slack/index.js";
import { expectWithinSlackLimits } from "../support/block-kit.js";
import {
  ADMIN,
  APPROVER,
  CHANNEL,
  click,
  harnessPerTest,
  planRequest,
  REQUESTER,
  runUntilSettled,
  type Harness,
  type HarnessOptions,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";
import { openCreateForm, sendCreateForm } from "../support/create-form.js";
import { holdings } from "../../src/policy/usage.js";
import { destroyApproved } from "../support/destroy.js";

/**
 * `/vm destroy` through the wire: who may, the confirmation, the destroy request reviewed like a
 * create (its message, an `action=destroy` pipeline with the VM's recorded inputs and state, an
 * approver's Approve playing the destroy job once), and the inventory after it.
 */

const start = harnessPerTest();
const STRANGER = "U0STRANGER";
const SECOND = "U0SECOND";
const PLAY = /\/jobs\/\d+\/play$/;

interface Answer {
  response_type?: string;
  text: string;
  blocks: FakeMessage["blocks"];
}

/** Types `/vm <text>` as `userId`; the immediate (ephemeral) answer. */
async function vm(h: Harness, userId: string, text: string): Promise<Answer> {
  const delivery = await h.signer.slashCommand({ text, userId, channelId: CHANNEL });
  expect(delivery.status).toBe(200);
  return JSON.parse(delivery.body) as Answer;
}

/** web-01 asked for by REQUESTER, approved and applied at 192.168.1.50, configured. */
async function madeVm(options: HarnessOptions = {}) {
  const h = await start({
    ...options,
    project: { role: "maintainer", ...options.project },
    // The owner is an approver too: they still cannot approve their own destroy.
    env: { APPROVERS: `${APPROVER},${SECOND},${REQUESTER}`, ...options.env },
  });
  const { pipelineId, requestId, message } = await planRequest(h);
  await click(h, message(), APPROVER, "plan_approve");
  await waitFor(
    () => (h.gitlab.job(pipelineId, "tf:apply").status === "manual" ? undefined : true),
    "the apply job to start",
  );
  h.gitlab.setJobArtifact(pipelineId, "tf:apply", "vm_ip.txt", "192.168.1.50\n");
  runUntilSettled(h, pipelineId, "tf:apply");
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "ansible:configure");
  await h.bot.tracker.tick();
  expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
  return { h, createPipelineId: pipelineId };
}

/** The confirmation's "Ask to destroy" clicked by `userId`, on the ephemeral answer. */
async function confirm(h: Harness, prompt: Answer, userId: string) {
  const clicked = await h.signer.blockAction({
    message: {
      channel: CHANNEL,
      ts: "1796205600.000100",
      text: prompt.text,
      blocks: prompt.blocks,
      user: h.slack.identity.botUserId,
      bot_id: h.slack.identity.botId,
      app_id: h.slack.identity.appId,
    },
    ephemeral: true,
    actionId: "destroy_confirm",
    userId,
  });
  expect(clicked.status).toBe(200);
  return h.slack.waitForResponse(
    (post) => post.body.replace_original === true && String(post.body.text).includes("web-01"),
  );
}

/** Asks to destroy web-01 as `userId` and runs its pipeline to the approval: its message. */
async function destroyRequested(h: Harness, userId = REQUESTER) {
  const before = h.gitlab.pipelines.length;
  const prompt = await vm(h, userId, "destroy web-01");
  const asked = await confirm(h, prompt, userId);
  expect(String(asked.body.text)).toContain("Asked to destroy *web-01*");
  const pipelineId = await waitFor(
    () => (h.gitlab.pipelines.length > before ? h.gitlab.pipelines.at(-1)!.id : undefined),
    "the destroy pipeline",
  );
  const request = await waitFor(
    async () =>
      (await h.bot.store.listActive()).find(
        (r) => r.kind === "destroy" && r.pipelineId === pipelineId && r.messageTs !== null,
      ),
    "the destroy request",
  );
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "tf:destroy");
  await h.bot.tracker.tick();
  expect((await h.bot.store.getRequest(request.id))?.status).toBe("awaiting_approval");
  const message = () => h.slack.message(CHANNEL, request.messageTs!)!;
  return { pipelineId, requestId: request.id, message };
}

const ephemeralTo = (h: Harness, user: string, index = 0) =>
  h.slack.waitFor(
    "chat.postEphemeral",
    (call) =>
      call.args.user === user &&
      h.slack
        .callsTo("chat.postEphemeral")
        .filter((c) => c.args.user === user)
        .indexOf(call) === index,
  );

const listed = async (h: Harness, userId = REQUESTER) =>
  JSON.stringify((await vm(h, userId, "list all")).blocks);

describe("/vm destroy", () => {
  it("refuses a stranger with who may, and starts nothing", async () => {
    const { h } = await madeVm();
    const pipelines = h.gitlab.pipelines.length;
    const refused = await vm(h, STRANGER, "destroy web-01");
    expect(refused.response_type).toBe("ephemeral");
    expect(refused.text).toBe(
      `:warning: Only the owner of *web-01* (<@${REQUESTER}>) or vmbot's admins (<@${ADMIN}>) may destroy it. Ask one of them.`,
    );
    // The same stranger's later command is answered: the bot had its chance to act.
    expect((await vm(h, STRANGER, "destroy")).text).toContain("Usage: `/vm destroy &lt;name&gt;`");
    expect(h.gitlab.pipelines).toHaveLength(pipelines);
    expect(await h.bot.store.listActive()).toHaveLength(0);
  });

  it("answers an unknown name with the closest known names", async () => {
    const { h } = await madeVm();
    expect((await vm(h, REQUESTER, "destroy web-1")).text).toBe(
      ":warning: vmbot knows no VM named `web-1`. Did you mean `web-01`?",
    );
    expect((await vm(h, REQUESTER, "destroy database")).text).toBe(
      ":warning: vmbot knows no VM named `database`. `/vm list` shows your VMs.",
    );
  });

  it("confirms first, then runs the reviewed flow: one action=destroy pipeline with the VM's inputs and state, the owner's Approve refused, an approver's plays the destroy job once, and the VM leaves the list", async () => {
    const { h, createPipelineId } = await madeVm();
    const prompt = await vm(h, REQUESTER, "destroy web-01");
    expectWithinSlackLimits(prompt);
    const shown = JSON.stringify(prompt.blocks);
    for (const part of [
      "*Name*\\nweb-01",
      "*Node*\\npve",
      "*Address*\\n192.168.1.50",
      "*VM ID*\\nchosen by Proxmox",
      `*Owner*\\n<@${REQUESTER}>`,
      "*Age*\\n",
    ]) {
      expect(shown).toContain(part);
    }
    // Nothing before the confirmation.
    expect(h.gitlab.pipelines).toHaveLength(1);

    const { pipelineId, requestId, message } = await destroyRequested(h);
    expect(h.gitlab.pipelines).toHaveLength(2);
    const created = h.gitlab.pipeline(createPipelineId);
    const destroy = h.gitlab.pipeline(pipelineId);
    expect(destroy.inputs).toEqual({ ...created.inputs, action: "destroy" });
    const variables = (p: typeof destroy) =>
      Object.fromEntries(
        p.variables.filter((v) => v.key !== "VMBOT_REQUEST_ID").map((v) => [v.key, v.value]),
      );
    expect(variables(destroy)).toEqual(variables(created));
    expect(variables(destroy)).toMatchObject({ TF_STATE_NAME: "vm-web-01" });
    expect(destroy.jobs.map((job) => [job.name, job.status])).toEqual([
      ["tf:validate", "success"],
      ["notify:destroy", "success"],
      ["tf:destroy", "manual"],
    ]);

    expect(message().text).toBe("Destroy web-01 — Awaiting approval");
    expectWithinSlackLimits(message());
    const approve = JSON.stringify(message().blocks);
    expect(approve).toContain("destroy_approve");
    expect(approve).toContain(
      "Approving plays the destroy job: Terraform removes VM web-01 and its disks.",
    );
    const thread = () => h.slack.messages.filter((m) => m.thread_ts === message().ts);
    await waitFor(
      () => (thread().some((m) => m.text.includes("asks to destroy")) ? true : undefined),
      "the approvers to be called in",
    );

    // The owner asked for it: another approver must approve.
    await click(h, message(), REQUESTER, "destroy_approve");
    expect((await ephemeralTo(h, REQUESTER)).args.text).toBe(
      "You asked for web-01, so another approver must approve it.",
    );
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(1);

    await click(h, structuredClone(message()), APPROVER, "destroy_approve");
    await waitFor(
      () => (h.gitlab.job(pipelineId, "tf:destroy").status === "manual" ? undefined : true),
      "the destroy job to start",
    );
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:destroy");
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();

    expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
    expect(message().text).toBe("Destroy web-01 — Destroyed");
    expect(thread().some((m) => m.text.includes("Terraform destroyed *web-01*"))).toBe(true);
    expect(
      thread().some((m) => m.text === `:wastebasket: <@${REQUESTER}> *web-01* is destroyed.`),
    ).toBe(true);
    // Two plays in all: the create's apply and this destroy.
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(2);
    expect(await h.bot.store.inventory.get("web-01")).toBeUndefined();
    expect(await listed(h)).not.toContain("web-01");
    const actions = (await h.bot.store.listAudit(requestId)).map((entry) => [
      entry.actor,
      entry.action,
    ]);
    expect(actions).toContainEqual([REQUESTER, "requested"]);
    expect(actions).toContainEqual([APPROVER, "approved"]);
    expect(actions).toContainEqual([APPROVER, "destroy_started"]);
    expect(actions).toContainEqual(["vmbot", "vm_destroyed"]);
  });

  it("frees the VM's name and address once Terraform destroyed it, and not before: asked for again, they are taken, and quotas count the VM no more", async () => {
    const { h } = await madeVm();
    const same = { vm_name: "web-01", vm_ip: "192.168.1.50/24" };
    const refused = await sendCreateForm(h, await openCreateForm(h, "web-01"), same);
    const errors = (refused.json as { errors?: Record<string, string> }).errors;
    expect(errors?.vm_name).toContain("web-01 is already taken by the VM web-01");
    expect(errors?.vm_ip).toContain("192.168.1.50 is already used by the VM web-01");
    expect((await holdings(h.bot.store)).map((held) => held.spec.name)).toEqual(["web-01"]);

    const destroy = await destroyRequested(h);
    const { requestId, message } = destroy;
    await destroyApproved(h, destroy);
    await h.bot.tracker.tick();
    expect(message().text).toBe("Destroy web-01 — Destroyed");
    // Neither the create request (ready) nor the destroy request (ready) holds anything now.
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
    expect(await holdings(h.bot.store)).toEqual([]);
    const before = h.gitlab.pipelines.length;
    const accepted = await sendCreateForm(h, await openCreateForm(h, "web-01"), same);
    expect(accepted.body).toBe("");
    await waitFor(
      () => (h.gitlab.pipelines.length > before ? true : undefined),
      "the new web-01's pipeline",
    );
    const asked = (await h.bot.store.listActive()).filter((r) => r.kind === "create");
    expect(asked.map((r) => [r.spec.name, r.spec.ip])).toEqual([["web-01", "192.168.1.50/24"]]);
  });

  it("keeps the VM listed, with the failure and the job's link, when the destroy job fails", async () => {
    const { h } = await madeVm();
    const { pipelineId, requestId, message } = await destroyRequested(h);
    await click(h, message(), APPROVER, "destroy_approve");
    await waitFor(
      () => (h.gitlab.job(pipelineId, "tf:destroy").status === "manual" ? undefined : true),
      "the destroy job to start",
    );
    h.gitlab.failJob(pipelineId, "tf:destroy");
    runUntilSettled(h, pipelineId, "tf:destroy");
    await h.bot.tracker.tick();
    const job = h.gitlab.job(pipelineId, "tf:destroy");
    const jobUrl = `${h.gitlab.pipeline(pipelineId).webUrl.replace(/\/pipelines\/\d+$/, "")}/jobs/${job.id}`;
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("failed");
    expect(message().text).toBe("Destroy web-01 — Failed");
    expect(JSON.stringify(message().blocks)).toContain(`|job #${job.id}>) failed: the VM stays`);
    expect(await h.bot.store.inventory.get("web-01")).toMatchObject({ status: "live" });
    const list = await listed(h);
    expect(list).toContain("*web-01*");
    expect(list).toContain(`The last destroy failed (job #${job.id} failed: ${jobUrl}).`);
  });

  it("lets an admin destroy someone's VM, and refuses a second destroy while one is in flight", async () => {
    const { h } = await madeVm();
    const { requestId } = await destroyRequested(h, ADMIN);
    expect((await h.bot.store.getRequest(requestId))?.requester).toBe(ADMIN);
    const again = await vm(h, REQUESTER, "destroy web-01");
    expect(again.text).toContain(
      `A destroy for *web-01* is in progress (\`${requestId}\`, awaiting approval)`,
    );
    expect(again.text).toContain("It cannot be destroyed until that ends.");
    expect(h.gitlab.pipelines).toHaveLength(2);
  });

  it("plays the destroy job once when GitLab ran it but its answer was lost", async () => {
    const { h } = await madeVm();
    const { pipelineId, requestId, message } = await destroyRequested(h);
    h.gitlab.failNext({ method: "POST", path: PLAY }, { afterEffect: "reset" });
    await click(h, message(), APPROVER, "destroy_approve");
    const told = await ephemeralTo(h, APPROVER);
    expect(told.args.text).toContain("GitLab was slow to answer, but it did start the destroy job");
    const plays = h.gitlab.requestsTo("POST", PLAY).length;
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:destroy");
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(plays);
    expect(await h.bot.store.inventory.get("web-01")).toBeUndefined();
  });

  it("a play that never reached GitLab, with no read back: a later pass plays it, once", async () => {
    const { h } = await madeVm();
    const { pipelineId, requestId, message } = await destroyRequested(h);
    const plays = h.gitlab.requestsTo("POST", PLAY).length;
    h.gitlab.failNext({ method: "POST", path: PLAY }, "reset");
    h.gitlab.failNext({ method: "GET", path: /\/jobs\/\d+$/ }, { status: 503 }, { times: 4 });
    await click(h, message(), APPROVER, "destroy_approve");
    expect((await ephemeralTo(h, APPROVER)).args.text).toContain("Your approval stands");
    expect(h.gitlab.job(pipelineId, "tf:destroy").status).toBe("manual");
    expect((await h.bot.store.getRequest(requestId))?.error).toContain("checking with GitLab");

    await h.bot.tracker.tick();
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(plays + 2);
    expect(h.gitlab.job(pipelineId, "tf:destroy").status).not.toBe("manual");
    await h.bot.tracker.tick();
    expect(h.gitlab.requestsTo("POST", PLAY)).toHaveLength(plays + 2);
    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "applying",
      error: null,
    });
  });
});
