import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { CREATE_FIELDS } from "../../src/ids.js";
import { DEFAULT_PIPELINE, VM_PIPELINE_INPUTS } from "../../sandbox/simulators/gitlab/index.js";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import type { FakeView } from "../../sandbox/simulators/slack/index.js";
import {
  CHANNEL,
  PLATFORM_INPUTS,
  REQUESTER,
  harnessPerTest,
  type Harness,
  type HarnessOptions,
} from "../support/harness.js";
import { moveToAsync } from "../support/lifecycle.js";
import { holdUntilAllRead } from "../support/barrier.js";
import { waitFor } from "../support/wait.js";
import { openCreateForm, sendCreateForm } from "../support/create-form.js";
import { configureFailed } from "../support/destroy.js";
import { webApi } from "@slack/bolt";
import { slackClientOptions } from "../../src/app.js";
import { createEffects } from "../../src/effects.js";
import { createGitlab } from "../../src/gitlab/gitlab.js";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { createRequestStarter } from "../../src/tracker/starter.js";
import { TEST_SECRETS } from "../support/secrets.js";

const start = harnessPerTest();

/** Types `/vm create <name>` and returns the form Slack opened. */
async function openForm(h: Harness, name = "web-01"): Promise<FakeView> {
  const delivery = await h.signer.slashCommand({
    text: `create ${name}`,
    userId: REQUESTER,
    channelId: CHANNEL,
  });
  expect(delivery.status).toBe(200);
  const call = await h.slack.waitFor(
    "views.open",
    (opened) => opened.args.trigger_id === delivery.triggerId,
  );
  const view = h.slack.views.at(-1);
  expect(view?.callback_id).toBe("vm_create_modal");
  expect(call.args.trigger_id).toBe(delivery.triggerId);
  return view!;
}

const goodEntries = {
  vm_name: "web-01",
  vm_ip: "192.168.1.50/24",
  vm_cores: "4",
  vm_memory: "4096",
  vm_disk: "40",
  vm_vlan: "20",
};

const submit = (h: Harness, view: FakeView, entries: Record<string, string | null> = goodEntries) =>
  sendCreateForm(h, view, entries);

/** Submits a valid form and waits until the request message shows its outcome. */
async function submitAndSettle(h: Harness) {
  const view = await openForm(h);
  const delivery = await submit(h, view);
  expect(delivery.status).toBe(200);
  await h.slack.waitFor("chat.update");
  const [request] = [...(await h.bot.store.listActive()), ...(await allRequests(h))];
  return { request: request!, message: h.slack.messages.find((m) => m.channel === CHANNEL)! };
}

/** Every request in the store, whatever its status. */
async function allRequests(h: Harness) {
  const requested = (await h.bot.store.listAudit()).filter((e) => e.action === "requested");
  return Promise.all(requested.map(async (e) => (await h.bot.store.getRequest(e.requestId!))!));
}

const messageText = (h: Harness) =>
  JSON.stringify(h.slack.messages.find((m) => m.channel === CHANNEL)?.blocks ?? []);

describe("/vm create", () => {
  it("acknowledges and opens the form with the command's trigger_id before touching GitLab", async () => {
    const h = await start();
    const delivery = await h.signer.slashCommand({
      text: "create Web-01",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    expect(delivery.status).toBe(200);
    expect(delivery.body).toBe("");
    expect(delivery.elapsedMs).toBeLessThan(3_000);
    const open = await h.slack.waitFor("views.open");
    expect(open.ok).toBe(true);
    expect(open.args.trigger_id).toBe(delivery.triggerId);
    expect(h.gitlabSinceStart()).toHaveLength(0);

    const view = open.args.view as {
      blocks: { block_id: string; element: Record<string, unknown> }[];
    };
    expect(view.blocks.map((b) => b.block_id)).toEqual(Object.values(CREATE_FIELDS));
    const initial = Object.fromEntries(
      view.blocks.map((b) => [
        b.block_id,
        (b.element.initial_option as { value?: string } | undefined)?.value ??
          b.element.initial_value,
      ]),
    );
    expect(initial).toEqual({
      vm_name: "Web-01",
      vm_node: "pve",
      vm_template: "9000",
      vm_cores: "2",
      vm_memory: "2048",
      vm_disk: "20",
      vm_ip: undefined,
      vm_gateway: "192.168.1.1",
      vm_dns: "192.168.1.1",
      vm_id: undefined,
      vm_vlan: undefined,
    });
  });

  it("answers help and unknown subcommands with usage, ephemerally", async () => {
    const h = await start();
    const help = await h.signer.slashCommand({
      text: "help",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    expect(JSON.parse(help.body)).toMatchObject({ response_type: "ephemeral" });
    expect(help.body).toContain("/vm create [name]");
    const unknown = await h.signer.slashCommand({
      text: "reboot everything",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    const answer = JSON.parse(unknown.body) as { response_type: string; text: string };
    expect(answer.response_type).toBe("ephemeral");
    expect(answer.text).toContain("`reboot everything` is not a vmbot command.");
    expect(h.slack.callsTo("views.open")).toHaveLength(0);
  });

  it("answers invalid fields inline and creates no pipeline, row or message", async () => {
    const h = await start();
    const view = await openForm(h);
    const delivery = await submit(h, view, {
      ...goodEntries,
      vm_name: "web_01",
      vm_ip: "192.168.1.0/24",
      vm_vlan: "4095",
    });
    expect(delivery.json).toEqual({
      response_action: "errors",
      errors: {
        vm_name: 'The name may only contain a-z, 0-9 and - (not "_").',
        vm_ip:
          "192.168.1.0 is the network address of 192.168.1.0/24: choose a host address inside it.",
        vm_vlan: "The VLAN must be blank (or 0) for untagged, or a whole number from 1 to 4094.",
      },
    });
    expect(h.gitlabSinceStart()).toHaveLength(0);
    expect(await h.bot.store.listAudit()).toHaveLength(0);
    expect(await h.bot.store.listActive()).toHaveLength(0);
    expect(h.slack.callsTo("chat.postMessage")).toHaveLength(0);
  });

  it("refuses on the field an IP and a name that a request on its way already holds, suggesting the next free address", async () => {
    const h = await start();
    const { request } = await submitAndSettle(h);
    const pipelines = h.gitlab.pipelines.length;
    const again = await openCreateForm(h, "web-02");
    const delivery = await submit(h, again, { ...goodEntries, vm_name: "web-02" });
    expect(delivery.json).toEqual({
      response_action: "errors",
      errors: {
        vm_ip: `192.168.1.50 is already used by request ${request.id} for web-01 (${request.status === "queued" ? "queued" : "being planned"}). The next free address in its subnet is 192.168.1.51/24.`,
      },
    });
    const sameName = await openCreateForm(h, "web-01");
    const named = await submit(h, sameName, { ...goodEntries, vm_ip: "192.168.1.60/24" });
    const nameError = (named.json as { errors?: Record<string, string> }).errors;
    expect(Object.keys(nameError ?? {})).toEqual(["vm_name"]);
    expect(nameError?.vm_name).toContain(`web-01 is already taken by request ${request.id}`);
    expect(h.gitlab.pipelines).toHaveLength(pipelines);
    expect(await allRequests(h)).toHaveLength(1);

    // Once the first request ends without a VM, its address is free again.
    await moveToAsync(h.bot.store, request.id, "failed");
    const free = await openCreateForm(h, "web-02");
    const accepted = await submit(h, free, { ...goodEntries, vm_name: "web-02" });
    expect(accepted.body).toBe("");
    await waitFor(
      async () => ((await allRequests(h)).length === 2 ? true : undefined),
      "the second request",
    );
  });

  it("makes one request of two forms for one name sent at the same moment: the other is answered on the field", async () => {
    const h = await start();
    const [first, second] = [await openCreateForm(h, "web-01"), await openCreateForm(h, "web-01")];
    // Both forms are checked before either request is written.
    const { findHolding } = h.bot.store;
    const seam: { findHolding: typeof findHolding } = h.bot.store;
    seam.findHolding = holdUntilAllRead(findHolding);
    const answers = await Promise.all([
      submit(h, first),
      submit(h, second, { ...goodEntries, vm_ip: "192.168.1.60/24" }),
    ]);
    const made = await allRequests(h);
    expect(made).toHaveLength(1);
    const refused = answers.filter((answer) => answer.body !== "");
    expect(refused).toHaveLength(1);
    expect(refused[0]!.json).toEqual({
      response_action: "errors",
      errors: {
        vm_name: expect.stringContaining(
          `web-01 is already taken by request ${made[0]!.id}`,
        ) as string,
      },
    });
    await waitFor(() => (h.gitlab.pipelines.length > 0 ? true : undefined), "the one pipeline");
    expect(h.gitlab.pipelines).toHaveLength(1);
  });

  it("keeps a VM whose configuring failed holding its name and address: the VM exists", async () => {
    const h = await start();
    const { requestId } = await configureFailed(h);
    const refused = await submit(h, await openCreateForm(h, "web-01"));
    const errors = (refused.json as { errors?: Record<string, string> }).errors;
    expect(errors?.vm_name).toBe(
      `web-01 is already taken by the VM web-01 (request ${requestId}): choose another name.`,
    );
    expect(errors?.vm_ip).toContain(`192.168.1.50 is already used by the VM web-01`);
    expect(await allRequests(h)).toHaveLength(1);
  });

  it("refuses an over-long name on the field with the limit, and never cuts it", async () => {
    const h = await start();
    const long = `web-${"a".repeat(60)}`;
    const view = await openForm(h, long);
    expect(JSON.stringify(view.blocks)).toContain(`"initial_value":"${long}"`);
    const delivery = await submit(h, view, { ...goodEntries, vm_name: long });
    expect(delivery.json).toEqual({
      response_action: "errors",
      errors: {
        vm_name: "The name is 64 characters long; a hostname has at most 63 (a-z, 0-9 and -).",
      },
    });
    expect(h.gitlabSinceStart()).toHaveLength(0);
    expect(await h.bot.store.listActive()).toHaveLength(0);
  });

  it("turns a valid form into one request, one message and one pipeline with exactly those inputs", async () => {
    const h = await start();
    const { request, message } = await submitAndSettle(h);

    const creates = h.gitlab.requestsTo("POST", /\/pipeline$/);
    expect(creates).toHaveLength(1);
    expect(JSON.parse(creates[0]!.body)).toEqual({
      ref: "main",
      inputs: {
        action: "apply",
        vm_name: "web-01",
        vm_ip: "192.168.1.50/24",
        vm_gateway: "192.168.1.1",
        template_vm_id: "9000",
        proxmox_node: "pve",
        vm_id: "0",
        vlan_id: "20",
      },
      variables: [
        { key: "TF_VAR_cpu_cores", value: "4", variable_type: "env_var" },
        { key: "TF_VAR_memory_mb", value: "4096", variable_type: "env_var" },
        { key: "TF_VAR_disk_size_gb", value: "40", variable_type: "env_var" },
        { key: "TF_VAR_dns_server", value: "192.168.1.1", variable_type: "env_var" },
        // The VM's own Terraform state (TF_STATE_NAME_TEMPLATE).
        { key: "TF_STATE_NAME", value: "vm-web-01", variable_type: "env_var" },
        // So that a restart finds the pipeline it created instead of creating a second one.
        { key: "VMBOT_REQUEST_ID", value: request.id, variable_type: "env_var" },
      ],
    });
    const pipeline = h.gitlab.pipelines[0]!;
    expect(h.gitlab.pipelines).toHaveLength(1);

    expect(await allRequests(h)).toHaveLength(1);
    expect(request).toMatchObject({
      status: "queued",
      requester: REQUESTER,
      channel: CHANNEL,
      messageTs: message.ts,
      pipelineId: pipeline.id,
      pipelineUrl: pipeline.webUrl,
    });
    expect(h.slack.callsTo("chat.postMessage")).toHaveLength(1);
    expect(h.slack.callsTo("chat.update")).toHaveLength(1);
    expect(messageText(h)).toContain(
      `GitLab <${pipeline.webUrl}|pipeline #${pipeline.id}> started: waiting for Terraform to plan.`,
    );
    expect((await h.bot.store.listAudit(request.id)).map((a) => a.action)).toEqual([
      "requested",
      "pipeline_created",
    ]);
  });

  it("gives each VM a Terraform state of its own, kept with its request, or one shared state with a fixed name", async () => {
    const variable = (h: Harness, index: number) =>
      h.gitlab.pipelines[index]!.variables.find((v) => v.key === "TF_STATE_NAME")?.value;
    const createTwo = async (h: Harness) => {
      for (const [name, ip] of [
        ["web-01", "192.168.1.50/24"],
        ["db-01", "192.168.1.51/24"],
      ] as const) {
        const before = h.gitlab.pipelines.length;
        const view = await openForm(h, name);
        expect((await submit(h, view, { ...goodEntries, vm_name: name, vm_ip: ip })).status).toBe(
          200,
        );
        await waitFor(() => h.gitlab.pipelines.length > before || undefined, "the pipeline");
      }
    };

    const own = await start();
    await createTwo(own);
    expect([variable(own, 0), variable(own, 1)]).toEqual(["vm-web-01", "vm-db-01"]);
    expect((await allRequests(own)).map((r) => [r.spec.name, r.stateName])).toEqual([
      ["web-01", "vm-web-01"],
      ["db-01", "vm-db-01"],
    ]);

    const shared = await start({ env: { TF_STATE_NAME_TEMPLATE: "general" } });
    await createTwo(shared);
    expect([variable(shared, 0), variable(shared, 1)]).toEqual(["general", "general"]);
  });

  it("sends the values as upper-cased variables when GITLAB_PIPELINE_PARAMS=variables", async () => {
    const h = await start({
      env: { GITLAB_PIPELINE_PARAMS: "variables" },
      project: { inputs: {} },
    });
    const { request } = await submitAndSettle(h);
    const body = JSON.parse(h.gitlab.requestsTo("POST", /\/pipeline$/)[0]!.body) as {
      variables: { key: string; value: string }[];
    };
    expect(body).not.toHaveProperty("inputs");
    expect(Object.fromEntries(body.variables.map((v) => [v.key, v.value]))).toEqual({
      ACTION: "apply",
      VM_NAME: "web-01",
      VM_IP: "192.168.1.50/24",
      VM_GATEWAY: "192.168.1.1",
      TEMPLATE_VM_ID: "9000",
      PROXMOX_NODE: "pve",
      VM_ID: "0",
      VLAN_ID: "20",
      TF_VAR_cpu_cores: "4",
      TF_VAR_memory_mb: "4096",
      TF_VAR_disk_size_gb: "40",
      TF_VAR_dns_server: "192.168.1.1",
      TF_STATE_NAME: "vm-web-01",
      VMBOT_REQUEST_ID: request.id,
    });
    expect(h.gitlab.pipelines[0]!.variables).toHaveLength(14);
  });

  it("sends sizing as inputs to a pipeline that declares them (GITLAB_SIZING_PARAMS=inputs), typed as declared", async () => {
    const h = await start({
      env: {
        GITLAB_SIZING_PARAMS: "inputs",
        GITLAB_NUMBER_INPUTS: "cpu_cores,memory_mb,disk_size_gb",
      },
      project: { inputs: PLATFORM_INPUTS },
    });
    await submitAndSettle(h);
    const body = JSON.parse(h.gitlab.requestsTo("POST", /\/pipeline$/)[0]!.body) as Record<
      string,
      unknown
    >;
    // Only the request's ID travels as a variable.
    expect(body.variables).toEqual([
      {
        key: "VMBOT_REQUEST_ID",
        value: expect.stringMatching(/^vm-/) as string,
        variable_type: "env_var",
      },
    ]);
    expect(body.inputs).toMatchObject({
      vm_name: "web-01",
      cpu_cores: 4,
      memory_mb: 4096,
      disk_size_gb: 40,
      dns_server: "192.168.1.1",
      template_vm_id: "9000",
      tf_state_name: "vm-web-01",
    });
    expect(h.gitlab.pipelines[0]!.inputs).toMatchObject({ cpu_cores: 4, vm_name: "web-01" });
  });

  it("sends each input typed as the pipeline declares it, read from GitLab, without any setting", async () => {
    const h = await start({
      env: { GITLAB_SIZING_PARAMS: "inputs" },
      project: { inputs: PLATFORM_INPUTS },
    });
    const { request } = await submitAndSettle(h);
    expect(request.pipelineId).toBe(h.gitlab.pipelines[0]!.id);
    const body = JSON.parse(h.gitlab.requestsTo("POST", /\/pipeline$/)[0]!.body) as {
      inputs: Record<string, unknown>;
    };
    // Declared type: number in the pipeline, so numbers; untyped, so strings.
    expect(body.inputs).toMatchObject({
      cpu_cores: 4,
      memory_mb: 4096,
      disk_size_gb: 40,
      vm_id: "0",
      template_vm_id: "9000",
      dns_server: "192.168.1.1",
    });
    expect(h.gitlab.requestsTo("POST", /\/graphql$/).map((r) => r.body)).toEqual([
      expect.stringContaining("ciPipelineCreationInputs"),
    ]);
  });

  it("sends no variable at all with GITLAB_SIZING_PARAMS=inputs and GITLAB_REQUEST_ID_VARIABLE=false", async () => {
    const h = await start({
      env: {
        GITLAB_SIZING_PARAMS: "inputs",
        GITLAB_NUMBER_INPUTS: "cpu_cores,memory_mb,disk_size_gb",
        GITLAB_REQUEST_ID_VARIABLE: "false",
      },
      project: { inputs: PLATFORM_INPUTS, pipelineVariablesMinimumRole: "no_one_allowed" },
    });
    const { request } = await submitAndSettle(h);
    const body = JSON.parse(h.gitlab.requestsTo("POST", /\/pipeline$/)[0]!.body) as object;
    expect(body).not.toHaveProperty("variables");
    expect(request.pipelineId).toBe(h.gitlab.pipelines[0]!.id);
  });

  it("creates one request when Slack delivers the same submission three times, at once and as retries", async () => {
    const h = await start();
    const view = await openForm(h);
    const values = stateValuesFor(view, goodEntries);
    await Promise.all([
      h.signer.viewSubmission({ view, values, userId: REQUESTER }),
      h.signer.viewSubmission({
        view,
        values,
        userId: REQUESTER,
        retryNum: 1,
        retryReason: "http_timeout",
      }),
      h.signer.viewSubmission({
        view,
        values,
        userId: REQUESTER,
        retryNum: 2,
        retryReason: "http_timeout",
      }),
    ]);
    await h.slack.waitFor("chat.update");
    await waitFor(() => (h.gitlab.pipelines.length > 0 ? true : undefined), "the pipeline");
    expect(await allRequests(h)).toHaveLength(1);
    expect(h.gitlab.pipelines).toHaveLength(1);
    expect(h.slack.callsTo("chat.postMessage")).toHaveLength(1);
  });

  it("refuses people who are not requesters at the command, without opening the form", async () => {
    const h = await start({ env: { REQUESTERS: "U0SOMEONEELSE" } });
    await h.signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
    const refusal = await h.slack.waitForResponse();
    expect(refusal.body).toMatchObject({
      response_type: "ephemeral",
      text: "Only the people who may ask for VMs (<@U0SOMEONEELSE>) can use /vm create, and you are not among them. Ask the team that runs vmbot to add you.",
    });
    expect(h.slack.callsTo("views.open")).toHaveLength(0);
    expect(await allRequests(h)).toHaveLength(0);
  });

  it("refuses a submission from someone who is not a requester, and creates nothing", async () => {
    const h = await start({ env: { REQUESTERS: `${REQUESTER},S0VMTEAM` } });
    h.slack.addUsergroup("S0VMTEAM", ["U0TEAMMATE"]);
    const view = await openForm(h);
    const forged = await h.signer.viewSubmission({
      view,
      values: stateValuesFor(view, goodEntries),
      userId: "U0STRANGER",
    });
    expect(forged.json).toEqual({
      response_action: "errors",
      errors: {
        vm_name:
          "You are not among the people who may ask for VMs. Ask the team that runs vmbot to add you.",
      },
    });
    expect(await allRequests(h)).toHaveLength(0);
    expect(h.gitlabSinceStart()).toHaveLength(0);
  });

  it("lets members of a requester user group ask for VMs", async () => {
    const h = await start({ env: { REQUESTERS: "S0VMTEAM" } });
    h.slack.addUsergroup("S0VMTEAM", [REQUESTER]);
    const { request } = await submitAndSettle(h);
    expect(request.pipelineId).toBe(h.gitlab.pipelines[0]!.id);
    expect(h.slack.callsTo("usergroups.users.list")).toHaveLength(1);
  });

  it("opens the form in time even when Slack is slow to expand a user group", async () => {
    const h = await start({ env: { REQUESTERS: "S0VMTEAM" } });
    h.slack.addUsergroup("S0VMTEAM", [REQUESTER]);
    for (let i = 0; i < 4; i += 1) h.slack.failNext("usergroups.users.list", { status: 500 });
    const sent = Date.now();
    await h.signer.slashCommand({
      text: "create web-01",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    const open = await h.slack.waitFor("views.open");
    expect(open.ok).toBe(true);
    expect(open.at - sent).toBeLessThan(3_000);
  });

  it("tells the requester directly when Slack refuses to update the request message", async () => {
    const h = await start();
    const view = await openForm(h);
    h.slack.failNext("chat.update", "msg_too_long");
    await submit(h, view);
    const dm = await h.slack.waitFor("chat.postMessage", (call) => call.args.channel === REQUESTER);
    expect(dm.args.text).toMatch(
      /^vmbot could not update the message of your request vm-[a-z0-9]+-[0-9a-f]{8}\. Its status: VM web-01 — Queued\.$/,
    );
    expect(JSON.stringify(dm.args.blocks)).toContain(`pipeline #${h.gitlab.pipelines[0]!.id}`);
  });

  it("tells the requester when it cannot post in the channel, and starts nothing", async () => {
    const h = await start();
    h.slack.addChannel({ id: CHANNEL, name: "vm-requests", isMember: false });
    const view = await openForm(h);
    await submit(h, view);
    const dm = await h.slack.waitFor("chat.postMessage", (call) => call.args.channel === REQUESTER);
    expect(dm.args.text).toBe(
      `vmbot could not post your request for web-01 in <#${CHANNEL}> (not_in_channel): invite it with \`/invite @vmbot\` and run /vm create again. No pipeline was started.`,
    );
    expect(h.gitlabSinceStart()).toHaveLength(0);
    expect((await allRequests(h))[0]?.status).toBe("failed");
  });

  it("tells the requester on the next pass when Slack fails their notice this time, and once only", async () => {
    const h = await start();
    // The request message refused for good; then the notice, by Slack failing this time.
    h.slack.failNext("chat.postMessage", "channel_not_found");
    h.slack.failNext("chat.postMessage", "internal_error");
    await submit(h, await openForm(h));
    const toRequester = () =>
      h.slack.callsTo("chat.postMessage").filter((call) => call.args.channel === REQUESTER);
    await waitFor(() => (toRequester().length >= 1 ? true : undefined), "the notice tried");
    const [asked] = await allRequests(h);
    expect(asked?.status).toBe("failed");
    expect(toRequester()[0]?.ok).toBe(false);
    // A later pass (once the first attempt has let the notice go) sends it.
    await waitFor(async () => {
      await h.bot.tracker.tick();
      return toRequester().length >= 2 ? true : undefined;
    }, "the notice sent again");
    expect(toRequester().map((call) => call.ok)).toEqual([false, true]);
    expect(toRequester()[1]?.args.text).toContain("(channel_not_found)");
    await h.bot.tracker.tick();
    expect(toRequester()).toHaveLength(2);
    expect((await h.bot.store.effect(asked!.id, "tell_not_posted"))?.state).toBe("done");
  });
});

describe("the request message and the store", () => {
  it("keeps a request whose message was posted but not recorded: the next pass records it and starts the pipeline, and nobody is told it failed", async () => {
    const h = await start();
    const { updateRequest } = h.bot.store;
    const seam: { updateRequest: typeof updateRequest } = h.bot.store;
    seam.updateRequest = async (id, patch) => {
      if (!("messageTs" in patch)) return updateRequest(id, patch);
      seam.updateRequest = updateRequest;
      throw new Error("Connection terminated unexpectedly");
    };
    await submit(h, await openForm(h));
    const [request] = await waitFor(async () => {
      const made = await allRequests(h);
      const step = made[0] && (await h.bot.store.effect(made[0].id, "post_request_message"));
      return step?.state === "done" && seam.updateRequest === updateRequest ? made : undefined;
    }, "the message to be posted");
    await h.bot.tracker.tick();
    const recorded = (await h.bot.store.getRequest(request!.id))!;
    expect(["queued", "planning"]).toContain(recorded.status);
    expect(recorded.messageTs).toBe(h.slack.messages.find((m) => m.channel === CHANNEL)?.ts);
    expect(recorded.pipelineId).toBe(h.gitlab.pipelines[0]?.id);
    expect(h.slack.messages.filter((m) => m.channel === CHANNEL)).toHaveLength(1);
    expect(h.slack.callsTo("chat.postMessage").filter((c) => c.args.channel === REQUESTER)).toEqual(
      [],
    );
  });

  it.each([
    ["its connection reset after Slack took it", { afterEffect: "reset" }],
    ["a 500 after Slack took it", { afterEffect: 500 }],
    ["a 503 before Slack took it", { status: 503 }],
  ] as const)(
    "posts the request message once when its answer is lost (%s), and goes on",
    async (_, lost) => {
      const h = await start();
      h.slack.failNext("chat.postMessage", lost);
      await submit(h, await openForm(h));
      const request = await waitFor(async () => {
        const [made] = await allRequests(h);
        return made?.pipelineId != null ? made : undefined;
      }, "the pipeline");
      const posted = h.slack.messages.filter((m) => m.channel === CHANNEL);
      expect(posted).toHaveLength(1);
      expect(request.messageTs).toBe(posted[0]?.ts);
      expect(
        h.slack.callsTo("chat.postMessage").filter((c) => c.args.channel === REQUESTER),
      ).toEqual([]);
    },
  );

  it("tells the requester once that the message could not be posted, though another run finds the request queued and starts it again", async () => {
    const h = await start();
    h.slack.addChannel({ id: CHANNEL, name: "vm-requests", isMember: false });
    await submit(h, await openForm(h));
    await h.slack.waitFor("chat.postMessage", (call) => call.args.channel === REQUESTER);
    const [asked] = await allRequests(h);
    await waitFor(
      async () =>
        (await h.bot.store.getRequest(asked!.id))?.status === "failed" ? true : undefined,
      "the request to fail",
    );
    // Another replica, whose pass read the request while it was still queued, starts it too.
    const other = createRequestStarter({
      config: h.config,
      store: h.bot.store,
      gitlab: createGitlab({ ...h.config.gitlab, token: TEST_SECRETS.gitlabToken }),
      client: new webApi.WebClient(
        h.config.slack.botToken,
        slackClientOptions(h.config, createRedactor()),
      ),
      effects: createEffects({ store: h.bot.store }),
      log: createLogger({ level: "silent", redactor: createRedactor() }),
    });
    await other.start({ ...asked!, status: "queued", messageTs: null });
    expect(
      h.slack.callsTo("chat.postMessage").filter((c) => c.args.channel === REQUESTER),
    ).toHaveLength(1);
    const failed = (await h.bot.store.listAudit(asked!.id)).filter((e) => e.action === "failed");
    expect(failed).toHaveLength(1);
    expect(h.gitlabSinceStart()).toHaveLength(0);
  });
});

describe("GitLab refusing the pipeline", () => {
  const cases: [string, HarnessOptions, (h: Harness) => void, string][] = [
    [
      "an invalid or expired token (401)",
      {},
      (h) => {
        h.gitlab.setTokenValid(false);
      },
      "GitLab refused the bot's token (401 Unauthorized): it is invalid, expired or revoked. An admin needs to give vmbot a new token with the api scope (GITLAB_TOKEN).",
    ],
    [
      "a token without the Maintainer role (403)",
      { project: { role: "reporter" } },
      () => undefined,
      "GitLab did not let the bot create the pipeline in `infra/vms` (403 Forbidden): its token needs the api scope, and its user the Maintainer role on the project (pipelines on the protected default branch and the Terraform state lock need it).",
    ],
    [
      "a project that does not exist (404)",
      { env: { GITLAB_PROJECT: "infra/nope" } },
      () => undefined,
      "GitLab has no project `infra/nope` that the bot's token can see (404 Not Found): check GITLAB_PROJECT, and that the token's user is a member of the project.",
    ],
    [
      "an input the pipeline does not declare (400)",
      { project: { inputs: { vm_name: {}, vm_ip: {} } } },
      () => undefined,
      "GitLab refused to create the pipeline (400): unknown input arguments: action, vm_gateway, template_vm_id, proxmox_node, vm_id, vlan_id. Check the pipeline's spec:inputs and the ref vmbot runs on against the form's fields.",
    ],
    [
      "a pipeline whose rules only accept pipelines started in the web UI (400)",
      {
        project: {
          pipeline: {
            ...DEFAULT_PIPELINE,
            // `if: $CI_PIPELINE_SOURCE == "web"` on every job: an API pipeline gets none.
            jobs: DEFAULT_PIPELINE.jobs.map((job) => ({ ...job, rules: () => false })),
          },
        },
      },
      () => undefined,
      'GitLab refused to create the pipeline (400): Pipeline will not run for the selected trigger. The rules configuration prevented any jobs from being added to the pipeline. The pipeline\'s rules must accept pipelines created through the API (`$CI_PIPELINE_SOURCE == "api"`), not only `"web"`: see vmbot\'s README.',
    ],
    [
      "a pipeline that declares an input type: number, on a GitLab that does not say so, vmbot sending a string (400)",
      {
        project: { inputs: { ...VM_PIPELINE_INPUTS, vm_id: { type: "number", default: 0 } } },
        gitlab: { inputsQuery: false },
      },
      () => undefined,
      "GitLab refused to create the pipeline (400): 'vm_id' input: provided value is not a number. The pipeline declares `vm_id` as `type: number`: list it in GITLAB_NUMBER_INPUTS so vmbot sends it as a number.",
    ],
    [
      "a ref that does not exist (400)",
      { env: { GITLAB_REF: "no-such-branch" } },
      () => undefined,
      "GitLab refused to create the pipeline (400): Reference not found. Check the pipeline's spec:inputs and the ref vmbot runs on against the form's fields.",
    ],
    [
      "GitLab not answering in time",
      { gitlabTimeoutMs: 300 },
      (h) => {
        h.gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, { delayMs: 2_000 });
      },
      "did not answer within 0.3 seconds when the bot tried to create the pipeline. It may be overloaded; check that the pipeline was not created before trying again.",
    ],
    [
      "GitLab dropping the connection",
      {},
      (h) => {
        h.gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, "reset");
      },
      "could not be reached (network error), so the bot could not create the pipeline. Check that GitLab is up and GITLAB_URL is right.",
    ],
  ];

  it.each(cases)(
    "explains %s and marks the request failed",
    async (_label, options, arrange, words) => {
      const h = await start(options);
      arrange(h);
      const view = await openForm(h);
      await submit(h, view);
      const update = await h.slack.waitFor("chat.update");
      expect(update.ok).toBe(true);
      const request = (await allRequests(h))[0]!;
      expect(request.status).toBe("failed");
      expect(request.error).toContain(words);
      expect(messageText(h)).toContain(JSON.stringify(words).slice(1, -1));
      expect(h.slack.messages.find((m) => m.channel === CHANNEL)?.text).toBe("VM web-01 — Failed");
      expect((await h.bot.store.listAudit(request.id)).map((a) => a.action)).toEqual([
        "requested",
        "failed",
      ]);
    },
  );

  it("explains that GitLab cannot be reached at all", async () => {
    const port = await closedPort();
    const h = await start({ env: { GITLAB_URL: `http://127.0.0.1:${port}` } });
    const view = await openForm(h);
    await submit(h, view);
    await h.slack.waitFor("chat.update");
    expect((await allRequests(h))[0]?.error).toBe(
      `GitLab at http://127.0.0.1:${port} could not be reached (ECONNREFUSED), so the bot could not create the pipeline. Check that GitLab is up and GITLAB_URL is right.`,
    );
  });
});

/** A loopback port that nothing listens on. */
/**
 * A port nothing listens on, and nothing will while the test runs: below the ephemeral range
 * (32768 and up on Linux), from which every server of the suite takes its port (`listen(0)`).
 * A port taken from that range and closed again went to another file's simulator now and then,
 * which answered where GitLab was to be unreachable.
 */
async function closedPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once("error", () => {
        resolve(false);
      });
      server.listen(port, "127.0.0.1", () => {
        resolve(true);
      });
    });
    if (!free) continue;
    await new Promise((resolve) => server.close(resolve));
    return port;
  }
}
