import type { Config } from "../config.js";
import type { GitlabPort } from "../gitlab/gitlab.js";
import type { Logger } from "../logger.js";
import type { NewVm } from "../store/inventory.js";
import type { RequestRecord } from "../store/store.js";
import { chosenLeaseEnd } from "../vm/lease.js";

/** A VM Terraform made for a create request: its address, and the inventory's record of it. */

/** How much of `vm_ip.txt` is read. */
const VM_IP_MAX_BYTES = 4_096;

/** The VM's address from the apply job's `vm_ip.txt` artifact, when there is one. */
export async function vmAddress(
  deps: { gitlab: GitlabPort; log: Logger },
  jobId: number,
): Promise<string | undefined> {
  try {
    // An address is a line: what is beyond the first few kilobytes of the file is not one.
    const read = await deps.gitlab.jobArtifact(jobId, "vm_ip.txt", VM_IP_MAX_BYTES);
    const address = read?.text.trim().split(/\s+/)[0];
    return address === undefined || address === "" ? undefined : address.slice(0, 64);
  } catch (error) {
    deps.log.warn({ err: error, jobId }, "could not read vm_ip.txt");
    return undefined;
  }
}

/**
 * The inventory's record of the VM `request`'s apply made at `now`: approved by who approved the
 * request here, if anyone; the lease chosen on the form (VM_LEASE_DEFAULT for older requests) from
 * then, never past the maximum, none when leases are off.
 */
export function madeVm(
  config: Pick<Config, "lease">,
  request: RequestRecord,
  address: string | undefined,
  now: Date,
): NewVm {
  return {
    name: request.spec.name,
    requestId: request.id,
    owner: request.requester,
    spec: request.spec,
    stateName: request.stateName,
    address: address ?? null,
    pipelineId: request.pipelineId,
    approvedBy: request.decision?.kind === "approved" ? request.decision.by : null,
    leaseUntil: chosenLeaseEnd(config.lease, request.spec.leaseMs, now),
  };
}
