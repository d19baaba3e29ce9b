import { describe, expect, it } from "vitest";
import { deriveCounts, type PlanResource } from "../../src/terraform/plan-text.js";
import { keptForMessage } from "../../src/views/plan-kept.js";

function plan(resources: PlanResource[], more: { outputs?: number; notes?: number } = {}) {
  return {
    resources,
    counts: undefined,
    derivedCounts: deriveCounts(resources),
    noChanges: false,
    errors: [],
    outputChanges: Array.from({ length: more.outputs ?? 0 }, (_, i) => ({
      name: `out_${String(i)}`,
      action: "create" as const,
    })),
    notes: Array.from({ length: more.notes ?? 0 }, (_, i) => `note ${String(i)}`),
  };
}

const vm = (i: number, action: PlanResource["action"]): PlanResource => ({
  address: `proxmox_virtual_environment_vm.vm[${String(i)}]`,
  action,
});

describe("the plan a request keeps for its message", () => {
  it("keeps a small plan as it is", () => {
    const small = plan([vm(0, "create"), vm(1, "delete"), vm(2, "read")]);
    expect(keptForMessage(small)).toBe(small);
  });

  it("keeps the destroyed resources found after many unchanged ones, and counts only changes as left out", () => {
    const resources = [
      ...Array.from({ length: 500 }, (_, i) => vm(i, "no-op")),
      vm(500, "replace"),
      ...Array.from({ length: 100 }, (_, i) => vm(501 + i, "no-op")),
    ];
    const kept = keptForMessage(plan(resources, { outputs: 30, notes: 12 }));
    expect(kept.resources).toEqual([vm(500, "replace")]);
    expect(kept.derivedCounts).toEqual(deriveCounts(resources));
    expect(kept.outputChanges).toHaveLength(20);
    expect(kept.notes).toHaveLength(10);
    expect(kept.omitted).toEqual({ changing: 0, destroying: 0, outputChanges: 10, notes: 2 });
  });

  it("cuts a resource address of a megabyte to a length the store holds", () => {
    const long = { address: `module.${"a".repeat(1_000_000)}`, action: "delete" as const };
    const kept = keptForMessage(plan([long]));
    expect(kept.resources[0]!.address.length).toBeLessThanOrEqual(1_000);
    expect(kept.resources[0]!.action).toBe("delete");
  });
});
