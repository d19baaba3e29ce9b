import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import type { FakeMessage } from "../../sandbox/simulators/slack/index.js";
import { claimExtension } from "../../src/extend/finish.js";
import type { AsyncStore } from "../../src/store/async.js";
import { isPostgresUrl } from "../../src/store/postgres/url.js";
import { testClock, type TestClock } from "../support/clock.js";
import { withStoreAt } from "../support/store-at.js";
import { vmCommand } from "../support/destroy.js";
import {
  CHANNEL,
  click,
  harnessPerTest,
  reject,
  REQUESTER,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";

/**
 * A lease past the maximum under the policy's `extend` rule, through the wire: the reminder
 * offers to ask for it, the request is decided in the channel with the rule's N-of-M tally, and
 * the lease moves once, or not at all when it is rejected or expires.
 */

const start = harnessPerTest();
const PLATFORM = ["U0PLAT1", "U0PLAT2"];
const SECURITY = ["U0SEC1", "U0SEC2"];
const DEV = "U0DEV2";

const POLICY = `
version: 1
groups:
  devs: [${REQUESTER}, ${DEV}]
  platform: [${PLATFORM.join(", ")}]
  security: [${SECURITY.join(", ")}]
roles:
  requesters: [devs, platform]
  approvers: [devs, platform, security]
  admins: [platform]
approvals:
  - name: long leases
    action: extend
    require: [{ group: platform }, { group: security }]
`;

/** Leases of 60 s at most 120 s: asking for longer asks for 240 s from the approval. */
const LEASES = { VM_LEASE_DEFAULT: "60s", VM_LEASE_MAX: "120s", VM_LEASE_WARN: "50s" };

const dirs: string[] = [];
afterEach(() => {
  dirs.splice(0).forEach((dir) => {
    rmSync(dir, { recursive: true, force: true });
  });
});

async function withPolicy(policy = POLICY, env: Record<string, string> = {}, clock?: TestClock) {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-policy-extend-"));
  dirs.push(dir);
  const path = join(dir, "policy.yaml");
  writeFileSync(path, policy);
  return start({
    env: { VMBOT_POLICY: path, APPROVERS: undefined, ADMINS: undefined, ...LEASES, ...env },
    project: { role: "maintainer" },
    ...(clock === undefined ? {} : { clock: clock.now }),
  });
}

/** web-01 asked for by REQUESTER through the form, approved by platform, applied and configured. */
async function madeVm(h: Harness) {
  const delivery = await h.signer.slashCommand({
    text: "create web-01",
    userId: REQUESTER,
    channelId: CHANNEL,
  });
  await h.slack.waitFor("views.open", (call) => call.args.trigger_id === delivery.triggerId);
  const view = h.slack.views.at(-1)!;
  await h.signer.viewSubmission({
    view,
    values: stateValuesFor(view, { vm_name: "web-01", vm_ip: "192.168.1.50/24" }),
    userId: REQUESTER,
  });
  const pipelineId = await waitFor(
    async () =>
      (await h.bot.store.listActive()).find((r) => r.spec.name === "web-01")?.pipelineId ??
      undefined,
    "the pipeline",
  );
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "tf:plan");
  await h.bot.tracker.tick();
  const request = (await h.bot.store.listActive()).find((r) => r.spec.name === "web-01")!;
  await click(h, h.slack.message(CHANNEL, request.messageTs!)!, PLATFORM[0]!, "plan_approve");
  await waitFor(
    () => (h.gitlab.job(pipelineId, "tf:apply").status === "manual" ? undefined : true),
    "the apply job to start",
  );
  runUntilSettled(h, pipelineId, "tf:apply");
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "ansible:configure");
  await h.bot.tracker.tick();
  expect((await h.bot.store.inventory.get("web-01"))?.leaseUntil).not.toBeNull();
}

const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
const text = (message: FakeMessage) => JSON.stringify(message.blocks);

/** The lease reminder in REQUESTER's direct messages, sent with 20 s left. */
async function reminder(h: Harness) {
  await h.bot.store.inventory.setLease("web-01", inSeconds(20));
  await h.bot.tracker.tick();
  return waitFor(
    () => h.slack.messages.find((m) => m.channel === REQUESTER || m.channel.startsWith("D")),
    "the reminder",
  );
}

/** The owner asks for longer from the reminder; the extension request's message once it waits. */
async function askedLonger(h: Harness) {
  const dm = await reminder(h);
  expect(text(dm)).toContain("Ask for 4 minutes (needs approval)");
  await click(h, dm, REQUESTER, "lease_ask_longer");
  await h.slack.waitForResponse((post) =>
    String(post.body.text).includes("Asked to lend *web-01* for 4 minutes"),
  );
  const request = await waitFor(
    async () =>
      (await h.bot.store.listByStatus(["awaiting_approval"])).find(
        (r) => r.kind === "extend" && r.messageTs !== null,
      ),
    "the extension request waiting",
  );
  expect(request.channel).toBe(CHANNEL);
  const message = () => h.slack.message(CHANNEL, request.messageTs!)!;
  await waitFor(
    () => (text(message()).includes("Awaiting approval") ? true : undefined),
    "the message",
  );
  return { requestId: request.id, message };
}

/** `user` clicks `actionId` on `message`; their private answer. */
async function answerTo(
  h: Harness,
  message: FakeMessage,
  user: string,
  actionId = "extend_approve",
) {
  const before = h.slack.callsTo("chat.postEphemeral").filter((c) => c.args.user === user).length;
  await click(h, message, user, actionId);
  const call = await waitFor(
    () => h.slack.callsTo("chat.postEphemeral").filter((c) => c.args.user === user)[before],
    `the answer to ${user}`,
  );
  return String(call.args.text);
}

const leaseOf = async (h: Harness) => (await h.bot.store.inventory.get("web-01"))!.leaseUntil!;

describe("a lease past the maximum under the policy's extend rule", () => {
  it("needs one approval from platform and one from security: the same group twice and the wrong group do not count; the rule met moves the lease once, audited with the approvers", async () => {
    const h = await withPolicy();
    await madeVm(h);
    const { requestId, message } = await askedLonger(h);
    const before = await leaseOf(h);
    expect(text(message())).toContain(
      "Approvals: 0 of 2 approvals: 0 of 1 from platform, 0 of 1 from security",
    );
    const thread = () => h.slack.messages.filter((m) => m.thread_ts === message().ts);
    await waitFor(
      () => (thread().some((m) => m.text.includes("<@U0SEC1>")) ? true : undefined),
      "the rule's groups called in",
    );

    expect(await answerTo(h, message(), REQUESTER)).toBe(
      "You asked for web-01, so another approver must approve it.",
    );
    expect(await answerTo(h, message(), PLATFORM[0]!)).toBe(
      "Your approval is recorded. This lease extension needs 1 of 2 approvals: 1 of 1 from platform, 0 of 1 from security; the lease moves when the rest approve.",
    );
    expect(await answerTo(h, message(), PLATFORM[1]!)).toMatch(
      /^Your approval does not add to what this lease extension needs \(1 of 2 approvals/,
    );
    expect(await answerTo(h, message(), DEV)).toMatch(
      /^Your approval does not add to what this lease extension needs \(1 of 2 approvals/,
    );
    await waitFor(
      () => (text(message()).includes("approved so far by <@U0PLAT1>") ? true : undefined),
      "the message showing 1 of 2",
    );
    expect(await leaseOf(h)).toBe(before);

    const done = await answerTo(h, message(), SECURITY[0]!);
    expect(done).toContain("The lease of web-01 now ends");
    const request = (await h.bot.store.getRequest(requestId))!;
    expect(request.status).toBe("ready");
    const after = Date.parse(await leaseOf(h));
    // Twice the maximum (240 s) from the approval.
    expect(after - Date.parse(request.decision!.at)).toBe(240_000);
    await waitFor(
      () => (text(message()).includes("Extended: the lease of") ? true : undefined),
      "the message saying so",
    );
    await waitFor(
      () =>
        thread().some((m) => m.text.includes(`<@${REQUESTER}> the lease of`)) ? true : undefined,
      "the owner told",
    );
    const audit = await h.bot.store.listAudit(requestId);
    expect(audit.map((e) => e.action)).toEqual([
      "extension_requested",
      "awaiting_approval",
      "approval_recorded",
      "approval_recorded",
      "approval_recorded",
      "approved",
      "lease_extended",
    ]);
    expect(audit.at(-1)).toMatchObject({
      actor: SECURITY[0],
      detail: {
        name: "web-01",
        from: before,
        rule: "long leases",
        approvers: [PLATFORM[0], SECURITY[0]],
      },
    });
  });

  it("moves the lease once when ten approvers click at once", async () => {
    const h = await withPolicy();
    await madeVm(h);
    const { requestId, message } = await askedLonger(h);
    await answerTo(h, message(), PLATFORM[0]!);
    const shown = structuredClone(message());
    const clickers = [
      ...SECURITY,
      PLATFORM[1]!,
      ...SECURITY,
      PLATFORM[1]!,
      ...SECURITY,
      PLATFORM[0]!,
      DEV,
    ];
    expect(clickers).toHaveLength(10);
    await Promise.all(clickers.map((user) => click(h, shown, user, "extend_approve")));
    await waitFor(
      async () =>
        (await h.bot.store.getRequest(requestId))?.status === "ready" ? true : undefined,
      "the extension made",
    );
    // A later click is answered as already decided: every click before had its chance.
    expect(await answerTo(h, shown, SECURITY[1]!)).toMatch(/nothing to decide/);
    const audit = await h.bot.store.listAudit(requestId);
    expect(audit.filter((e) => e.action === "approved")).toHaveLength(1);
    expect(audit.filter((e) => e.action === "lease_extended")).toHaveLength(1);
    const moved = audit.find((e) => e.action === "lease_extended")!;
    expect(await leaseOf(h)).toBe(moved.detail.to);
    expect(
      (await h.bot.store.listAudit()).filter((e) => e.action === "lease_extended"),
    ).toHaveLength(1);
  });

  it("Reject ends the request and leaves the lease as it was", async () => {
    const h = await withPolicy();
    await madeVm(h);
    const { requestId, message } = await askedLonger(h);
    const before = await leaseOf(h);
    expect(JSON.stringify((await vmCommand(h, REQUESTER, "list")).blocks)).toContain(
      "longer lease awaiting approval",
    );
    await answerTo(h, message(), PLATFORM[0]!);
    const shown = structuredClone(message());
    await reject(h, message(), SECURITY[0]!, "not this quarter");
    await waitFor(
      async () =>
        (await h.bot.store.getRequest(requestId))?.status === "rejected" ? true : undefined,
      "the rejection",
    );
    await waitFor(
      () => (text(message()).includes("stays as it was") ? true : undefined),
      "the message saying so",
    );
    // A later approval finds nothing to decide, and the lease has not moved.
    expect(await answerTo(h, shown, SECURITY[1]!)).toMatch(/was rejected by <@U0SEC1>/);
    expect(await leaseOf(h)).toBe(before);
    const actions = (await h.bot.store.listAudit(requestId)).map((e) => e.action);
    expect(actions).toContain("extension_rejected");
    expect(actions).not.toContain("lease_extended");
  });

  it("expires after PLAN_TTL and leaves the lease as it was", async () => {
    const clock = testClock();
    const h = await withPolicy(POLICY, { PLAN_TTL: "2h" }, clock);
    await madeVm(h);
    await h.bot.store.inventory.setLease(
      "web-01",
      new Date(clock.now().getTime() + 20_000).toISOString(),
    );
    await h.bot.tracker.tick();
    const dm = await waitFor(
      () => h.slack.messages.find((m) => m.channel === REQUESTER || m.channel.startsWith("D")),
      "the reminder",
    );
    await click(h, dm, REQUESTER, "lease_ask_longer");
    const request = await waitFor(
      async () =>
        (await h.bot.store.listByStatus(["awaiting_approval"])).find(
          (r) => r.kind === "extend" && r.messageTs !== null,
        ),
      "the extension request waiting",
    );
    // Kept from expiring meanwhile: the lease is far off.
    await h.bot.store.inventory.setLease(
      "web-01",
      new Date(clock.now().getTime() + 86_400_000).toISOString(),
    );
    const before = await leaseOf(h);
    clock.advance(2 * 3_600_000 + 1_000);
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(request.id))?.status).toBe("expired");
    expect((await h.bot.store.getRequest(request.id))?.error).toContain(
      "the lease of *web-01* stays as it was",
    );
    expect(await leaseOf(h)).toBe(before);
  });

  it("removes an approval older than the rule's lapse_after on the tracker's pass, with a note, and the lease stays", async () => {
    const clock = testClock();
    const h = await withPolicy(
      POLICY.replace("{ group: security }]", "{ group: security }]\n    lapse_after: 30m"),
      {},
      clock,
    );
    await madeVm(h);
    await h.bot.store.inventory.setLease(
      "web-01",
      new Date(clock.now().getTime() + 20_000).toISOString(),
    );
    await h.bot.tracker.tick();
    const dm = await waitFor(
      () => h.slack.messages.find((m) => m.channel === REQUESTER || m.channel.startsWith("D")),
      "the reminder",
    );
    await click(h, dm, REQUESTER, "lease_ask_longer");
    const request = await waitFor(
      async () =>
        (await h.bot.store.listByStatus(["awaiting_approval"])).find(
          (r) => r.kind === "extend" && r.messageTs !== null,
        ),
      "the extension request waiting",
    );
    await h.bot.store.inventory.setLease(
      "web-01",
      new Date(clock.now().getTime() + 86_400_000).toISOString(),
    );
    const before = await leaseOf(h);
    const message = () => h.slack.message(CHANNEL, request.messageTs!)!;
    await waitFor(
      () => (text(message()).includes("extend_approve") ? true : undefined),
      "the message with its buttons",
    );
    await answerTo(h, message(), PLATFORM[0]!);
    clock.advance(31 * 60_000);
    await h.bot.tracker.tick();
    await waitFor(
      () =>
        text(message()).includes("<@U0PLAT1>: approval older than 30m lapsed") ? true : undefined,
      "the lapse on the message",
    );
    expect((await h.bot.store.listAudit(request.id)).map((e) => e.action)).toContain(
      "approval_lapsed",
    );
    // Security's approval alone no longer meets the rule: the lease stays.
    expect(await answerTo(h, message(), SECURITY[0]!)).toMatch(/^Your approval is recorded/);
    expect((await h.bot.store.getRequest(request.id))?.status).toBe("awaiting_approval");
    expect(await leaseOf(h)).toBe(before);
  });

  it("moves no lease when a destroy of the VM was opened before the rule was met, and says so to the approver and in the request", async () => {
    const h = await withPolicy();
    await madeVm(h);
    const { requestId, message } = await askedLonger(h);
    const before = await leaseOf(h);
    await answerTo(h, message(), PLATFORM[0]!);
    // What the lease's end on another replica can open while the extension waits: the two
    // checks ran on what the other had not written yet. Nothing on one replica opens it.
    const vm = (await h.bot.store.inventory.get("web-01"))!;
    const destroy = await h.bot.store.createRequest({
      kind: "destroy",
      requester: REQUESTER,
      spec: vm.spec,
      notes: [],
      channel: CHANNEL,
      submissionKey: `lease:web-01:${before}`,
    });

    const done = await answerTo(h, message(), SECURITY[0]!);
    expect(done).toContain("A destroy of *web-01* was asked for before this extension was made");
    expect(await leaseOf(h)).toBe(before);
    const request = (await h.bot.store.getRequest(requestId))!;
    expect(request.status).toBe("failed");
    const actions = (await h.bot.store.listAudit(requestId)).map((e) => e.action);
    expect(actions).toContain("extension_failed");
    expect(actions).not.toContain("lease_extended");
    await waitFor(
      () => (text(message()).includes("was asked for before this extension") ? true : undefined),
      "the request message saying why",
    );
    expect((await h.bot.store.getRequest(destroy.request.id))?.status).toBe("queued");
  });

  it("finishes an approval that a crash left before the lease was written: the tracker moves it once", async () => {
    const h = await withPolicy();
    await madeVm(h);
    const { requestId } = await askedLonger(h);
    const request = (await h.bot.store.getRequest(requestId))!;
    // The approval that met the rule was recorded with its intent, and the bot stopped there.
    // On PostgreSQL that is a replica of its own, gone since (its store closed): its claim on the
    // change is taken over at once. SQLite's one process is the bot itself.
    const decision = { kind: "approved" as const, by: SECURITY[0]!, at: new Date().toISOString() };
    const crashed = (store: AsyncStore) =>
      claimExtension(store, request, decision, {
        rule: "long leases",
        tally: "2 of 2 approvals",
        by: [PLATFORM[0]!, SECURITY[0]!],
      });
    const db = h.config.dbPath;
    const claimed = isPostgresUrl(db) ? await withStoreAt(db, crashed) : await crashed(h.bot.store);
    expect(claimed?.status).toBe("applying");
    await h.bot.tracker.tick();
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
    expect(Date.parse(await leaseOf(h)) - Date.parse(decision.at)).toBe(240_000);
    expect(
      (await h.bot.store.listAudit(requestId)).filter((e) => e.action === "lease_extended"),
    ).toHaveLength(1);
  });

  it("offers Ask for… on the owner's Home, and opens the same request from there", async () => {
    const h = await withPolicy();
    await madeVm(h);
    const before = h.slack.callsTo("views.publish").length;
    await h.signer.appHomeOpened({ userId: REQUESTER });
    const home = await waitFor(
      () =>
        h.slack
          .callsTo("views.publish")
          .slice(before)
          .find((call) => call.ok && call.args.user_id === REQUESTER),
      "the owner's Home",
    );
    expect(JSON.stringify(home.args.view)).toContain("Ask for 4 minutes (needs approval)");
    const opens = h.slack.callsTo("views.open").length;
    await h.signer.blockAction({
      view: h.slack.home(REQUESTER)!,
      userId: REQUESTER,
      actionId: "home_vm_ask_longer",
    });
    const notice = await waitFor(
      () => h.slack.callsTo("views.open").slice(opens)[0],
      "the answer to Ask for",
    );
    expect(JSON.stringify(notice.args.view)).toContain("Asked to lend *web-01* for 4 minutes");
    const request = await waitFor(
      async () =>
        (await h.bot.store.listByStatus(["awaiting_approval"])).find(
          (r) => r.kind === "extend" && r.messageTs !== null,
        ),
      "the extension request waiting",
    );
    expect(request.channel).toBe(CHANNEL);
    expect(request.requester).toBe(REQUESTER);
    // Someone else's Home shows no such button for web-01, and a forged click is refused.
    await h.signer.appHomeOpened({ userId: PLATFORM[0]! });
    const stranger = await waitFor(() => h.slack.home(PLATFORM[0]!), "the other Home");
    expect(JSON.stringify(stranger)).not.toContain("home_vm_ask_longer");
  });

  it("offers nothing past the maximum without an extend rule: Extend alone, up to the maximum", async () => {
    const h = await withPolicy(POLICY.replace(/approvals:[\s\S]*$/, "approvals: []\n"));
    await madeVm(h);
    const dm = await reminder(h);
    expect(text(dm)).not.toContain("lease_ask_longer");
    await click(h, dm, REQUESTER, "lease_extend");
    await h.slack.waitForResponse((post) =>
      String(post.body.text).includes("The lease of web-01 now ends"),
    );
    expect((await h.bot.store.listActive()).filter((r) => r.kind === "extend")).toHaveLength(0);
  });
});
