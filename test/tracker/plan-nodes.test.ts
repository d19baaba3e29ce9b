import { describe, expect, it } from "vitest";
import { fakeNode } from "../../sandbox/simulators/proxmox/index.js";
import {
  CHANNEL,
  askForVm,
  harnessPerTest,
  runUntilSettled,
  type HarnessOptions,
} from "../support/harness.js";

const start = harnessPerTest();

/** The plan message's text once the plan is read, for a harness started with `options`. */
async function planMessage(options: HarnessOptions): Promise<string> {
  const h = await start(options);
  const pipelineId = await askForVm(h);
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "tf:plan");
  await h.bot.tracker.tick();
  const request = (await h.bot.store.listActive())[0];
  expect(request?.status).toBe("awaiting_approval");
  const message = h.slack.message(CHANNEL, request?.messageTs ?? "");
  return JSON.stringify(message?.blocks);
}

const NODES = [
  fakeNode("pve1", { cores: 16, cpu: 0.08, memoryGiB: 128, memoryUsedGiB: 40 }),
  fakeNode("pve2", { cores: 8, cpu: 0.35, memoryGiB: 64, memoryUsedGiB: 50 }),
  fakeNode("pve3", { status: "offline", cores: 8, memoryGiB: 64 }),
];

describe("the nodes' load in the plan message", () => {
  it("comes from Proxmox when the plan has no node_resources", async () => {
    const text = await planMessage({ proxmox: { nodes: NODES } });
    expect(text).toContain("*Nodes*");
    expect(text).toContain("*pve1* (chosen): CPU 8%, memory 40.0 / 128.0 GiB");
    expect(text).toContain("*pve2*: CPU 35%, memory 50.0 / 64.0 GiB");
    expect(text).toContain("*pve3*: offline");
  });

  it("still goes out, with the last node list, when Proxmox is slow", async () => {
    const h = await start({ proxmox: { nodes: NODES }, nodeListMaxAgeMs: 0 });
    // The form read the nodes once; Proxmox then stops answering in time.
    const pipelineId = await askForVm(h);
    h.proxmox?.setDelay("hang");
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    // A pass that waited on Proxmox for good would never end: the test's timeout says so.
    await h.bot.tracker.tick();
    const request = (await h.bot.store.listActive())[0];
    expect(request?.status).toBe("awaiting_approval");
    const text = JSON.stringify(h.slack.message(CHANNEL, request?.messageTs ?? "")?.blocks);
    expect(text).toContain("*pve1* (chosen): CPU 8%, memory 40.0 / 128.0 GiB");
    h.proxmox?.setDelay(0);
  }, 30_000);

  it("is left out without Proxmox", async () => {
    const text = await planMessage({});
    expect(text).not.toContain("*Nodes*");
    expect(text).toContain("Plan:");
  });
});
