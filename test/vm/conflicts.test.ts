import { describe, expect, it } from "vitest";
import { findConflicts, nextFreeAddress, requestHolder, vmHolder } from "../../src/vm/conflicts.js";
import { ipTakenWords, nameTakenWords } from "../../src/views/conflicts.js";
import { sampleRequest, SAMPLE_SPEC } from "../support/requests.js";

describe("a name or an address already held", () => {
  const made = sampleRequest({ id: "vm-abc-11111111", status: "ready" });
  // The VM that request made, as the inventory holds it.
  const held = vmHolder({
    name: made.spec.name,
    requestId: made.id,
    owner: made.requester,
    spec: made.spec,
    stateName: null,
    address: "192.168.1.50",
    pipelineId: 1,
    approvedBy: null,
    createdAt: made.createdAt,
    leaseUntil: null,
    status: "live",
    statusNote: null,
    checkedAt: null,
  });

  it("finds the request holding the name and the one holding the address", () => {
    const other = requestHolder(
      sampleRequest({
        id: "vm-abc-22222222",
        status: "awaiting_approval",
        spec: { ...SAMPLE_SPEC, name: "db-01", ip: "192.168.1.51/24" },
      }),
    );
    const conflicts = findConflicts({ ...SAMPLE_SPEC, ip: "192.168.1.51/24" }, [held, other]);
    expect(conflicts.name?.requestId).toBe("vm-abc-11111111");
    expect(conflicts.ip?.requestId).toBe("vm-abc-22222222");
    // .50 and .51 are held, .1 is the gateway: the next free one is .52.
    expect(conflicts.suggestion).toBe("192.168.1.52/24");
    expect(
      findConflicts({ ...SAMPLE_SPEC, name: "web-02", ip: "192.168.1.70/24" }, [held]),
    ).toEqual({});
  });

  it("suggests the next free host, wrapping round, never the network, broadcast or gateway", () => {
    const spec = { ...SAMPLE_SPEC, ip: "10.0.0.254/24", gateway: "10.0.0.1" };
    expect(nextFreeAddress(spec, new Set(["10.0.0.254", "10.0.0.2"]))).toBe("10.0.0.3/24");
    // A /30 has two hosts: one is the gateway, the other held.
    const tiny = { ...SAMPLE_SPEC, ip: "10.0.0.2/30", gateway: "10.0.0.1" };
    expect(nextFreeAddress(tiny, new Set(["10.0.0.2"]))).toBeUndefined();
  });

  it("says who holds it under the field, in plain text", () => {
    expect(nameTakenWords(held)).toBe(
      "web-01 is already taken by the VM web-01 (request vm-abc-11111111): choose another name.",
    );
    const planning = requestHolder(sampleRequest({ id: "vm-abc-33333333", status: "planning" }));
    expect(ipTakenWords("192.168.1.50/24", planning, "192.168.1.51/24")).toBe(
      "192.168.1.50 is already used by request vm-abc-33333333 for web-01 (being planned). The next free address in its subnet is 192.168.1.51/24.",
    );
    expect(ipTakenWords("192.168.1.50/24", held)).toBe(
      "192.168.1.50 is already used by the VM web-01 (request vm-abc-11111111). Choose another address.",
    );
  });
});
