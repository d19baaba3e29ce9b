import { describe, expect, it } from "vitest";
import type { ProxmoxNode } from "../../src/proxmox/proxmox.js";
import { capacityMessage, capacityUsage, gauge, nodeText, size } from "../../src/views/capacity.js";
import { liveNodeOptions, nodeLabel } from "../../src/views/create-modal.js";
import { expectWithinSlackLimits } from "../support/block-kit.js";

const GIB = 1024 ** 3;
const at = new Date("2026-12-02T10:00:00Z");

const online = (name: string, extra: Partial<ProxmoxNode> = {}): ProxmoxNode => ({
  name,
  status: "online",
  cores: 8,
  cpu: 0.25,
  memTotal: 32 * GIB,
  memUsed: 12 * GIB,
  diskTotal: 500 * GIB,
  diskUsed: 120 * GIB,
  ...extra,
});

const texts = (message: { blocks: unknown[] }) => JSON.stringify(message.blocks);

describe("gauge and size", () => {
  it("draws ten cells, never empty for some use and never full short of all", () => {
    expect(gauge(0)).toBe("░░░░░░░░░░");
    expect(gauge(0.001)).toBe("█░░░░░░░░░");
    expect(gauge(0.32)).toBe("███░░░░░░░");
    expect(gauge(0.99)).toBe("█████████░");
    expect(gauge(1)).toBe("██████████");
    expect(gauge(1.7)).toBe("██████████");
    expect(gauge(-1)).toBe("░░░░░░░░░░");
  });

  it("prints GiB with one decimal, and TiB from 1 TiB", () => {
    expect(size(12 * GIB)).toBe("12.0 GiB");
    expect(size(1.5 * GIB)).toBe("1.5 GiB");
    expect(size(2048 * GIB)).toBe("2.0 TiB");
  });
});

describe("capacityMessage", () => {
  it("shows one online node with every field: status, CPU of cores, memory and disk with gauges", () => {
    const message = capacityMessage({ nodes: [online("pve")], source: "https://pve.lan:8006", at });
    expectWithinSlackLimits(message);
    expect(message.blocks[0]).toEqual({
      type: "header",
      text: { type: "plain_text", text: "Proxmox capacity", emoji: true },
    });
    expect(texts(message)).toContain(
      "1 of 1 node online · CPU 25% of 8 cores · memory 12.0 GiB / 32.0 GiB",
    );
    expect(texts(message)).toContain(
      "live from https://pve.lan:8006 at <!date^1796205600^{time}|2026-12-02T10:00:00.000Z>",
    );
    const node = nodeText(online("pve"));
    expect(node).toBe(
      [
        "*pve*  :large_green_circle: online",
        "```CPU     ███░░░░░░░   25% of 8 cores",
        "Memory  ████░░░░░░  12.0 GiB / 32.0 GiB",
        "Disk    ██░░░░░░░░  120.0 GiB / 500.0 GiB```",
      ].join("\n"),
    );
    expect(message.text).toBe(
      "Proxmox capacity: 1 of 1 node online · CPU 25% of 8 cores · memory 12.0 GiB / 32.0 GiB",
    );
  });

  it("sorts nodes by name, marks the offline one and shows only its maxima", () => {
    const offline: ProxmoxNode = { name: "pve2", status: "offline", cores: 4, memTotal: 16 * GIB };
    const message = capacityMessage({
      nodes: [online("pve10"), offline, online("pve1", { cpu: 0.5 })],
      source: "https://pve.lan:8006",
      at,
    });
    expectWithinSlackLimits(message);
    const sections = message.blocks.filter((block) => block.type === "section");
    expect(sections.map((block) => /\*(pve\d+)\*/.exec(JSON.stringify(block))?.[1])).toEqual([
      "pve1",
      "pve2",
      "pve10",
    ]);
    expect(nodeText(offline)).toBe(
      "*pve2*  :red_circle: *offline*\n4 cores · 16.0 GiB memory — load unknown while offline",
    );
    // The totals count online nodes only: 16 cores, 6 of them busy.
    expect(message.text).toContain("2 of 3 nodes online · CPU 38% of 16 cores");
  });

  it("says so for a node whose status Proxmox does not know, and for one without figures", () => {
    expect(nodeText({ name: "pve3", status: "unknown" })).toBe(
      "*pve3*  :white_circle: *status unknown*\nno figures — load unknown while its status is unknown",
    );
    expect(nodeText({ name: "pve4", status: "online" })).toBe(
      "*pve4*  :large_green_circle: online\nProxmox reported no load figures for this node.",
    );
  });

  it("escapes node names, so a name cannot mention or link", () => {
    const message = capacityMessage({
      nodes: [online("<!channel>&<https://evil|x>")],
      source: "https://pve.lan:8006",
      at,
    });
    expect(texts(message)).not.toContain("<!channel>");
    expect(texts(message)).toContain("&lt;!channel&gt;&amp;&lt;https://evil|x&gt;");
  });

  it("fits a 200-node cluster in Slack's 50 blocks and 3,000 characters per section", () => {
    const nodes = Array.from({ length: 200 }, (_, index) =>
      online(`pve-node-${String(index).padStart(3, "0")}`),
    );
    const message = capacityMessage({ nodes, source: "https://pve.lan:8006", at });
    expectWithinSlackLimits(message);
    const shown = (texts(message).match(/pve-node-\d{3}/g) ?? []).length;
    const note = /(\d+) more nodes not shown/.exec(texts(message));
    expect(shown + Number(note?.[1] ?? 0)).toBe(200);
    expect(shown).toBeGreaterThan(100);
  });

  it("shows all of a 48-node cluster, one section per node while they fit", () => {
    const nodes = Array.from({ length: 47 }, (_, index) => online(`n${index}`));
    const message = capacityMessage({ nodes, source: "https://pve.lan:8006", at });
    expectWithinSlackLimits(message);
    expect((texts(message).match(/\*n\d+\*/g) ?? []).length).toBe(47);
    expect(texts(message)).not.toContain("not shown");
  });

  it("says when Proxmox reports no nodes", () => {
    const message = capacityMessage({ nodes: [], source: "https://pve.lan:8006", at });
    expect(texts(message)).toContain("Proxmox reported no nodes.");
  });
});

describe("the form's live node options", () => {
  it("labels each node with its free cores and memory", () => {
    expect(nodeLabel(online("pve1"))).toBe("pve1 — 6.0 of 8 cores, 20.0 GiB free");
    expect(nodeLabel({ name: "pve9", status: "online" })).toBe("pve9");
  });

  it("offers online nodes only, the first of VM_NODES first when online, else the freest", () => {
    const nodes = [
      online("pve2", { memUsed: 30 * GIB }),
      online("pve1", { memUsed: 4 * GIB }),
      { name: "pve3", status: "offline" as const },
    ];
    expect(liveNodeOptions(nodes, ["pve2"]).map((option) => option.value)).toEqual([
      "pve2",
      "pve1",
    ]);
    expect(liveNodeOptions(nodes, ["pve3"]).map((option) => option.value)).toEqual([
      "pve1",
      "pve2",
    ]);
    expect(liveNodeOptions([{ name: "pve3", status: "offline" }], ["pve3"])).toEqual([]);
  });
});

describe("capacity in the channel, and a wrong argument", () => {
  const node = {
    name: "pve1",
    status: "online" as const,
    cores: 8,
    cpu: 0.25,
    memUsed: 2 * 1024 ** 3,
    memTotal: 8 * 1024 ** 3,
  };

  it("says who asked and shows no internal address when posted in the channel", () => {
    const posted = JSON.stringify(
      capacityMessage({
        nodes: [node],
        source: "https://pve.lan:8006",
        at: new Date("2026-12-02T10:00:00Z"),
        askedBy: "U0REQ",
      }).blocks,
    );
    expect(posted).toContain("Asked for by <@U0REQ> · 1 of 1 node online");
    expect(posted).toContain("live from Proxmox at <!date^");
    expect(posted).not.toContain("pve.lan");
  });

  it("says what was wrong with the argument and what it takes", () => {
    expect(capacityUsage("pve1").text).toBe(
      "`/vm capacity` does not take `pve1`: it always shows every node. Type `/vm capacity` to see it yourself, or `/vm capacity public` to post it in the channel.",
    );
  });
});
