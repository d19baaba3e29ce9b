import { describe, expect, it } from "vitest";
import { ACTION_ROLES } from "../../src/access.js";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import type { FakeMessage } from "../../sandbox/simulators/slack/index.js";
import {
  ADMIN,
  APPROVER,
  askForVm,
  CHANNEL,
  harnessPerTest,
  PROJECT_PATH,
  REQUESTER,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";
import { SAMPLE_SPEC } from "../support/requests.js";

/**
 * Who may do what, through the wire: every action × every kind of person, each asserting what
 * happened outside (a form opened, a pipeline created, a job played, a lock removed) or not.
 */

const start = harnessPerTest();

const MEMBER = "U0TEAMMEMBER";
const STRANGER = "U0STRANGER";
const TEAM = "S0VMTEAM";

const PEOPLE = {
  requester: REQUESTER,
  approver: APPROVER,
  admin: ADMIN,
  stranger: STRANGER,
  "user-group member": MEMBER,
} as const;
type Person = keyof typeof PEOPLE;

/** Requesters and approvers are a user and the team's user group; admins one user. */
const ENV = {
  REQUESTERS: `${REQUESTER},${TEAM}`,
  APPROVERS: `${APPROVER},${TEAM}`,
  ADMINS: ADMIN,
};

async function bot(): Promise<Harness> {
  const h = await start({ env: ENV, project: { role: "maintainer" }, proxmox: true });
  h.slack.addUsergroup(TEAM, [MEMBER]);
  return h;
}

/** A request by REQUESTER whose plan awaits approval, and its message. */
async function plannedRequest(h: Harness): Promise<{ pipelineId: number; message: FakeMessage }> {
  const pipelineId = await askForVm(h);
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "tf:plan");
  await h.bot.tracker.tick();
  const request = (await h.bot.store.listActive())[0]!;
  return { pipelineId, message: h.slack.message(CHANNEL, request.messageTs!)! };
}

async function command(h: Harness, text: string, userId: string) {
  const delivery = await h.signer.slashCommand({ text, userId, channelId: CHANNEL });
  const inline =
    delivery.body === "" ? undefined : (JSON.parse(delivery.body) as { text?: string });
  const posted =
    inline === undefined
      ? await h.slack
          .waitForResponse((post) => post.url === delivery.responseUrl)
          .catch(() => undefined)
      : undefined;
  const answer = inline?.text ?? posted?.body.text;
  return typeof answer === "string" ? answer : "";
}

/** Each action, run as `userId` on a fresh bot; true when it took effect. */
const ACTIONS: Record<string, (h: Harness, userId: string) => Promise<boolean>> = {
  async "/vm create"(h, userId) {
    const delivery = await h.signer.slashCommand({
      text: "create web-01",
      userId,
      channelId: CHANNEL,
    });
    // Either the form opens, or the refusal comes back through the response_url.
    return waitFor(() => {
      if (h.slack.callsTo("views.open").length > 0) return true;
      return h.slack.responses.some((post) => post.url === delivery.responseUrl)
        ? false
        : undefined;
    }, "the form or a refusal");
  },
  async "submit the form"(h, userId) {
    await h.signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
    await h.slack.waitFor("views.open");
    const view = h.slack.views.at(-1)!;
    const delivery = await h.signer.viewSubmission({
      view,
      values: stateValuesFor(view, { vm_ip: "192.168.1.50/24" }),
      userId,
    });
    // A refusal is the form's own answer (field errors); an accepted form is a request whose
    // pipeline follows.
    if (delivery.body.includes('"response_action":"errors"')) return false;
    return waitFor(() => (h.gitlab.pipelines.length > 0 ? true : undefined), "the pipeline");
  },
  async "/vm capacity"(h, userId) {
    return (await command(h, "capacity", userId)).startsWith("Proxmox capacity:");
  },
  async "/vm list"(h, userId) {
    return (await command(h, "list all", userId)).includes("vmbot has made no VM yet");
  },
  async approve(h, userId) {
    const { pipelineId, message } = await plannedRequest(h);
    await h.signer.blockAction({ message, userId, actionId: "plan_approve" });
    await waitFor(
      () =>
        h.slack.callsTo("chat.postEphemeral").length > 0 ||
        h.gitlab.job(pipelineId, "tf:apply").status !== "manual"
          ? true
          : undefined,
      "the approval's outcome",
    );
    return h.gitlab.requestsTo("POST", /\/play$/).length === 1;
  },
  async reject(h, userId) {
    const { message } = await plannedRequest(h);
    const opens = h.slack.callsTo("views.open").length;
    const clicked = await h.signer.blockAction({ message, userId, actionId: "plan_reject" });
    // Refused at the click (privately), or asked why in a form, which is then sent.
    await waitFor(
      () =>
        h.slack.callsTo("chat.postEphemeral").length > 0 ||
        h.slack.callsTo("views.open").length > opens
          ? true
          : undefined,
      "the click's outcome",
    );
    const form = h.slack.callsTo("views.open").find((c) => c.args.trigger_id === clicked.triggerId);
    if (form !== undefined) {
      const view = h.slack.views.at(-1)!;
      await h.signer.viewSubmission({ view, values: stateValuesFor(view, {}), userId });
    }
    await waitFor(
      async () =>
        h.slack.callsTo("chat.postEphemeral").length > 0 ||
        (await h.bot.store.listAudit()).some((entry) => entry.action === "rejected")
          ? true
          : undefined,
      "the rejection's outcome",
    );
    return (await h.bot.store.listAudit()).some((entry) => entry.action === "rejected");
  },
  async "/vm unlock"(h, userId) {
    h.gitlab.addUser({ username: "alice" });
    h.gitlab.addTerraformState(PROJECT_PATH, "general", { lockedBy: "alice" });
    const answer = await command(h, "unlock", userId);
    return answer.includes("is locked by alice");
  },
  async "confirm a force-unlock"(h, userId) {
    h.gitlab.addUser({ username: "alice" });
    h.gitlab.addTerraformState(PROJECT_PATH, "general", { lockedBy: "alice" });
    const delivery = await h.signer.slashCommand({
      text: "unlock",
      userId: ADMIN,
      channelId: CHANNEL,
    });
    const prompt = await h.slack.waitForResponse((post) => post.url === delivery.responseUrl);
    await h.signer.blockAction({
      message: {
        channel: CHANNEL,
        ts: "1796205600.000100",
        text: String(prompt.body.text),
        blocks: prompt.body.blocks as FakeMessage["blocks"],
        user: h.slack.identity.botUserId,
        bot_id: h.slack.identity.botId,
        app_id: h.slack.identity.appId,
      },
      ephemeral: true,
      actionId: "unlock_confirm",
      userId,
    });
    await h.slack.waitForResponse(
      (post) => h.slack.responses.indexOf(post) > h.slack.responses.indexOf(prompt),
    );
    return h.gitlab.terraformState(PROJECT_PATH, "general")?.lock === null;
  },
  async "/vm destroy someone else's VM"(h, userId) {
    await h.bot.store.inventory.record({
      name: "web-01",
      requestId: "vm-req-1",
      owner: "U0OWNER",
      spec: SAMPLE_SPEC,
      stateName: "vm-web-01",
      address: "192.168.1.50",
      pipelineId: 1001,
      approvedBy: APPROVER,
      leaseUntil: null,
    });
    return (await command(h, "destroy web-01", userId)) === "Destroy web-01?";
  },
  async "/vm help"(h, userId) {
    return (await command(h, "help", userId)).includes("/vm create [name]");
  },
};

/** The expected matrix: who may do each action. */
const ALLOWED: Record<keyof typeof ACTIONS, Person[]> = {
  "/vm create": ["requester", "user-group member"],
  "submit the form": ["requester", "user-group member"],
  "/vm capacity": ["requester", "user-group member"],
  "/vm list": ["requester", "user-group member"],
  // The requester asked for the VM: by default they cannot approve or reject it themselves.
  approve: ["approver", "user-group member"],
  reject: ["approver", "user-group member"],
  "/vm unlock": ["admin"],
  "confirm a force-unlock": ["admin"],
  // The owner may too (test/integration/destroy.test.ts); here nobody below owns the VM.
  "/vm destroy someone else's VM": ["admin"],
  "/vm help": ["requester", "approver", "admin", "stranger", "user-group member"],
};

describe("authorization matrix", () => {
  it("has one role per action, in one table", () => {
    expect(ACTION_ROLES).toEqual({
      create: "requester",
      capacity: "requester",
      list: "requester",
      approve: "approver",
      reject: "approver",
      unlock: "admin",
      destroy: "admin",
    });
  });

  const cases = Object.keys(ACTIONS).flatMap((action) =>
    (Object.keys(PEOPLE) as Person[]).map((person) => ({
      action,
      person,
      allowed: ALLOWED[action]!.includes(person),
    })),
  );

  it.each(cases)("$action by $person: allowed=$allowed", async ({ action, person, allowed }) => {
    const h = await bot();
    expect(await ACTIONS[action]!(h, PEOPLE[person])).toBe(allowed);
  });
});
