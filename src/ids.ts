/** Every Slack identifier the bot owns: commands, callback IDs, block IDs and action IDs. */

export const VM_COMMAND = "/vm";

export const CREATE_MODAL = "vm_create_modal";

/** The create form's inputs: each is both the input block's block_id and its element's action_id. */
export const CREATE_FIELDS = {
  name: "vm_name",
  node: "vm_node",
  template: "vm_template",
  cores: "vm_cores",
  memory: "vm_memory",
  disk: "vm_disk",
  ip: "vm_ip",
  gateway: "vm_gateway",
  dns: "vm_dns",
  vmId: "vm_id",
  vlan: "vm_vlan",
} as const;

export type CreateField = keyof typeof CREATE_FIELDS;

/**
 * The create form's lease length (block_id and action_id), shown only when leases are on: not
 * one of the platform's inputs, so not among CREATE_FIELDS.
 */
export const CREATE_LEASE_FIELD = "vm_lease";

/** Message metadata event type for request messages (Slack `metadata.event_type`). */
export const REQUEST_EVENT_TYPE = "vmbot_request";

/** Message metadata event type for a request's thread replies, with the request ID and step. */
export const STEP_EVENT_TYPE = "vmbot_request_step";

/** The plan message's buttons; each carries the request ID (Approve: see `approveValue`). */
export const PLAN_ACTIONS_BLOCK = "plan_actions";
export const PLAN_APPROVE = "plan_approve";
export const PLAN_REJECT = "plan_reject";

/**
 * Approve's value: the request, and the plan job its message showed, so that a click on a message
 * left behind by a newer plan approves nothing it did not show. Messages posted before carry the
 * request alone.
 */
export const approveValue = (requestId: string, planJobId: number) => `${requestId}:${planJobId}`;
export const APPROVE_VALUE = /^(vm-[a-z0-9]+-[0-9a-f]{8})(?::([1-9][0-9]{0,15}))?$/;

/** The requester's Withdraw button, on the request message until the apply starts. */
export const REQUEST_ACTIONS_BLOCK = "request_actions";
export const REQUEST_WITHDRAW = "request_withdraw";

/** `/vm unlock`'s prompt: Force-unlock (behind a confirmation) and Cancel. */
export const UNLOCK_ACTIONS_BLOCK = "unlock_actions";
export const UNLOCK_CONFIRM = "unlock_confirm";
export const UNLOCK_CANCEL = "unlock_cancel";

/** A failed request's next step: run its configure job again, or plan it again as a new request. */
export const REQUEST_RETRY_CONFIGURE = "request_retry_configure";
export const REQUEST_PLAN_AGAIN = "request_plan_again";

/** Reject's form: an optional reason, asked before the plan is rejected. */
export const PLAN_REJECT_MODAL = "plan_reject_modal";
export const REJECT_REASON = "reject_reason";

/** `/vm destroy`'s confirmation (Destroy, Cancel; the VM's name as value). */
export const DESTROY_CONFIRM_BLOCK = "destroy_confirm_actions";
export const DESTROY_CONFIRM = "destroy_confirm";
export const DESTROY_CANCEL = "destroy_cancel";
/** A destroy request's Approve button (Reject is the plan's own, `plan_reject`). */
export const DESTROY_APPROVE = "destroy_approve";

/** A lease reminder's buttons (direct message to the owner; the VM's name as value). */
export const LEASE_EXTEND = "lease_extend";
export const LEASE_DESTROY = "lease_destroy";
/**
 * Ask for a lease past VM_LEASE_MAX, where the policy has an `extend` rule for the VM (in the
 * reminder and on the Home; the VM's name as value), and the extension request's Approve.
 */
export const LEASE_ASK_LONGER = "lease_ask_longer";
export const HOME_VM_ASK_LONGER = "home_vm_ask_longer";
export const EXTEND_APPROVE = "extend_approve";

/** Message metadata event type for a lease reminder, with the VM, the lease's end and the warning. */
export const LEASE_EVENT_TYPE = "vmbot_lease_reminder";

/** The Home tab's buttons: Create VM, and each VM's Extend lease and Destroy (its name as value). */
export const HOME_CREATE = "home_create";
export const HOME_VM_EXTEND = "home_vm_extend";
export const HOME_VM_DESTROY = "home_vm_destroy";
/** The Home's Destroy confirmation, as a modal (the VM's name in private_metadata). */
export const HOME_DESTROY_MODAL = "home_destroy_modal";
