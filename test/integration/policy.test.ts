import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import type { FakeMessage, FakeView } from "../../sandbox/simulators/slack/index.js";
import {
  CHANNEL,
  click,
  runUntilSettled,
  harnessPerTest,
  REQUESTER,
  type Harness,
} from "../support/harness.js";
import { holdUntilAllRead } from "../support/barrier.js";
import { waitFor } from "../support/wait.js";

/**
 * The request policy through the wire: the real bot with VMBOT_POLICY, Slack's and GitLab's
 * simulators, signed requests in.
 */

const start = harnessPerTest();
const PLATFORM = ["U0PLAT1", "U0PLAT2", "U0PLAT3", "U0PLAT4", "U0PLAT5"];
const SECURITY = ["U0SEC1", "U0SEC2", "U0SEC3", "U0SEC4"];
const SECURITY_GROUP = "S0SECURITY";
const SECURITY_MEMBER = "U0SEC5";

export const POLICY = `
version: 1
groups:
  devs: [${REQUESTER}]
  platform: [${PLATFORM.join(", ")}]
  security: [${SECURITY.join(", ")}, ${SECURITY_GROUP}]
roles:
  requesters: [devs, platform]
  approvers: [platform, security]
  admins: [platform]
requests:
  - group: devs
    templates: [ubuntu]
    max: { cores: 32 }
quotas:
  - group: devs
    max: { vms: 2 }
approvals:
  - name: big VMs
    when: { cores_over: 16 }
    require: [{ group: platform }, { group: security }]
`;

const dirs: string[] = [];
afterEach(() => {
  dirs.splice(0).forEach((dir) => {
    rmSync(dir, { recursive: true, force: true });
  });
});

function policyFile(text = POLICY): string {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-policy-it-"));
  dirs.push(dir);
  const path = join(dir, "policy.yaml");
  writeFileSync(path, text);
  return path;
}

export async function withPolicy(text = POLICY) {
  const path = policyFile(text);
  const h = await start({ env: { VMBOT_POLICY: path } });
  h.slack.addUsergroup(SECURITY_GROUP, [SECURITY_MEMBER]);
  return { h, path };
}

async function openForm(h: Harness, name: string): Promise<FakeView> {
  const delivery = await h.signer.slashCommand({
    text: `create ${name}`,
    userId: REQUESTER,
    channelId: CHANNEL,
  });
  await h.slack.waitFor("views.open", (call) => call.args.trigger_id === delivery.triggerId);
  return h.slack.views.at(-1)!;
}

async function submit(h: Harness, name: string, entries: Record<string, string> = {}) {
  const view = await openForm(h, name);
  const taken = (await h.bot.store.listActive()).length;
  const delivery = await h.signer.viewSubmission({
    view,
    values: stateValuesFor(view, {
      vm_name: name,
      vm_ip: `192.168.1.${String(50 + taken)}/24`,
      vm_cores: "2",
      ...entries,
    }),
    userId: REQUESTER,
  });
  return delivery.json as { response_action?: string; errors?: Record<string, string> } | undefined;
}

const denials = async (h: Harness) =>
  (await h.bot.store.listAudit()).filter((entry) => entry.action === "policy_denied");

describe("a request checked against the policy before anything runs", () => {
  it("refuses a template the requester may not use, on its field, and creates nothing", async () => {
    const { h } = await withPolicy();
    const answer = await submit(h, "web-01", { vm_template: "9001" });
    expect(answer).toEqual({
      response_action: "errors",
      errors: {
        vm_template:
          "You may not ask for the debian template: you may use ubuntu. Ask someone in platform if you need it.",
      },
    });
    expect(h.gitlabSinceStart()).toHaveLength(0);
    expect(await h.bot.store.listActive()).toHaveLength(0);
    expect(h.slack.callsTo("chat.postMessage")).toHaveLength(0);
    expect(await denials(h)).toEqual([
      expect.objectContaining({
        actor: REQUESTER,
        detail: expect.objectContaining({ action: "create", rule: "requests.0" }) as unknown,
      }),
    ]);
  });

  it("refuses a size over the requester's limit on its field", async () => {
    const { h } = await withPolicy();
    const answer = await submit(h, "web-01", { vm_cores: "48" });
    expect(answer?.errors).toEqual({
      vm_cores:
        "48 cores is more cores than you may ask for in one VM: your limit is 32 cores. Ask someone in platform if you need more.",
    });
    expect(h.gitlabSinceStart()).toHaveLength(0);
  });

  it("refuses a request over quota, counting requests on their way, with the limit and what is held", async () => {
    const { h } = await withPolicy();
    expect(await submit(h, "web-01")).toBeUndefined();
    expect(await submit(h, "web-02")).toBeUndefined();
    await waitFor(() => (h.gitlab.pipelines.length === 2 ? true : undefined), "the two pipelines");
    const answer = await submit(h, "web-03");
    expect(answer?.errors?.vm_name).toMatch(
      /^Over quota: you may hold at most 2 VMs in all, and you hold 2 VMs with 4 cores, .* \(requests on their way included\); this VM would make it 3 VMs\. Destroy a VM you no longer need, or ask someone in platform\.$/,
    );
    expect(h.gitlab.pipelines).toHaveLength(2);
    expect(await h.bot.store.listActive()).toHaveLength(2);
    expect((await denials(h)).map((entry) => entry.detail.rule)).toEqual(["quotas.0"]);
  });
  it("makes one request of two forms sent at once that only one fits in the quota: the other is refused on the field", async () => {
    const { h } = await withPolicy();
    expect(await submit(h, "web-01")).toBeUndefined();
    // Both forms are checked against the quota before either request is written.
    const { listHeld } = h.bot.store;
    const seam: { listHeld: typeof listHeld } = h.bot.store;
    seam.listHeld = holdUntilAllRead(listHeld);
    const answers = await Promise.all([
      submit(h, "web-02", { vm_ip: "192.168.1.60/24" }),
      submit(h, "web-03", { vm_ip: "192.168.1.61/24" }),
    ]);
    const refused = answers.filter((answer) => answer !== undefined);
    expect(refused).toHaveLength(1);
    expect(refused[0]?.errors?.vm_name).toMatch(
      /^Over quota: you may hold at most 2 VMs in all, and you hold 2 VMs with 4 cores, .*this VM would make it 3 VMs\./,
    );
    expect(await h.bot.store.listActive()).toHaveLength(2);
    await waitFor(() => (h.gitlab.pipelines.length === 2 ? true : undefined), "the two pipelines");
    expect(h.gitlab.pipelines).toHaveLength(2);
  });
});

describe("reloading the policy", () => {
  it("refuses a broken file with its problems named, says so in /healthz, and the old policy keeps deciding", async () => {
    const { h, path } = await withPolicy();
    writeFileSync(path, POLICY.replace("templates: [ubuntu]", "templates: ubuntu"));
    process.kill(process.pid, "SIGHUP");
    const note = await waitFor(
      async () => (await h.bot.health()).policy,
      "the refusal in the health",
    );
    expect(note).toMatch(/requests\.0\.templates: .*the policy loaded before still decides/);
    const answered = (await (await fetch(`${h.baseUrl}/healthz`)).json()) as { policy?: string };
    expect(answered.policy).toBe(note);
    expect(h.logs.some((line) => line.includes("the changed policy file was refused"))).toBe(true);
    const answer = await submit(h, "web-01", { vm_template: "9001" });
    expect(answer?.errors?.vm_template).toMatch(/you may use ubuntu/);

    writeFileSync(path, POLICY.replace("templates: [ubuntu]", "templates: [ubuntu, debian]"));
    process.kill(process.pid, "SIGHUP");
    await waitFor(
      async () => ((await h.bot.health()).policy === undefined ? true : undefined),
      "the good reload",
    );
    expect(await submit(h, "web-01", { vm_template: "9001" })).toBeUndefined();
  });
});

/** A 20-core VM asked by REQUESTER, planned and awaiting approval: the big-VM rule applies. */
async function bigPlan(h: Harness, name = "big-01") {
  expect(await submit(h, name, { vm_cores: "20" })).toBeUndefined();
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

async function approve(h: Harness, message: FakeMessage, user: string) {
  const before = h.slack.callsTo("chat.postEphemeral").filter((c) => c.args.user === user).length;
  await click(h, message, user, "plan_approve");
  const call = await waitFor(
    () => h.slack.callsTo("chat.postEphemeral").filter((c) => c.args.user === user)[before],
    `the answer to ${user}`,
  );
  return String(call.args.text);
}

const text = (message: FakeMessage) => JSON.stringify(message.blocks);

describe("approvals from several groups", () => {
  it("needs one from platform and one from security: a second from platform does not count, security's plays once", async () => {
    const { h } = await withPolicy();
    const { pipelineId, requestId, message } = await bigPlan(h);
    expect(await approve(h, message(), PLATFORM[0]!)).toBe(
      "Your approval is recorded. This plan needs 1 of 2 approvals: 1 of 1 from platform, 0 of 1 from security; the apply starts when the rest approve.",
    );
    await waitFor(
      () => (text(message()).includes("1 of 2 approvals") ? true : undefined),
      "the message showing 1 of 2",
    );
    expect(text(message())).toContain("approved so far by <@U0PLAT1>");
    expect(text(message())).toContain("plan_approve");
    expect(await approve(h, message(), PLATFORM[1]!)).toMatch(
      /does not add to what this plan needs \(1 of 2 approvals/,
    );
    expect(plays(h)).toBe(0);
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("manual");
    await click(h, message(), SECURITY_MEMBER, "plan_approve");
    await waitFor(
      async () =>
        (await h.bot.store.getRequest(requestId))?.status === "applying" && plays(h) === 1
          ? true
          : undefined,
      "the apply played",
    );
    const approved = (await h.bot.store.listAudit(requestId)).find((e) => e.action === "approved");
    expect(approved).toMatchObject({ actor: SECURITY_MEMBER, detail: { rule: "big VMs" } });
  });

  it("ten approvers from both groups clicking at once play the apply once", async () => {
    const { h } = await withPolicy();
    const { requestId, message } = await bigPlan(h);
    const shown = structuredClone(message());
    const people = [...PLATFORM, ...SECURITY, SECURITY_MEMBER].slice(0, 10);
    await Promise.all(people.map((user) => click(h, shown, user, "plan_approve")));
    await waitFor(async () => {
      const decided = (await h.bot.store.getRequest(requestId))?.decision?.by;
      return people.every(
        (user) =>
          h.slack.callsTo("chat.postEphemeral").some((c) => c.args.user === user) ||
          decided === user,
      )
        ? true
        : undefined;
    }, "every click answered");
    await waitFor(() => (plays(h) === 1 ? true : undefined), "the play");
    // A later click is answered as already decided: the bot had every chance to play twice.
    await approve(h, shown, PLATFORM[4]!);
    expect(plays(h)).toBe(1);
    expect(
      (await h.bot.store.listAudit(requestId)).filter((e) => e.action === "approved"),
    ).toHaveLength(1);
  });

  it("a re-run plan resets the approvals and says so", async () => {
    const { h } = await withPolicy();
    const { pipelineId, requestId, message } = await bigPlan(h);
    await approve(h, message(), PLATFORM[0]!);
    // The plan job runs again in GitLab: the next click finds it out, and vmbot posts the new plan.
    h.gitlab.retryJob(pipelineId, "tf:plan");
    expect(await approve(h, message(), SECURITY[1]!)).toMatch(/^The plan was run again in GitLab/);
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    const request = await waitFor(async () => {
      const current = await h.bot.store.getRequest(requestId);
      return current?.status === "awaiting_approval" ? current : undefined;
    }, "the new plan");
    expect(await approve(h, message(), SECURITY[0]!)).toMatch(
      /^Your approval is recorded\. This plan needs 1 of 2 approvals: 0 of 1 from platform, 1 of 1 from security/,
    );
    expect(plays(h)).toBe(0);
    expect(request.review?.planJobId).toBeGreaterThan(0);
    await waitFor(
      () =>
        text(message()).includes("approvals given on the earlier plan were reset")
          ? true
          : undefined,
      "the reset note",
    );
  });
});

describe("/vm policy", () => {
  async function policyAnswer(h: Harness, userId: string) {
    const delivery = await h.signer.slashCommand({ text: "policy", userId, channelId: CHANNEL });
    return JSON.parse(delivery.body) as { response_type: string; text: string };
  }

  it("shows a requester what they may ask for, their quota use and the approvals needed", async () => {
    const { h } = await withPolicy();
    expect(await submit(h, "web-01")).toBeUndefined();
    const answer = await policyAnswer(h, REQUESTER);
    expect(answer.response_type).toBe("ephemeral");
    expect(answer.text).toContain("*Your groups:* devs");
    expect(answer.text).toContain("• as devs: templates ubuntu; nodes any; up to 32 cores per VM");
    expect(answer.text).toContain("• you: 1 of 2 VMs");
    expect(answer.text).toContain(
      "• create with more than 16 cores: 1 from platform and 1 from security",
    );
    expect(answer.text).not.toContain("The whole policy");
  });

  it("shows an admin the whole policy's summary", async () => {
    const { h } = await withPolicy();
    const answer = await policyAnswer(h, PLATFORM[0]!);
    expect(answer.text).toContain("*The whole policy*");
    expect(answer.text).toContain("• group security: <@U0SEC1>");
    expect(answer.text).toContain("<!subteam^S0SECURITY>");
    expect(answer.text).toContain(
      "requesters: devs, platform; approvers: platform, security; admins: platform",
    );
  });
});
