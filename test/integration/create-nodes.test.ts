import { describe, expect, it } from "vitest";
import { fakeNode } from "../../sandbox/simulators/proxmox/index.js";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import type { FakeView } from "../../sandbox/simulators/slack/index.js";
import { expectWithinSlackLimits } from "../support/block-kit.js";
import { CHANNEL, harnessPerTest, REQUESTER, type Harness } from "../support/harness.js";
import { waitFor } from "../support/wait.js";

const start = harnessPerTest();

interface NodeSelect {
  options: { text: { text: string }; value: string }[];
  initial_option?: { value: string };
}

const nodeBlock = (view: FakeView) =>
  view.blocks.find((block) => block.block_id === "vm_node") as unknown as {
    element: NodeSelect;
    hint?: { text: string };
  };

const NODES = [
  fakeNode("pve1", { cores: 16, cpu: 0.25, memoryGiB: 128, memoryUsedGiB: 40 }),
  fakeNode("pve2", { cores: 8, cpu: 0.5, memoryGiB: 64, memoryUsedGiB: 60 }),
  fakeNode("pve3", { status: "offline", cores: 8, memoryGiB: 64 }),
];

async function openForm(h: Harness) {
  const sent = Date.now();
  const delivery = await h.signer.slashCommand({
    text: "create web-01",
    userId: REQUESTER,
    channelId: CHANNEL,
  });
  const call = await h.slack.waitFor(
    "views.open",
    (candidate) => candidate.args.trigger_id === delivery.triggerId,
  );
  return { view: h.slack.views.at(-1)!, openedAfterMs: call.at - sent };
}

describe("the create form's node list", () => {
  it("offers the online nodes from Proxmox with their free CPU and memory", async () => {
    const h = await start({ proxmox: { nodes: NODES }, env: { VM_NODES: "pve2" } });
    const { view } = await openForm(h);
    expectWithinSlackLimits(view, "view");
    const node = nodeBlock(view);
    expect(node.element.options.map((option) => [option.value, option.text.text])).toEqual([
      ["pve2", "pve2 — 4.0 of 8 cores, 4.0 GiB free"],
      ["pve1", "pve1 — 12.0 of 16 cores, 88.0 GiB free"],
    ]);
    expect(node.element.initial_option?.value).toBe("pve2");
    expect(node.hint?.text).toBe("Free CPU and memory, live from Proxmox.");
    expect(h.gitlabSinceStart()).toHaveLength(0);
  });

  it("opens within the budget while Proxmox takes 10 seconds, then updates the list in place", async () => {
    const h = await start({ proxmox: { nodes: NODES }, proxmoxTimeoutMs: 15_000 });
    h.proxmox!.setDelay(10_000);
    const { view, openedAfterMs } = await openForm(h);
    // The trigger_id lives three seconds: the form must not wait for Proxmox.
    expect(openedAfterMs).toBeLessThan(2_500);
    expect(nodeBlock(view).element.options.map((option) => option.value)).toEqual(["pve", "pve2"]);
    expect(nodeBlock(view).hint?.text).toBe(
      "Proxmox has not answered yet: these are the configured nodes (VM_NODES). The list updates with free CPU and memory when it answers.",
    );
    const update = await h.slack.waitFor("views.update", undefined, 15_000);
    expect(update.args.view_id).toBe(view.id);
    expect(update.args.hash).toBeTypeOf("string");
    const updated = h.slack.view(view.id)!;
    expectWithinSlackLimits(updated, "view");
    expect(nodeBlock(updated).element.options.map((option) => option.value)).toEqual([
      "pve1",
      "pve2",
    ]);
    // Everything else is the same form, so Slack keeps what was typed.
    expect(updated.blocks.map((block) => block.block_id)).toEqual(
      view.blocks.map((block) => block.block_id),
    );
    expect(updated.private_metadata).toBe(view.private_metadata);
    expect(h.proxmox!.requests).toHaveLength(1);
  }, 20_000);

  it("opens at once with the last list when Proxmox has become slow, and updates it after", async () => {
    const h = await start({ proxmox: { nodes: NODES }, nodeListMaxAgeMs: 0 });
    await openForm(h);
    h.proxmox!.updateNode("pve2", { cpu: 0.0 });
    h.proxmox!.setDelay(2_000);
    const { view, openedAfterMs } = await openForm(h);
    expect(openedAfterMs).toBeLessThan(1_000);
    const stale = nodeBlock(view);
    expect(stale.element.options.map((option) => option.text.text)).toContain(
      "pve2 — 4.0 of 8 cores, 4.0 GiB free",
    );
    expect(stale.hint?.text).toMatch(
      /^Free CPU and memory as of \d\d:\d\d UTC; Proxmox is being asked again and the list updates when it answers\.$/,
    );
    await h.slack.waitFor("views.update", (call) => call.args.view_id === view.id, 5_000);
    const fresh = nodeBlock(h.slack.view(view.id)!);
    expect(fresh.element.options.map((option) => option.text.text)).toContain(
      "pve2 — 8.0 of 8 cores, 4.0 GiB free",
    );
    expect(fresh.hint?.text).toBe("Free CPU and memory, live from Proxmox.");
  });

  it("accepts, at submission, a node of the last list when Proxmox is slow to answer", async () => {
    const h = await start({
      proxmox: { nodes: NODES },
      nodeListMaxAgeMs: 0,
      env: { VM_NODES: "pve" },
    });
    const { view } = await openForm(h);
    h.proxmox!.setDelay(5_000);
    const delivery = await h.signer.viewSubmission({
      view,
      values: stateValuesFor(view, { vm_node: "pve1", vm_ip: "192.168.1.50/24" }),
      userId: REQUESTER,
    });
    expect(delivery.json).toBeUndefined();
    const pipeline = await waitFor(() => h.gitlab.pipelines.at(-1), "the pipeline");
    expect(pipeline.inputs.proxmox_node).toBe("pve1");
  });

  it("falls back to VM_NODES and says so when Proxmox refuses", async () => {
    const h = await start({ proxmox: { nodes: NODES } });
    h.proxmox!.setTokenState("expired");
    const { view } = await openForm(h);
    expect(nodeBlock(view).element.options.map((option) => option.value)).toEqual(["pve", "pve2"]);
    expect(nodeBlock(view).hint?.text).toBe(
      "Proxmox could not be asked (see /vm capacity for why): these are the configured nodes (VM_NODES).",
    );
  });

  it("asks Proxmox once for a burst of forms", async () => {
    const h = await start({ proxmox: { nodes: NODES } });
    await Promise.all(
      [1, 2, 3].map((n) =>
        h.signer.slashCommand({ text: `create web-0${n}`, userId: REQUESTER, channelId: CHANNEL }),
      ),
    );
    await waitFor(
      () => (h.slack.callsTo("views.open").length === 3 ? true : undefined),
      "three forms",
    );
    expect(h.proxmox!.requests).toHaveLength(1);
  });

  it("accepts a live node that VM_NODES does not list, and sends it to the pipeline", async () => {
    const h = await start({ proxmox: { nodes: NODES } });
    const { view } = await openForm(h);
    const delivery = await h.signer.viewSubmission({
      view,
      values: stateValuesFor(view, { vm_node: "pve1", vm_ip: "192.168.1.50/24" }),
      userId: REQUESTER,
    });
    expect(delivery.json).toBeUndefined();
    const pipeline = await waitFor(() => h.gitlab.pipelines.at(-1), "the pipeline");
    expect(pipeline.inputs.proxmox_node).toBe("pve1");
  });

  it("refuses a node that Proxmox reports offline, on the field", async () => {
    const h = await start({ proxmox: { nodes: NODES }, env: { VM_NODES: "pve1,pve3" } });
    // Proxmox refuses at first, so the form offers VM_NODES, pve3 among them…
    h.proxmox!.setTokenState("expired");
    const { view } = await openForm(h);
    expect(nodeBlock(view).element.options.map((option) => option.value)).toContain("pve3");
    // … and answers by the time the form comes back: pve3 is offline.
    h.proxmox!.setTokenState("valid");
    const delivery = await h.signer.viewSubmission({
      view,
      values: stateValuesFor(view, { vm_node: "pve3", vm_ip: "192.168.1.50/24" }),
      userId: REQUESTER,
    });
    expect(delivery.json).toEqual({
      response_action: "errors",
      errors: { vm_node: "pve3 is not online in Proxmox now: choose another node." },
    });
    expect(h.gitlab.pipelines).toHaveLength(0);
  });
});
