import { describe, expect, it } from "vitest";
import type { Harness } from "../support/harness.js";
import { expectWithinSlackLimits } from "../support/block-kit.js";
import {
  ADMIN,
  APPROVER,
  CHANNEL,
  click,
  harnessPerTest,
  planRequest,
  PROJECT_PATH,
  REQUESTER,
  runUntilSettled,
} from "../support/harness.js";
import { SAMPLE_SPEC } from "../support/requests.js";
import { askToDestroy } from "../support/destroy.js";
import { waitFor } from "../support/wait.js";

const start = harnessPerTest();
const STRANGER = "U0STRANGER";

/** Types `/vm list [arg]` as `userId` and returns the immediate (ephemeral) answer. */
async function list(h: Harness, userId: string, arg = "") {
  const delivery = await h.signer.slashCommand({
    text: `list ${arg}`.trim(),
    userId,
    channelId: CHANNEL,
  });
  expect(delivery.status).toBe(200);
  return JSON.parse(delivery.body) as { response_type: string; text: string; blocks: unknown[] };
}

/** web-01 asked for, approved and applied; configure ends as `configure` says. */
async function madeVm(h: Harness, configure: "success" | "failed" = "success") {
  const { pipelineId, requestId, message } = await planRequest(h);
  expect((await click(h, message(), APPROVER, "plan_approve")).status).toBe(200);
  await h.slack.waitFor("chat.update", (call) =>
    JSON.stringify(call.args.blocks).includes(`Approved by <@${APPROVER}>`),
  );
  h.gitlab.setJobArtifact(pipelineId, "tf:apply", "vm_ip.txt", "192.168.1.50\n");
  runUntilSettled(h, pipelineId, "tf:apply");
  await h.bot.tracker.tick();
  if (configure === "failed") h.gitlab.failJob(pipelineId, "ansible:configure");
  runUntilSettled(h, pipelineId, "ansible:configure");
  await h.bot.tracker.tick();
  return { pipelineId, requestId };
}

describe("/vm list", () => {
  it("shows the owner their VM once Terraform has applied it, and everyone's with all", async () => {
    const h = await start({ env: { REQUESTERS: `${REQUESTER},${APPROVER}` } });
    expect((await list(h, REQUESTER)).text).toContain("You have no VM made by vmbot");
    const { pipelineId, requestId } = await madeVm(h);
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");

    const mine = await list(h, REQUESTER);
    expectWithinSlackLimits(mine);
    expect(mine.response_type).toBe("ephemeral");
    const shown = JSON.stringify(mine.blocks);
    expect(shown).toContain("*Your VMs* (1), newest first:");
    expect(shown).toMatch(
      /• \*web-01\* · 192\.168\.1\.50 · pve · 2 cores, 2 GiB, 20 GiB disk · \d+ s old · no lease/,
    );
    expect(await h.bot.store.inventory.get("web-01")).toMatchObject({
      owner: REQUESTER,
      requestId,
      pipelineId,
      stateName: "vm-web-01",
      approvedBy: APPROVER,
      status: "live",
    });

    // The approver has none of their own, and sees it among everyone's, with its owner.
    expect((await list(h, APPROVER)).text).toContain("You have no VM made by vmbot");
    const all = JSON.stringify((await list(h, APPROVER, "ALL")).blocks);
    expect(all).toContain("*vmbot's VMs* (1)");
    expect(all).toContain(`<@${REQUESTER}>`);
  });

  it("lists a VM whose configure failed: Terraform made it", async () => {
    const h = await start();
    const { requestId } = await madeVm(h, "failed");
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("failed");
    expect(JSON.stringify((await list(h, REQUESTER)).blocks)).toContain("*web-01*");
  });

  it("refuses someone who may not ask for VMs, naming who may, and a word it does not know", async () => {
    const h = await start({ env: { REQUESTERS: REQUESTER } });
    const refused = await list(h, STRANGER);
    expect(refused.text).toBe(
      `:warning: The VM list is shown to the people who may ask for VMs (<@${REQUESTER}>), and you are not among them.`,
    );
    expect((await list(h, REQUESTER, "everything")).text).toBe(
      ":warning: Usage: `/vm list` shows your VMs; `/vm list all` shows every VM vmbot made.",
    );
  });

  it("keeps a list of many VMs within Slack's limits, newest first, and says how many are left out", async () => {
    const h = await start();
    for (let i = 0; i < 60; i += 1) {
      const name = `vm-${String(i).padStart(2, "0")}`;
      await h.bot.store.inventory.record({
        name,
        requestId: `vm-req-${i}`,
        owner: REQUESTER,
        spec: { ...SAMPLE_SPEC, name },
        stateName: `vm-${name}`,
        address: null,
        pipelineId: 1000 + i,
        approvedBy: APPROVER,
        leaseUntil: null,
      });
    }
    const answer = await list(h, REQUESTER);
    expectWithinSlackLimits(answer);
    const shown = JSON.stringify(answer.blocks);
    expect(shown).toContain("*Your VMs* (60), newest first:");
    expect(shown).toContain("…and 10 older VMs, not shown.");
    expect((shown.match(/• \*vm-/g) ?? []).length).toBe(50);
  });

  it("shows a destroy in flight in the status column: awaiting approval, then destroying, then the VM is gone from the list", async () => {
    const h = await start({ project: { role: "maintainer" } });
    await madeVm(h);
    const status = async (userId = REQUESTER, arg = "") => {
      const shown = (await list(h, userId, arg)).blocks as { text?: { text: string } }[];
      const line = shown
        .flatMap((block) => block.text?.text.split("\n") ?? [])
        .find((each) => each.startsWith("• *web-01*"));
      return line?.split(" · ").at(-1);
    };
    expect(await status()).toBe("live");
    const { pipelineId, message } = await askToDestroy(h);
    expect(await status()).toBe("*destroy awaiting approval*");
    expect(await status(ADMIN, "all")).toBe("*destroy awaiting approval*");
    await click(h, message(), APPROVER, "destroy_approve");
    await waitFor(
      () => (h.gitlab.job(pipelineId, "tf:destroy").status === "manual" ? undefined : true),
      "the destroy job to start",
    );
    expect(await status()).toBe("*destroying*");
    runUntilSettled(h, pipelineId, "tf:destroy");
    await h.bot.tracker.tick();
    expect(await status()).toBeUndefined();
    expect((await list(h, REQUESTER)).text).toContain("You have no VM made by vmbot");
  });

  it("compares the VMs with GitLab's Terraform states: a state gone marks its VM, a state vmbot never made is shown to admins only", async () => {
    const h = await start({ project: { role: "maintainer" } });
    const record = (name: string) =>
      h.bot.store.inventory.record({
        name,
        requestId: `vm-req-${name}`,
        owner: REQUESTER,
        spec: { ...SAMPLE_SPEC, name },
        stateName: `vm-${name}`,
        address: null,
        pipelineId: 1001,
        approvedBy: APPROVER,
        leaseUntil: null,
      });
    await record("web-01");
    await record("db-01");
    h.gitlab.addTerraformState(PROJECT_PATH, "vm-web-01");
    h.gitlab.addTerraformState(PROJECT_PATH, "vm-db-01");
    h.gitlab.addTerraformState(PROJECT_PATH, "network-core");
    await h.bot.inventory.check();
    expect((await h.bot.store.inventory.list()).map((vm) => [vm.name, vm.status])).toEqual(
      expect.arrayContaining([
        ["web-01", "live"],
        ["db-01", "live"],
      ]),
    );
    expect(await h.bot.store.inventory.list()).toHaveLength(2);
    expect(await h.bot.store.inventory.unmanagedStates()).toEqual(["network-core"]);

    h.gitlab.deleteTerraformState(PROJECT_PATH, "vm-db-01");
    await h.bot.inventory.check();
    expect(await h.bot.store.inventory.get("db-01")).toMatchObject({ status: "gone" });
    const mine = JSON.stringify((await list(h, REQUESTER)).blocks);
    expect(mine).toContain(
      ":warning: Its Terraform state vm-db-01 is no longer in GitLab: it was removed outside vmbot, so the VM may be gone too.",
    );
    expect(JSON.stringify((await list(h, REQUESTER, "all")).blocks)).not.toContain("network-core");
    expect(JSON.stringify((await list(h, ADMIN, "all")).blocks)).toContain(
      "Terraform states in the project that vmbot did not make (left alone): `network-core`.",
    );

    // Back in GitLab (restored from a backup): live again. Nothing was ever removed or adopted.
    h.gitlab.addTerraformState(PROJECT_PATH, "vm-db-01");
    await h.bot.inventory.check();
    expect(await h.bot.store.inventory.get("db-01")).toMatchObject({
      status: "live",
      statusNote: null,
    });
    expect(h.gitlab.terraformStates.map((state) => state.name).sort()).toEqual([
      "network-core",
      "vm-db-01",
      "vm-web-01",
    ]);
  });

  it("reads every page of a project's states: a VM whose state is on the third page stays live", async () => {
    const h = await start({ project: { role: "maintainer" } });
    for (let i = 0; i < 230; i += 1) {
      h.gitlab.addTerraformState(PROJECT_PATH, `other-${String(i).padStart(3, "0")}`);
    }
    h.gitlab.addTerraformState(PROJECT_PATH, "vm-web-01");
    await h.bot.store.inventory.record({
      name: "web-01",
      requestId: "vm-req-1",
      owner: REQUESTER,
      spec: SAMPLE_SPEC,
      stateName: "vm-web-01",
      address: null,
      pipelineId: 1001,
      approvedBy: APPROVER,
      leaseUntil: null,
    });
    await h.bot.inventory.check();
    expect(await h.bot.store.inventory.get("web-01")).toMatchObject({ status: "live" });
    expect(await h.bot.store.inventory.unmanagedStates()).toHaveLength(230);
    expect(h.gitlab.requestsTo("POST", /^\/api\/graphql$/)).toHaveLength(3);
  });
});
