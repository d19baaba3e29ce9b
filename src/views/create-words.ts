/**
 * The words around the create form: the hint under its node field, which says where the node list
 * came from, and the answer when Slack did not let the form open.
 */

export const NODE_HINTS = {
  late: "Proxmox has not answered yet: these are the configured nodes (VM_NODES). The list updates with free CPU and memory when it answers.",
  failed:
    "Proxmox could not be asked (see /vm capacity for why): these are the configured nodes (VM_NODES).",
  noneOnline: "Proxmox reports no online node: these are the configured nodes (VM_NODES).",
  live: "Free CPU and memory, live from Proxmox.",
} as const;

/** The list shown is an older answer, while Proxmox is asked again. */
export function staleNodesHint(at: Date): string {
  return `Free CPU and memory as of ${at.toISOString().slice(11, 16)} UTC; Proxmox is being asked again and the list updates when it answers.`;
}

export const FORM_NOT_OPENED =
  "Slack did not let vmbot open the form in time (the command's trigger expires after 3 seconds). Please run `/vm create` again.";

/** Under the name field: the form came back without what vmbot put in it. */
export const FORM_DAMAGED = "This form is damaged or too old. Close it and run /vm create again.";

/** Under the node field: the node chosen went offline after the form opened. */
export function nodeOfflineWords(node: string): string {
  return `${node} is not online in Proxmox now: choose another node.`;
}

/** Under the name field: Slack did not answer whether the requester may ask for VMs. */
export const REQUESTER_UNCONFIRMED_FIELD =
  "Slack did not confirm in time that you may ask for VMs. Nothing was created: please press Create again.";

/** Under the name field: the store could not take the new request. */
export const REQUEST_NOT_RECORDED_FIELD =
  "vmbot could not record your request just now (its store cannot take a write), so nothing was created. Please press Create again in a minute.";
