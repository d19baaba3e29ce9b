import type { RequestRecord } from "../store/store.js";

/**
 * Under the form's name and IP fields, when a VM or a request on its way already uses them. A
 * field's error shows text as it is: no mentions, no markup.
 */

const STATUS_WORDS: Partial<Record<RequestRecord["status"], string>> = {
  queued: "queued",
  planning: "being planned",
  awaiting_approval: "awaiting approval",
  applying: "being applied",
  configuring: "being configured",
  ready: "ready",
};

/** "the VM web-01 (request vm-…, ready)" or "request vm-… for web-01 (awaiting approval)". */
function holder(request: RequestRecord): string {
  const state = STATUS_WORDS[request.status] ?? request.status;
  return request.status === "ready"
    ? `the VM ${request.spec.name} (request ${request.id})`
    : `request ${request.id} for ${request.spec.name} (${state})`;
}

export function nameTakenWords(request: RequestRecord): string {
  return `${request.spec.name} is already taken by ${holder(request)}: choose another name.`;
}

export function ipTakenWords(ip: string, request: RequestRecord, suggestion?: string): string {
  const address = ip.split("/")[0] ?? ip;
  const next =
    suggestion === undefined
      ? " Choose another address."
      : ` The next free address in its subnet is ${suggestion}.`;
  return `${address} is already used by ${holder(request)}.${next}`;
}
