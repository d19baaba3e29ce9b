import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import type { FakeMessage } from "../../sandbox/simulators/slack/index.js";
import { testClock, type TestClock } from "../support/clock.js";
import {
  CHANNEL,
  click,
  harnessPerTest,
  REQUESTER,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";

/**
 * The policy's approval rules through the wire, beyond the create form: what the first plan
 * message says, approvals that lapse while nobody clicks, a rule's own say on self-approval, and
 * a destroy that needs approvals from two groups. The bot starts with the policy file alone:
 * neither APPROVERS nor ADMINS is set.
 */

const start = harnessPerTest();
const PLATFORM = ["U0PLAT1", "U0PLAT2"];
const SECURITY = ["U0SEC1", "U0SEC2"];

const POLICY = `
version: 1
groups:
  devs: [${REQUESTER}]
  platform: [${PLATFORM.join(", ")}]
  security: [${SECURITY.join(", ")}]
roles:
  requesters: [devs, platform]
  approvers: [devs, platform, security]
  admins: [platform]
approvals:
  - name: big VMs
    when: { cores_over: 16 }
    require: [{ group: platform }, { group: security }]
    lapse_after: 30m
  - name: own debian VMs
    when: { templates: [debian] }
    require: [{ group: devs }]
    self_approval: true
  - name: destroys
    action: destroy
    require: [{ group: platform }, { group: security }]
`;

const dirs: string[] = [];
afterEach(() => {
  dirs.splice(0).forEach((dir) => {
    rmSync(dir, { recursive: true, force: true });
  });
});

/** The bot with the policy file and neither APPROVERS nor ADMINS: the policy's groups decide. */
async function withPolicy(env: Record<string, string> = {}, clock?: TestClock) {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-policy-approvals-"));
  dirs.push(dir);
  const path = join(dir, "policy.yaml");
  writeFileSync(path, POLICY);
  return start({
    env: { VMBOT_POLICY: path, APPROVERS: undefined, ADMINS: undefined, ...env },
    project: { role: "maintainer" },
    ...(clock === undefined ? {} : { clock: clock.now }),
  });
}

/** REQUESTER asks for `name` with `entries` in the form; the plan runs to its approval. */
async function planned(h: Harness, name: string, entries: Record<string, string> = {}) {
  const delivery = await h.signer.slashCommand({
    text: `create ${name}`,
    userId: REQUESTER,
    channelId: CHANNEL,
  });
  await h.slack.waitFor("views.open", (call) => call.args.trigger_id === delivery.triggerId);
  const view = h.slack.views.at(-1)!;
  const taken = (await h.bot.store.listByStatus(["queued", "planning", "awaiting_approval"]))
    .length;
  const answer = await h.signer.viewSubmission({
    view,
    values: stateValuesFor(view, {
      vm_name: name,
      vm_ip: `192.168.1.${String(50 + taken)}/24`,
      ...entries,
    }),
    userId: REQUESTER,
  });
  expect(answer.json).toBeUndefined();
  const pipelineId = await waitFor(
    async () =>
      (await h.bot.store.listActive()).find((r) => r.spec.name === name)?.pipelineId ?? undefined,
    "the pipeline",
  );
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "tf:plan");
  await h.bot.tracker.tick();
  const request = (await h.bot.store.listActive()).find((r) => r.spec.name === name)!;
  expect(request.status).toBe("awaiting_approval");
  const message = () => h.slack.message(CHANNEL, request.messageTs!)!;
  return { pipelineId, requestId: request.id, message };
}

const plays = (h: Harness) => h.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/).length;
const text = (message: FakeMessage) => JSON.stringify(message.blocks);

/** `user` clicks `actionId` on `message`; their private answer. */
async function approve(h: Harness, message: FakeMessage, user: string, actionId = "plan_approve") {
  const before = h.slack.callsTo("chat.postEphemeral").filter((c) => c.args.user === user).length;
  await click(h, message, user, actionId);
  const call = await waitFor(
    () => h.slack.callsTo("chat.postEphemeral").filter((c) => c.args.user === user)[before],
    `the answer to ${user}`,
  );
  return String(call.args.text);
}

describe("the plan message under an approval rule", () => {
  it("shows the approvals needed as soon as the plan is posted, and calls in the rule's groups", async () => {
    const h = await withPolicy();
    const { requestId, message } = await planned(h, "big-01", { vm_cores: "20" });
    expect(text(message())).toContain(
      "Approvals: 0 of 2 approvals: 0 of 1 from platform, 0 of 1 from security",
    );
    expect(plays(h)).toBe(0);
    expect((await h.bot.store.getRequest(requestId))?.review?.approvers).toEqual([
      ...PLATFORM,
      ...SECURITY,
    ]);
    // Who may approve is the rule's groups: the requester, an approver too, is not called in.
    expect(text(message())).toContain(
      "by <@U0PLAT1>, <@U0PLAT2>, <@U0SEC1> or <@U0SEC2>; after that it expires",
    );
  });

  it("removes a lapsed approval on the tracker's pass, with a note naming whose, and audits it", async () => {
    const clock = testClock();
    const h = await withPolicy({}, clock);
    const { requestId, message } = await planned(h, "big-01", { vm_cores: "20" });
    expect(await approve(h, message(), PLATFORM[0]!)).toMatch(/^Your approval is recorded/);
    await waitFor(
      () => (text(message()).includes("approved so far by <@U0PLAT1>") ? true : undefined),
      "the first approval shown",
    );
    clock.advance(31 * 60_000);
    await h.bot.tracker.tick();
    await waitFor(
      () =>
        text(message()).includes("<@U0PLAT1>: approval older than 30m lapsed and was removed.")
          ? true
          : undefined,
      "the lapse note",
    );
    expect(text(message())).toContain("0 of 2 approvals: 0 of 1 from platform");
    expect(text(message())).not.toContain("approved so far");
    const request = (await h.bot.store.getRequest(requestId))!;
    expect(await h.bot.store.approvals.list(requestId, request.review!.planJobId)).toEqual([]);
    expect(
      (await h.bot.store.listAudit(requestId)).filter((e) => e.action === "approval_lapsed"),
    ).toEqual([
      expect.objectContaining({
        actor: "vmbot",
        detail: expect.objectContaining({ rule: "big VMs", users: ["U0PLAT1"] }) as unknown,
      }),
    ]);
    // Security's approval alone is not enough now: the lapsed one no longer counts.
    expect(await approve(h, message(), SECURITY[0]!)).toMatch(
      /^Your approval is recorded\. This plan needs 1 of 2 approvals: 0 of 1 from platform, 1 of 1 from security/,
    );
    expect(plays(h)).toBe(0);
    // A second pass has nothing more to remove: the note is not repeated.
    await h.bot.tracker.tick();
    expect(
      (await h.bot.store.listAudit(requestId)).filter((e) => e.action === "approval_lapsed"),
    ).toHaveLength(1);
  });
});

describe("self-approval under a policy", () => {
  it("lets a requester approve their own request when the rule's self_approval says so, ALLOW_SELF_APPROVAL unset", async () => {
    const h = await withPolicy();
    const { requestId, message } = await planned(h, "deb-01", { vm_template: "9001" });
    // The rule's only group is the requester's own, and it lets them approve: they are called in.
    await waitFor(
      () =>
        h.slack.messages.find(
          (m) =>
            m.thread_ts === message().ts &&
            m.text.startsWith(`:eyes: <@${REQUESTER}> the plan for *deb-01*`),
        ),
      "the requester called in",
    );
    await click(h, message(), REQUESTER, "plan_approve");
    await waitFor(
      async () =>
        (await h.bot.store.getRequest(requestId))?.status === "applying" && plays(h) === 1
          ? true
          : undefined,
      "the apply played",
    );
    expect(
      (await h.bot.store.listAudit(requestId)).find((e) => e.action === "approved"),
    ).toMatchObject({
      actor: REQUESTER,
      detail: { rule: "own debian VMs" },
    });
  });

  it("refuses a requester's own approval when the rule does not allow it, even with ALLOW_SELF_APPROVAL=true", async () => {
    const h = await withPolicy({ ALLOW_SELF_APPROVAL: "true" });
    const { requestId, message } = await planned(h, "web-01");
    expect(await approve(h, message(), REQUESTER)).toBe(
      "You asked for web-01, so another approver must approve it.",
    );
    // A later approver's click plays it: the bot had its chance with the requester's.
    await click(h, message(), PLATFORM[0]!, "plan_approve");
    await waitFor(() => (plays(h) === 1 ? true : undefined), "the apply played");
    expect((await h.bot.store.getRequest(requestId))?.decision?.by).toBe(PLATFORM[0]);
  });
});

/** web-01 asked for by REQUESTER, approved by platform, applied and configured. */
async function madeVm(h: Harness) {
  const { pipelineId, requestId, message } = await planned(h, "web-01");
  await click(h, message(), PLATFORM[0]!, "plan_approve");
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
}

/** The owner asks to destroy web-01 and confirms; its pipeline runs to the approval. */
async function destroyRequested(h: Harness) {
  const asked = await h.signer.slashCommand({
    text: "destroy web-01",
    userId: REQUESTER,
    channelId: CHANNEL,
  });
  const prompt = JSON.parse(asked.body) as { text: string; blocks: FakeMessage["blocks"] };
  const before = h.gitlab.pipelines.length;
  await h.signer.blockAction({
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
    userId: REQUESTER,
  });
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
  return {
    pipelineId,
    requestId: request.id,
    message: () => h.slack.message(CHANNEL, request.messageTs!)!,
  };
}

describe("a destroy under the policy's destroy rule", () => {
  it("needs one approval from platform and one from security: a second from platform does not count, and clicks at once play tf:destroy once", async () => {
    const h = await withPolicy();
    await madeVm(h);
    const { pipelineId, requestId, message } = await destroyRequested(h);
    expect(text(message())).toContain(
      "Approvals: 0 of 2 approvals: 0 of 1 from platform, 0 of 1 from security",
    );
    const thread = () => h.slack.messages.filter((m) => m.thread_ts === message().ts);
    await waitFor(
      () =>
        thread().some((m) => m.text.includes("asks to destroy") && m.text.includes("<@U0SEC1>"))
          ? true
          : undefined,
      "the rule's groups called in",
    );
    const applyPlays = plays(h);
    expect(await approve(h, message(), PLATFORM[0]!, "destroy_approve")).toBe(
      "Your approval is recorded. This destroy needs 1 of 2 approvals: 1 of 1 from platform, 0 of 1 from security; the destroy job starts when the rest approve.",
    );
    expect(await approve(h, message(), PLATFORM[1]!, "destroy_approve")).toMatch(
      /^Your approval does not add to what this destroy needs \(1 of 2 approvals/,
    );
    await waitFor(
      () => (text(message()).includes("approved so far by <@U0PLAT1>") ? true : undefined),
      "the message showing 1 of 2",
    );
    expect(text(message())).toContain("destroy_approve");
    expect(h.gitlab.job(pipelineId, "tf:destroy").status).toBe("manual");
    expect(plays(h)).toBe(applyPlays);

    const shown = structuredClone(message());
    await Promise.all(
      [SECURITY[0]!, SECURITY[1]!, PLATFORM[1]!].map((user) =>
        click(h, shown, user, "destroy_approve"),
      ),
    );
    await waitFor(() => (plays(h) === applyPlays + 1 ? true : undefined), "the destroy played");
    // A later click is answered as already decided: the bot had every chance to play twice.
    expect(await approve(h, shown, PLATFORM[0]!, "destroy_approve")).toMatch(/nothing to decide/);
    expect(plays(h)).toBe(applyPlays + 1);
    const approved = (await h.bot.store.listAudit(requestId)).filter(
      (e) => e.action === "approved",
    );
    expect(approved).toHaveLength(1);
    expect(approved[0]).toMatchObject({ detail: { rule: "destroys" } });
    expect(SECURITY).toContain(approved[0]!.actor);
  });
});
