import type { RequestRecord } from "../../src/store/store.js";
import {
  deriveCounts,
  type PlanResource,
  type PlanSummary,
} from "../../src/terraform/plan-text.js";
import type { VmSpec } from "../../src/vm/spec.js";

/** A valid request as the form produces it with the platform defaults. */
export const SAMPLE_SPEC: VmSpec = {
  name: "web-01",
  node: "pve",
  templateId: 9000,
  templateName: "ubuntu",
  cores: 2,
  memoryMb: 2048,
  diskGb: 20,
  ip: "192.168.1.50/24",
  gateway: "192.168.1.1",
  dns: "192.168.1.1",
  vmId: 0,
  vlanId: 0,
};

/** A stored request as the views receive it. */
export function sampleRequest(change: Partial<RequestRecord> = {}): RequestRecord {
  return {
    id: "vm-abc-1234",
    kind: "create",
    status: "queued",
    requester: "U0REQ",
    spec: SAMPLE_SPEC,
    notes: [],
    channel: "C0CHAN",
    messageTs: null,
    pipelineId: null,
    pipelineUrl: null,
    error: null,
    review: null,
    decision: null,
    approvals: null,
    address: null,
    stateName: "vm-web-01",
    failure: null,
    createdAt: "2026-12-02T10:00:00.000Z",
    updatedAt: "2026-12-02T10:00:00.000Z",
    stageAt: "2026-12-02T10:00:00.000Z",
    stageTimes: {},
    revision: 0,
    renderedRevision: 0,
    renderedHash: null,
    ...change,
  };
}

/** A plan summary as the parsers produce it for these resources, counts agreeing. */
export function planSummary(
  resources: PlanResource[],
  extra: Partial<PlanSummary> = {},
): PlanSummary {
  const derivedCounts = deriveCounts(resources);
  return {
    resources,
    counts: {
      add: derivedCounts.add,
      change: derivedCounts.change,
      destroy: derivedCounts.destroy,
    },
    derivedCounts,
    noChanges: resources.length === 0,
    errors: [],
    outputChanges: [],
    notes: [],
    ...extra,
  };
}
