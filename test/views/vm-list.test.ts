import { describe, expect, it } from "vitest";
import type { VmRecord } from "../../src/store/inventory.js";
import { vmList } from "../../src/views/vm-list.js";
import { expectWithinSlackLimits } from "../support/block-kit.js";
import { SAMPLE_SPEC } from "../support/requests.js";

const NOW = new Date("2026-12-03T12:00:00Z");

function vm(change: Partial<VmRecord> = {}): VmRecord {
  return {
    name: "web-01",
    requestId: "vm-abc-1234",
    owner: "U0REQ",
    spec: SAMPLE_SPEC,
    stateName: "vm-web-01",
    address: "192.168.1.50",
    pipelineId: 1001,
    approvedBy: "U0APPROVER",
    createdAt: "2026-12-01T09:30:00Z",
    leaseUntil: null,
    status: "live",
    statusNote: null,
    checkedAt: null,
    ...change,
  };
}

describe("the VM list", () => {
  it("shows each VM on a line: address, node, size in GiB, owner with all, age and lease", () => {
    const reply = vmList(
      [
        vm({ name: "db-01", spec: { ...SAMPLE_SPEC, name: "db-01", cores: 1, memoryMb: 1536 } }),
        vm({ leaseUntil: "2026-12-31T00:00:00Z", address: null }),
      ],
      { all: true, now: NOW },
    );
    expectWithinSlackLimits(reply);
    expect(reply.text).toBe("vmbot's VMs: 2.");
    const text = JSON.stringify(reply.blocks);
    expect(text).toContain(
      "• *db-01* · 192.168.1.50 · pve · 1 core, 1.5 GiB, 20 GiB disk · <@U0REQ> · 2 d 2 h old · no lease",
    );
    // No address from Terraform: the one asked for.
    expect(text).toContain(
      "• *web-01* · 192.168.1.50 · pve · 2 cores, 2 GiB, 20 GiB disk · <@U0REQ> · 2 d 2 h old · lease until <!date^1798675200^{date_short_pretty}|2026-12-31T00:00:00Z>",
    );
  });

  it("leaves the owner out of the asker's own list, and says why a VM is not live", () => {
    const reply = vmList(
      [vm({ status: "gone", statusNote: "Its Terraform state vm-web-01 is gone from GitLab." })],
      { all: false, now: NOW },
    );
    const text = JSON.stringify(reply.blocks);
    expect(text).not.toContain("<@U0REQ>");
    expect(text).toContain(":warning: Its Terraform state vm-web-01 is gone from GitLab.");
  });

  it("shows in its status column a destroy in flight, else live or gone", () => {
    const names = ["web-01", "web-02", "web-03", "web-04", "web-05"];
    const reply = vmList(
      names.map((name) =>
        vm({
          name,
          spec: { ...SAMPLE_SPEC, name },
          ...(name === "web-05" ? { status: "gone" } : {}),
        }),
      ),
      {
        all: false,
        now: NOW,
        inFlight: new Map([
          ["web-01", { kind: "destroy", status: "awaiting_approval" }],
          ["web-02", { kind: "destroy", status: "applying" }],
          ["web-03", { kind: "destroy", status: "queued" }],
        ]),
      },
    );
    const lines = reply.blocks.flatMap((block) =>
      block.type === "section" && block.text !== undefined ? block.text.text.split("\n") : [],
    );
    const statusOf = (name: string) =>
      lines
        .find((line) => line.startsWith(`• *${name}*`))
        ?.split(" · ")
        .at(-1);
    expect(statusOf("web-01")).toBe("*destroy awaiting approval*");
    expect(statusOf("web-02")).toBe("*destroying*");
    expect(statusOf("web-03")).toBe("*destroy starting*");
    expect(statusOf("web-04")).toBe("live");
    expect(statusOf("web-05")).toBe("*gone*");
  });
});
