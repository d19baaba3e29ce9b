import type { types } from "@slack/bolt";
import { LEASE_ASK_LONGER, LEASE_DESTROY, LEASE_EXTEND } from "../ids.js";
import { escapeMrkdwn, truncate } from "../slack/mrkdwn.js";
import type { VmRecord } from "../store/inventory.js";
import type { RequestRecord } from "../store/store.js";
import { askLongerButton } from "./extend.js";

type KnownBlock = types.KnownBlock;

/** A time in the reader's own time zone, the ISO text as the fallback. */
const when = (iso: string) =>
  `<!date^${Math.floor(Date.parse(iso) / 1000)}^{date_short_pretty} {time}|${iso}>`;

/**
 * The owner's direct message before a lease ends: Extend, Destroy now (confirmed), and, where the
 * policy lets the owner ask for a lease past the maximum, Ask for … (`longer`).
 */
export function leaseReminder(
  vm: VmRecord,
  until: string,
  onExpiry: "request-destroy" | "destroy",
  longer?: { ms: number; maxMs: number },
): { text: string; blocks: KnownBlock[] } {
  const name = escapeMrkdwn(vm.name);
  const then =
    onExpiry === "destroy"
      ? "Then vmbot destroys it, without asking for approval."
      : "Then vmbot asks to destroy it.";
  const text = `The lease of your VM ${name} ends ${when(until)}. ${then}`;
  return {
    text,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `:alarm_clock: ${truncate(text, 2900)}` } },
      {
        type: "actions",
        elements: [
          {
            type: "button",
            action_id: LEASE_EXTEND,
            style: "primary",
            text: { type: "plain_text", text: "Extend" },
            value: vm.name,
          },
          ...(longer === undefined
            ? []
            : [askLongerButton(LEASE_ASK_LONGER, vm.name, longer.ms, longer.maxMs)]),
          {
            type: "button",
            action_id: LEASE_DESTROY,
            style: "danger",
            text: { type: "plain_text", text: "Destroy now" },
            value: vm.name,
            confirm: {
              title: { type: "plain_text", text: "Destroy this VM?" },
              text: {
                type: "plain_text",
                text: truncate(
                  `vmbot asks to destroy ${vm.name}: an approver reviews it, then Terraform removes the VM and its disks.`,
                  300,
                ),
              },
              confirm: { type: "plain_text", text: "Ask to destroy" },
              deny: { type: "plain_text", text: "Keep it" },
              style: "danger",
            },
          },
        ],
      },
    ],
  };
}

export function leaseExtendedWords(vm: string, until: string): string {
  return `:white_check_mark: The lease of ${escapeMrkdwn(vm)} now ends ${when(until)}.`;
}

export function leaseAtMaximumWords(vm: string, until: string): string {
  return `The lease of ${escapeMrkdwn(vm)} already ends ${when(until)}, as late as vmbot's maximum allows from now.`;
}

/** The note on a destroy request that a lease's end opened on the owner's behalf. */
export function leaseExpiredNote(until: string, onExpiry: "request-destroy" | "destroy"): string {
  return onExpiry === "destroy"
    ? `Opened and played by vmbot without approval: the VM's lease ended at ${until}, and vmbot's settings destroy a VM when its lease ends.`
    : `Opened by vmbot for the owner: the VM's lease ended at ${until}.`;
}

/** Why vmbot played a destroy without an approver, as the decision records it. */
export const LEASE_EXPIRED_REASON = "lease expired";

/** Extend on a reminder of a VM vmbot no longer lists. */
export const LEASE_VM_GONE = "vmbot no longer lists this VM: there is no lease to extend.";

/** Extend on a reminder of a VM marked gone: its state left GitLab, nothing is leased. */
export function leaseVmMarkedGoneWords(vm: string): string {
  return `${escapeMrkdwn(vm)} is marked gone (its Terraform state is no longer in GitLab): there is no lease to extend.`;
}

/** Extend while a destroy of the VM is in progress: the lease would not stop it. */
export function leaseDestroyUnderWayWords(vm: string, request: RequestRecord): string {
  return `:hourglass_flowing_sand: A destroy of ${escapeMrkdwn(vm)} is in progress (\`${request.id}\`, ${request.status.replace("_", " ")}), so its lease was not extended. To keep the VM, withdraw that request from its message in <#${escapeMrkdwn(request.channel)}> before it is applied.`;
}

/** Extend by someone other than the VM's owner. */
export function notLeaseOwnerWords(vm: string, owner: string): string {
  return `Only the owner of ${vm} (<@${owner}>) may extend its lease.`;
}

/** Destroy now from a direct message, with no channel known to ask in. */
export const NO_CHANNEL_TO_ASK =
  "vmbot knows no channel to ask in: run `/vm destroy` in a channel.";

/** Destroy now, when the store could not take the destroy request. */
export const DESTROY_NOT_RECORDED =
  "vmbot could not record your request, so nothing was started. Please try again.";
