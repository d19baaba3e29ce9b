import { describe, expect, it } from "vitest";
import { validateHomeView } from "../../sandbox/simulators/slack/index.js";
import type { VmRecord } from "../../src/store/inventory.js";
import {
  HOME_MAX_APPROVALS,
  HOME_MAX_REQUESTS,
  HOME_MAX_VMS,
  homeDestroyModal,
  homeNotice,
  homeView,
} from "../../src/views/home.js";
import { expectWithinSlackLimits } from "../support/block-kit.js";
import { sampleRequest, SAMPLE_SPEC } from "../support/requests.js";

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
    leaseUntil: "2026-12-31T00:00:00Z",
    status: "live",
    statusNote: null,
    checkedAt: null,
    ...change,
  };
}

const named = (i: number) => `vm-${String(i).padStart(3, "0")}`;
const texts = (view: { blocks: readonly unknown[] }) => JSON.stringify(view.blocks);

describe("the Home tab", () => {
  it("shows each VM with its lease, Extend lease and Destroy, and a Create VM button", () => {
    const view = homeView({
      vms: [vm(), vm({ name: "db-01", leaseUntil: null })],
      requests: [],
      approvals: undefined,
      now: NOW,
    });
    expectWithinSlackLimits(view, "view");
    expect(validateHomeView(view)).toEqual([]);
    expect(view.type).toBe("home");
    const shown = texts(view);
    expect(shown).toContain("Your VMs (2)");
    expect(shown).toContain(
      "*web-01* · 192.168.1.50 · pve · 2 cores, 2 GiB, 20 GiB disk · 2 d 2 h old",
    );
    expect(shown).toContain("Lease ends <!date^1798675200^");
    expect(shown).toContain("No lease: it stays until destroyed.");
    const buttons = view.blocks.flatMap((block) =>
      block.type === "actions"
        ? block.elements.map((e) => [e.action_id, "value" in e ? e.value : ""])
        : [],
    );
    // A VM without a lease has nothing to extend.
    expect(buttons).toEqual([
      ["home_vm_extend", "web-01"],
      ["home_vm_destroy", "web-01"],
      ["home_vm_destroy", "db-01"],
    ]);
    expect(shown).toContain('"action_id":"home_create"');
    // Not an approver: no queue at all.
    expect(shown).not.toContain("Waiting for your approval");
  });

  it("says what is empty: no VM, no request in flight, nothing waiting for approval", () => {
    const view = homeView({ vms: [], requests: [], approvals: [], now: NOW });
    expectWithinSlackLimits(view, "view");
    const shown = texts(view);
    expect(shown).toContain("You have no VM made by vmbot. *Create VM* asks for one.");
    expect(shown).toContain("None: every request you made has ended.");
    expect(shown).toContain("Nothing waits for your approval.");
    expect(view.blocks.some((block) => block.type === "actions")).toBe(false);
  });

  it("shows requests in flight and waiting approvals with their status and a link to their message", () => {
    const planning = sampleRequest({ id: "vm-1", status: "planning" });
    const destroying = sampleRequest({
      id: "vm-2",
      kind: "destroy",
      status: "awaiting_approval",
      requester: "U0OTHER",
      spec: { ...SAMPLE_SPEC, name: "db-02" },
    });
    const view = homeView({
      vms: [],
      requests: [planning],
      approvals: [{ request: destroying, link: "https://acme.slack.com/archives/C0CHAN/p1" }],
      links: new Map([["vm-1", "https://acme.slack.com/archives/C0CHAN/p2"]]),
      now: NOW,
    });
    const shown = texts(view);
    expect(shown).toContain("Create *web-01*: Planning since <!date^");
    expect(shown).toContain("<https://acme.slack.com/archives/C0CHAN/p2|Open the request>");
    expect(shown).toContain("Destroy *db-02* for <@U0OTHER>, waiting since");
    expect(shown).toContain("<https://acme.slack.com/archives/C0CHAN/p1|Open the request>");
    expect(shown).toContain("Approve or reject on the request's message in the channel.");
  });

  it("stays within a view's 100 blocks with hundreds of VMs, requests and approvals, and counts the rest", () => {
    const vms = Array.from({ length: 400 }, (_, i) => vm({ name: named(i) }));
    const requests = Array.from({ length: 300 }, (_, i) =>
      sampleRequest({ id: `vm-r${i}`, status: "planning" }),
    );
    const approvals = Array.from({ length: 250 }, (_, i) => ({
      request: sampleRequest({ id: `vm-a${i}`, status: "awaiting_approval" }),
      link: undefined,
    }));
    const view = homeView({ vms, requests, approvals, now: NOW });
    expect(view.blocks.length).toBeLessThanOrEqual(100);
    expectWithinSlackLimits(view, "view");
    expect(validateHomeView(view)).toEqual([]);
    const shown = texts(view);
    expect(shown).toContain("Your VMs (400)");
    expect(shown).toContain(
      `…and ${400 - HOME_MAX_VMS} more VMs, not shown here: \`/vm list\` shows them all.`,
    );
    expect(shown).toContain(`…and ${300 - HOME_MAX_REQUESTS} more requests`);
    expect(shown).toContain(`…and ${250 - HOME_MAX_APPROVALS} more requests`);
    expect(shown).toContain(named(HOME_MAX_VMS - 1));
    expect(shown).not.toContain(named(HOME_MAX_VMS));
    // Every block ID is unique, as Slack requires.
    const ids = view.blocks.flatMap((block) =>
      block.block_id === undefined ? [] : [block.block_id],
    );
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("asks to confirm a destroy with the same facts as /vm destroy, in a modal without its buttons", () => {
    const modal = homeDestroyModal(vm(), NOW);
    expect(modal.callback_id).toBe("home_destroy_modal");
    expect(modal.private_metadata).toBe("web-01");
    expect(modal.submit.text).toBe("Ask to destroy");
    const shown = JSON.stringify(modal.blocks);
    for (const fact of [
      "*Name*\\nweb-01",
      "*Node*\\npve",
      "*Address*\\n192.168.1.50",
      "<@U0REQ>",
    ]) {
      expect(shown).toContain(fact);
    }
    expect(modal.blocks.map((block) => block.type)).toEqual(["section", "section"]);
    expect(homeNotice("Done.").blocks).toEqual([
      { type: "section", text: { type: "mrkdwn", text: "Done." } },
    ]);
  });
});
