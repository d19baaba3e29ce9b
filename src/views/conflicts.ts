import type { RequestStatus } from "../store/store.js";
import type { Holder } from "../vm/conflicts.js";

/**
 * Under the form's name and IP fields, when a VM or a request on its way already uses them. A
 * field's error shows text as it is: no mentions, no markup.
 */

const STATUS_WORDS: Partial<Record<RequestStatus, string>> = {
  queued: "queued",
  planning: "being planned",
  awaiting_approval: "awaiting approval",
  applying: "being applied",
  configuring: "being configured",
};

/** "the VM web-01 (request vm-…)" or "request vm-… for web-01 (awaiting approval)". */
function holderWords(holder: Holder): string {
  if (holder.state === "vm") return `the VM ${holder.name} (request ${holder.requestId})`;
  const state = STATUS_WORDS[holder.state] ?? holder.state;
  return `request ${holder.requestId} for ${holder.name} (${state})`;
}

export function nameTakenWords(holder: Holder): string {
  return `${holder.name} is already taken by ${holderWords(holder)}: choose another name.`;
}

export function ipTakenWords(ip: string, holder: Holder, suggestion?: string): string {
  const address = ip.split("/")[0] ?? ip;
  const next =
    suggestion === undefined
      ? " Choose another address."
      : ` The next free address in its subnet is ${suggestion}.`;
  return `${address} is already used by ${holderWords(holder)}.${next}`;
}

/** The name or address changed hands twice while the request was being written: nothing was. */
export const HELD_MEANWHILE_WORDS =
  "Other requests for this name or address were being made at the same moment, so nothing was created.";
