import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
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
 * The Home's "Waiting for your approval" under the policy's approval rules, through the wire: a
 * request is listed only to those whose approval its rule would still count, and the Homes of
 * those it enters or leaves are published again.
 */

const start = harnessPerTest();
const PLATFORM = ["U0PLAT1", "U0PLAT2"];
const SECURITY = ["U0SEC1"];
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

async function withPolicy() {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-home-queue-"));
  dirs.push(dir);
  const path = join(dir, "policy.yaml");
  writeFileSync(path, POLICY);
  return start({
    env: { VMBOT_POLICY: path, APPROVERS: undefined, ADMINS: undefined },
    project: { role: "maintainer" },
    home: { debounceMs: 30, retryMs: 150 },
  });
}

/** REQUESTER asks for a 20-core `name`; its plan runs to the approval. */
async function planned(h: Harness, name: string) {
  const delivery = await h.signer.slashCommand({
    text: `create ${name}`,
    userId: REQUESTER,
    channelId: CHANNEL,
  });
  await h.slack.waitFor("views.open", (call) => call.args.trigger_id === delivery.triggerId);
  const view = h.slack.views.at(-1)!;
  await h.signer.viewSubmission({
    view,
    values: stateValuesFor(view, { vm_name: name, vm_ip: "192.168.1.60/24", vm_cores: "20" }),
    userId: REQUESTER,
  });
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
  return () => h.slack.message(CHANNEL, request.messageTs!)!;
}

const publishesTo = (h: Harness, user: string) =>
  h.slack.callsTo("views.publish").filter((call) => call.ok && call.args.user_id === user);
const lastHome = (h: Harness, user: string) =>
  JSON.stringify(publishesTo(h, user).at(-1)?.args.view ?? null);

async function openHome(h: Harness, user: string) {
  const before = publishesTo(h, user).length;
  await h.signer.appHomeOpened({ userId: user });
  await waitFor(() => (publishesTo(h, user).length > before ? true : undefined), `${user}'s Home`);
}

describe("the Home's approval queue under the policy", () => {
  it("lists a request only to those whose approval its rule would count, and publishes again those it leaves", async () => {
    const h = await withPolicy();
    for (const user of [DEV, ...PLATFORM, ...SECURITY]) await openHome(h, user);
    const message = await planned(h, "big-01");
    await h.bot.home.flush();
    // The rule asks platform and security: a developer, an approver too, is not asked.
    for (const user of [...PLATFORM, ...SECURITY]) {
      await waitFor(
        () => (lastHome(h, user).includes("Waiting for your approval (1)") ? true : undefined),
        `big-01 in ${user}'s queue`,
      );
    }
    expect(lastHome(h, DEV)).toContain("Waiting for your approval (0)");
    const devPublishes = publishesTo(h, DEV).length;

    // Platform's place is filled: it leaves both platform Homes, and stays in security's.
    await click(h, message(), PLATFORM[0]!, "plan_approve");
    for (const user of PLATFORM) {
      await waitFor(
        () => (lastHome(h, user).includes("Waiting for your approval (0)") ? true : undefined),
        `big-01 gone from ${user}'s queue`,
      );
    }
    await h.bot.home.flush();
    expect(lastHome(h, SECURITY[0]!)).toContain("Waiting for your approval (1)");
    // The developer's queue never held it: their Home was not published again for it.
    expect(publishesTo(h, DEV)).toHaveLength(devPublishes);
  });
});
