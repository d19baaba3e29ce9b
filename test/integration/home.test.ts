import { describe, expect, it } from "vitest";
import type { SlackCall } from "../../sandbox/simulators/slack/index.js";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import { startVmbot } from "../../src/start.js";
import {
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
import { captureLogs } from "../support/logs.js";
import { waitFor } from "../support/wait.js";

/**
 * The Home tab through the wire: a signed `app_home_opened` in, `views.publish` out; the Home
 * published again when what it shows changes, for the people who opened it; its buttons through
 * the same checks as the lease reminder's and `/vm destroy`'s.
 */

const start = harnessPerTest();
const STRANGER = "U0STRANGER";
const PIPELINE_CREATE = /\/pipeline$/;
const QUICK = { debounceMs: 30, retryMs: 150 };

const publishesTo = (h: Harness, user: string) =>
  h.slack.callsTo("views.publish").filter((call) => call.args.user_id === user);
const shown = (call: SlackCall | undefined) => JSON.stringify(call?.args.view ?? null);

/** The next successful publish to `user` after the `after` first ones, that `matches`. */
const nextPublish = (h: Harness, user: string, after: number, matches: (view: string) => boolean) =>
  waitFor(
    () =>
      publishesTo(h, user)
        .slice(after)
        .find((call) => call.ok && matches(shown(call))),
    `a Home published to ${user}`,
    10_000,
  );

/** web-01 made for REQUESTER (approved by APPROVER), and web-02 waiting for approval. */
async function withVms(options: HarnessOptions = {}) {
  const h = await start({ project: { role: "maintainer" }, home: QUICK, ...options });
  const first = await planRequest(h, "web-01");
  await click(h, first.message(), APPROVER, "plan_approve");
  await waitFor(
    () => (h.gitlab.job(first.pipelineId, "tf:apply").status === "manual" ? undefined : true),
    "the apply job to start",
  );
  runUntilSettled(h, first.pipelineId, "tf:apply");
  await h.bot.tracker.tick();
  runUntilSettled(h, first.pipelineId, "ansible:configure");
  await h.bot.tracker.tick();
  const second = await planRequest(h, "web-02");
  // Whatever the changes so far asked for is published (to nobody: no one has a Home yet).
  await h.bot.home.flush();
  return { h, first, second };
}

/** `user` opens their Home; resolves with its first publish. */
async function openHome(h: Harness, user: string) {
  const before = publishesTo(h, user).length;
  const delivered = await h.signer.appHomeOpened({ userId: user });
  expect(delivered.status).toBe(200);
  return nextPublish(h, user, before, () => true);
}

describe("the Home tab", () => {
  it("publishes one Home to whoever opens it: their VMs with Extend and Destroy, their requests, and an approver's queue", async () => {
    const { h, second } = await withVms({
      env: { VM_LEASE_DEFAULT: "60s", VM_LEASE_MAX: "120s", VM_LEASE_WARN: "30s" },
    });

    const requesterHome = shown(await openHome(h, REQUESTER));
    expect(requesterHome).toContain('"type":"home"');
    expect(requesterHome).toContain("web-01");
    expect(requesterHome).toContain("home_vm_extend");
    expect(requesterHome).toContain("home_vm_destroy");
    expect(requesterHome).toContain("home_create");
    expect(requesterHome).toContain("Your requests in flight (1)");
    expect(requesterHome).toContain("Awaiting approval");
    // A requester is not an approver: no queue.
    expect(requesterHome).not.toContain("Waiting for your approval");

    const approverHome = shown(await openHome(h, APPROVER));
    expect(approverHome).toContain("Your VMs (0)");
    expect(approverHome).toContain("Waiting for your approval (1)");
    expect(approverHome).toContain("web-02");
    // A link to the request message, where approving stays.
    const ts = (await h.bot.store.getRequest(second.requestId))!.messageTs!.replace(".", "");
    expect(approverHome).toContain(`slack.com/archives/C0VMBOT/p${ts}`);
    expect(approverHome).not.toContain("plan_approve");

    // Exactly one publish each: a flush of whatever is due is the barrier.
    await h.bot.home.flush();
    expect(publishesTo(h, REQUESTER)).toHaveLength(1);
    expect(publishesTo(h, APPROVER)).toHaveLength(1);
    expect(await h.bot.store.homes.list()).toEqual([REQUESTER, APPROVER]);
    // The simulator holds the Home as Slack does.
    expect(h.slack.home(APPROVER)?.type).toBe("home");
  });

  it("publishes the approver's and the requester's Home again after an approval in the channel", async () => {
    const { h, second } = await withVms();
    await openHome(h, REQUESTER);
    await openHome(h, APPROVER);
    const [mine, theirs] = [publishesTo(h, REQUESTER).length, publishesTo(h, APPROVER).length];
    const opened = h.slack.calls.length;

    await click(h, second.message(), APPROVER, "plan_approve");
    await nextPublish(h, APPROVER, theirs, (view) =>
      view.includes("Waiting for your approval (0)"),
    );
    await nextPublish(
      h,
      REQUESTER,
      mine,
      (view) => view.includes("web-02") && view.includes("Applying"),
    );
    // Both were published again without opening their Home: each opened it once, before.
    expect(h.slack.calls.slice(opened).some((c) => c.method === "views.publish")).toBe(true);
  });

  it("refuses a Home Destroy by someone who does not own the VM, and asks for nothing", async () => {
    const { h } = await withVms();
    await openHome(h, REQUESTER);
    const pipelines = h.gitlab.requestsTo("POST", PIPELINE_CREATE).length;
    const opens = h.slack.callsTo("views.open").length;

    // The owner's Home, clicked by someone else (a forwarded or forged payload).
    await h.signer.blockAction({
      view: h.slack.home(REQUESTER)!,
      userId: STRANGER,
      actionId: "home_vm_destroy",
    });
    const notice = await waitFor(
      () => h.slack.callsTo("views.open").slice(opens)[0],
      "the answer to the stranger's click",
    );
    expect(shown(notice)).toContain("web-01");
    expect(shown(notice)).not.toContain("Ask to destroy");
    expect(shown(notice)).not.toContain("home_destroy_modal");
    expect((await h.bot.store.listActive()).filter((r) => r.kind === "destroy")).toEqual([]);
    expect(h.gitlab.requestsTo("POST", PIPELINE_CREATE)).toHaveLength(pipelines);
  });

  it("destroys from the Home through the same confirmation and reviewed request as /vm destroy", async () => {
    const { h } = await withVms();
    await openHome(h, REQUESTER);
    const opens = h.slack.callsTo("views.open").length;
    await h.signer.blockAction({
      view: h.slack.home(REQUESTER)!,
      userId: REQUESTER,
      actionId: "home_vm_destroy",
    });
    await waitFor(() => h.slack.callsTo("views.open").slice(opens)[0], "the confirmation");
    const confirmation = h.slack.views.at(-1)!;
    expect(confirmation.callback_id).toBe("home_destroy_modal");
    expect(JSON.stringify(confirmation.blocks)).toContain("192.168.1.50");

    const submitted = await h.signer.viewSubmission({
      view: confirmation,
      values: stateValuesFor(confirmation, {}),
      userId: REQUESTER,
    });
    expect(submitted.json?.response_action).toBe("update");
    expect(JSON.stringify(submitted.json)).toContain("Asked to destroy");
    const request = await waitFor(
      async () =>
        (await h.bot.store.listActive()).find((r) => r.kind === "destroy" && r.pipelineId !== null),
      "the destroy request",
    );
    expect(request.requester).toBe(REQUESTER);
    expect(h.gitlab.pipeline(request.pipelineId!).inputs).toMatchObject({
      action: "destroy",
      vm_name: "web-01",
    });
  });

  it("opens the same form as /vm create from the Home's Create VM, and posts the request where the person asks", async () => {
    const { h } = await withVms();
    await openHome(h, REQUESTER);
    const opens = h.slack.callsTo("views.open").length;
    await h.signer.blockAction({
      view: h.slack.home(REQUESTER)!,
      userId: REQUESTER,
      actionId: "home_create",
    });
    await waitFor(() => h.slack.callsTo("views.open").slice(opens)[0], "the create form");
    const form = h.slack.views.at(-1)!;
    expect(form.callback_id).toBe("vm_create_modal");
    const pipelines = h.gitlab.pipelines.length;
    await h.signer.viewSubmission({
      view: form,
      values: stateValuesFor(form, { vm_name: "web-03", vm_ip: "192.168.1.70/24" }),
      userId: REQUESTER,
    });
    const request = await waitFor(
      async () =>
        (await h.bot.store.listActive()).find(
          (r) => r.spec.name === "web-03" && r.pipelineId !== null,
        ),
      "the request from the Home's form",
    );
    expect(request.channel).toBe(CHANNEL);
    expect(h.gitlab.pipelines.length).toBe(pipelines + 1);
  });

  it("extends a lease from the Home as the reminder's Extend does, and shows the new end", async () => {
    const { h } = await withVms({
      env: { VM_LEASE_DEFAULT: "60s", VM_LEASE_MAX: "120s", VM_LEASE_WARN: "30s" },
    });
    await h.bot.store.inventory.setLease("web-01", new Date(Date.now() + 20_000).toISOString());
    await openHome(h, REQUESTER);
    const published = publishesTo(h, REQUESTER).length;
    const opens = h.slack.callsTo("views.open").length;

    await h.signer.blockAction({
      view: h.slack.home(REQUESTER)!,
      userId: REQUESTER,
      actionId: "home_vm_extend",
    });
    const notice = await waitFor(
      () => h.slack.callsTo("views.open").slice(opens)[0],
      "the answer to Extend",
    );
    expect(shown(notice)).toContain("The lease of web-01 now ends");
    const until = (await h.bot.store.inventory.get("web-01"))!.leaseUntil!;
    expect(Date.parse(until) - Date.now()).toBeGreaterThan(50_000);
    expect(Date.parse(until) - Date.now()).toBeLessThanOrEqual(60_000);
    expect(
      (await h.bot.store.listAudit()).filter((e) => e.action === "lease_extended"),
    ).toHaveLength(1);
    // The Home shows the new end without being opened again.
    await nextPublish(h, REQUESTER, published, (view) => view.includes(until));
  });

  it("keeps the flow going when Slack refuses a Home, and publishes it on a later try", async () => {
    const { h, second } = await withVms();
    await openHome(h, REQUESTER);
    const before = publishesTo(h, REQUESTER).length;
    h.slack.failNext("views.publish", "internal_error");

    await click(h, second.message(), APPROVER, "plan_approve");
    // The approval played the apply job whatever became of the Home.
    await waitFor(
      () => (h.gitlab.job(second.pipelineId, "tf:apply").status === "manual" ? undefined : true),
      "the apply job to start",
    );
    const refused = await waitFor(
      () =>
        publishesTo(h, REQUESTER)
          .slice(before)
          .find((call) => !call.ok),
      "the refused publish",
    );
    expect(refused.error).toBe("internal_error");
    await nextPublish(h, REQUESTER, before, (view) => view.includes("Applying"));
    expect((await h.bot.store.getRequest(second.requestId))?.status).toBe("applying");
    expect(h.logs.some((line) => line.includes("could not publish a Home tab"))).toBe(true);
  });

  it("remembers who has a Home across a restart, and publishes theirs on the next change", async () => {
    const { h } = await withVms({
      env: { VM_LEASE_DEFAULT: "60s", VM_LEASE_MAX: "120s", VM_LEASE_WARN: "30s" },
    });
    await openHome(h, REQUESTER);
    await h.bot.stop(2_000);

    const again = await startVmbot(h.config, { logDestination: captureLogs().stream, home: QUICK });
    try {
      expect(await again.store.homes.list()).toEqual([REQUESTER]);
      const before = publishesTo(h, REQUESTER).length;
      const until = new Date(Date.now() + 45_000).toISOString();
      await again.store.inventory.setLease("web-01", until);
      await nextPublish(h, REQUESTER, before, (view) => view.includes(until));
    } finally {
      await again.stop(2_000);
    }
  });
});
