import type { types } from "@slack/bolt";
import type { Job } from "../gitlab/gitlab.js";
import { DESTROY_APPROVE, DESTROY_CANCEL, DESTROY_CONFIRM, DESTROY_CONFIRM_BLOCK } from "../ids.js";
import { PLAN_ACTIONS_BLOCK, PLAN_REJECT } from "../ids.js";
import { escapeMrkdwn, link, truncate } from "../slack/mrkdwn.js";
import type { VmRecord } from "../store/inventory.js";
import type { RequestRecord, RequestStatus } from "../store/store.js";
import { whoMay } from "./refusals.js";
import {
  durationsBlocks,
  reasonWords,
  requestedBy,
  withdrawButton,
  withdrawable,
} from "./request-message.js";
import { age } from "./unlock.js";
import { approvalsSoFarWords } from "./policy-words.js";

type KnownBlock = types.KnownBlock;

/** Every sentence of `/vm destroy` and of a destroy request's message. */

export interface DestroyReply {
  text: string;
  blocks: KnownBlock[];
}

const section = (text: string): KnownBlock => ({
  type: "section",
  text: { type: "mrkdwn", text: truncate(text, 3000) },
});

const reply = (text: string): DestroyReply => ({ text, blocks: [section(text)] });

/**
 * A VM's name in bold. A real one is at most 63 characters; any longer is cut here, so that a
 * message's own links after it are never what a section's limit cuts.
 */
const name = (vm: string) => `*${escapeMrkdwn(truncate(vm, 100))}*`;

/** Where a VM lives: its recorded address, else the address it was asked with. */
export const vmAddressOf = (vm: VmRecord) => vm.address ?? vm.spec.ip.split("/")[0] ?? vm.spec.ip;

const vmIdWords = (id: number) => (id === 0 ? "chosen by Proxmox" : String(id));

export const DESTROY_USAGE =
  "Usage: `/vm destroy &lt;name&gt;` asks to destroy a VM vmbot made (yours, or any for admins); `/vm list` shows them.";

export function destroyUsageReply(): DestroyReply {
  return reply(`:warning: ${DESTROY_USAGE}`);
}

/** To someone who is neither the VM's owner nor an admin. */
export function destroyRefusedReply(vm: VmRecord, admins: readonly string[]): DestroyReply {
  return reply(
    `:warning: Only the owner of ${name(vm.name)} (<@${vm.owner}>) or vmbot's admins (${whoMay(admins)}) may destroy it. Ask one of them.`,
  );
}

/** A name vmbot made no VM of (or none left), with the closest names it knows. */
export function unknownVmReply(asked: string, closest: readonly string[]): DestroyReply {
  const hint =
    closest.length === 0
      ? " `/vm list` shows your VMs."
      : ` Did you mean ${closest.map((known) => `\`${escapeMrkdwn(known)}\``).join(", ")}?`;
  return reply(
    `:warning: vmbot knows no VM named \`${escapeMrkdwn(truncate(asked, 80))}\`.${hint}`,
  );
}

/** The VM is already being changed (created, configured or destroyed): wait for it to end. */
export function inFlightReply(vm: string, request: RequestRecord): DestroyReply {
  const what = request.kind === "destroy" ? "A destroy" : "A request";
  const where =
    request.messageTs === null ? "" : ` (see its message in <#${escapeMrkdwn(request.channel)}>)`;
  return reply(
    `:hourglass_flowing_sand: ${what} for ${name(vm)} is in progress (\`${request.id}\`, ${request.status.replace("_", " ")})${where}. It cannot be destroyed until that ends.`,
  );
}

/** A gone VM is listed, not destroyed: its state vanished outside vmbot. */
export function goneVmReply(vm: VmRecord): DestroyReply {
  return reply(
    `:warning: ${name(vm.name)} is marked gone: ${escapeMrkdwn(vm.statusNote ?? "its Terraform state is no longer in GitLab")}. There is nothing for Terraform to destroy.`,
  );
}

/** What will be destroyed, and Destroy / Cancel: nothing happens before the click. */
export function destroyConfirmation(vm: VmRecord, now: Date): DestroyReply {
  const field = (label: string, value: string) => ({
    type: "mrkdwn" as const,
    text: truncate(`*${label}*\n${value}`, 2000),
  });
  return {
    text: `Destroy ${escapeMrkdwn(vm.name)}?`,
    blocks: [
      section(
        `:rotating_light: *Destroy ${escapeMrkdwn(vm.name)}?* Terraform removes the VM and its disks from Proxmox; this cannot be undone. An approver reviews the request first.`,
      ),
      {
        type: "section",
        fields: [
          field("Name", escapeMrkdwn(vm.name)),
          field("Node", escapeMrkdwn(vm.spec.node)),
          field("Address", escapeMrkdwn(vmAddressOf(vm))),
          field("VM ID", vmIdWords(vm.spec.vmId)),
          field("Owner", `<@${vm.owner}>`),
          field("Age", `${age(vm.createdAt, now)} old`),
        ],
      },
      {
        type: "actions",
        block_id: DESTROY_CONFIRM_BLOCK,
        elements: [
          {
            type: "button",
            action_id: DESTROY_CONFIRM,
            style: "danger",
            text: { type: "plain_text", text: truncate(`Ask to destroy ${vm.name}`, 75) },
            value: vm.name,
          },
          {
            type: "button",
            action_id: DESTROY_CANCEL,
            text: { type: "plain_text", text: "Cancel" },
            value: vm.name,
          },
        ],
      },
    ],
  };
}

export function destroyCanceledReply(vm: string): DestroyReply {
  return reply(`Nothing was asked: ${name(vm)} stays as it is.`);
}

/** The confirmation, once the request is posted. */
export function destroyAskedReply(vm: string, channel: string): DestroyReply {
  return reply(
    `:white_check_mark: Asked to destroy ${name(vm)}: the request is in <#${escapeMrkdwn(channel)}>, awaiting an approver.`,
  );
}

const STATUS: Record<RequestStatus, { emoji: string; label: string }> = {
  queued: { emoji: ":hourglass_flowing_sand:", label: "Queued" },
  planning: { emoji: ":hourglass_flowing_sand:", label: "Queued" },
  awaiting_approval: { emoji: ":eyes:", label: "Awaiting approval" },
  applying: { emoji: ":fire:", label: "Destroying" },
  configuring: { emoji: ":fire:", label: "Destroying" },
  ready: { emoji: ":wastebasket:", label: "Destroyed" },
  failed: { emoji: ":x:", label: "Failed" },
  rejected: { emoji: ":no_entry_sign:", label: "Rejected" },
  expired: { emoji: ":alarm_clock:", label: "Expired" },
  canceled: { emoji: ":heavy_multiplication_x:", label: "Canceled" },
  withdrawn: { emoji: ":leftwards_arrow_with_hook:", label: "Withdrawn" },
};

function statusLine(request: RequestRecord): string {
  const pipeline =
    request.pipelineId === null || request.pipelineUrl === null
      ? undefined
      : link(request.pipelineUrl, `pipeline #${request.pipelineId}`);
  const see = pipeline === undefined ? "" : `\nSee ${pipeline}.`;
  const vm = name(request.spec.name);
  switch (request.status) {
    case "queued":
    case "planning":
      return pipeline === undefined
        ? "Starting the GitLab pipeline…"
        : `Queued… GitLab ${pipeline} started: waiting for its destroy job.`;
    case "awaiting_approval":
      return `Awaiting approval: approving plays the destroy job, which removes ${vm} for good.${see}`;
    case "applying":
    case "configuring":
      return request.error !== null
        ? `${truncate(request.error, 2500)}${see}`
        : `Destroying… Terraform is destroying ${vm}${pipeline === undefined ? "" : ` (${pipeline})`}.`;
    case "ready":
      return `Destroyed: ${vm} is gone and no longer listed.${see}`;
    case "failed":
    case "canceled":
    case "expired":
      return `${truncate(request.error ?? `The destroy ${request.status === "failed" ? "failed" : `was ${request.status}`}.`, 2500)}${see}`;
    case "rejected":
      return `Rejected${request.decision === null ? "" : ` by <@${request.decision.by}>`}: ${vm} stays${pipeline === undefined ? "" : ` and GitLab ${pipeline} was canceled`}.${reasonWords(request)}`;
    case "withdrawn":
      return `Withdrawn by <@${request.decision?.by ?? request.requester}>: ${vm} stays${pipeline === undefined ? "" : ` and GitLab ${pipeline} was canceled`}.`;
  }
}

/** The confirmation Slack shows before Approve plays the destroy job (max 300 chars). */
function approveConfirmation(vm: string) {
  return {
    title: { type: "plain_text" as const, text: "Destroy this VM?" },
    text: {
      type: "plain_text" as const,
      text: truncate(
        `Approving plays the destroy job: Terraform removes VM ${vm} and its disks. This cannot be undone.`,
        300,
      ),
    },
    confirm: { type: "plain_text" as const, text: truncate(`Destroy ${vm}`, 30) },
    deny: { type: "plain_text" as const, text: "Go back" },
    style: "danger" as const,
  };
}

/** The message's top: its title, who asked and when, and what goes (node, address, VM ID, state). */
function destroyHead(request: RequestRecord): KnownBlock[] {
  const { spec } = request;
  const status = STATUS[request.status];
  const field = (label: string, value: string) => ({
    type: "mrkdwn" as const,
    text: truncate(`*${label}*\n${value}`, 2000),
  });
  return [
    {
      type: "header",
      text: { type: "plain_text", text: truncate(`Destroy ${spec.name} — ${status.label}`, 150) },
    },
    requestedBy(request),
    {
      type: "section",
      fields: [
        field("Node", escapeMrkdwn(spec.node)),
        field("Address", escapeMrkdwn(request.address ?? spec.ip)),
        field("VM ID", vmIdWords(spec.vmId)),
        field(
          "State",
          request.stateName === null ? "the shared one" : escapeMrkdwn(request.stateName),
        ),
      ],
    },
  ];
}

/** Approve, Reject and Withdraw while the request waits; Withdraw alone while it still can be. */
function destroyButtons(request: RequestRecord): KnownBlock[] {
  if (request.status === "awaiting_approval") {
    return [
      {
        type: "actions",
        block_id: PLAN_ACTIONS_BLOCK,
        elements: [
          {
            type: "button",
            action_id: DESTROY_APPROVE,
            text: { type: "plain_text", text: "Approve (destroys)" },
            style: "danger",
            value: request.id,
            confirm: approveConfirmation(request.spec.name),
          },
          {
            type: "button",
            action_id: PLAN_REJECT,
            text: { type: "plain_text", text: "Reject" },
            value: request.id,
          },
          withdrawButton(request),
        ],
      },
    ];
  }
  return withdrawable(request) ? [{ type: "actions", elements: [withdrawButton(request)] }] : [];
}

/** A destroy request's one message: what goes, who asked, where it stands, and its buttons. */
export function destroyMessage(request: RequestRecord): DestroyReply {
  const status = STATUS[request.status];
  const blocks: KnownBlock[] = [
    ...destroyHead(request),
    section(`${status.emoji} ${statusLine(request)}`),
  ];
  if (request.decision !== null && request.decision.kind === "approved") {
    const at = Math.floor(Date.parse(request.decision.at) / 1000);
    blocks.push({
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text:
            request.decision.by === "vmbot"
              ? `:robot_face: No approval asked: vmbot destroys this VM because its lease ended (<!date^${at}^{date_short_pretty} {time}|${request.decision.at}>).`
              : `:white_check_mark: Approved by <@${request.decision.by}> at <!date^${at}^{date_short_pretty} {time}|${request.decision.at}>`,
        },
      ],
    });
  }
  if (request.notes.length > 0) {
    blocks.push({
      type: "context",
      elements: [
        { type: "mrkdwn", text: truncate(request.notes.map(escapeMrkdwn).join(" "), 2000) },
      ],
    });
  }
  // A destroy that one approval decides has no tally to show.
  const shown = request.approvals;
  if (request.status === "awaiting_approval" && shown !== null && shown.tally !== "") {
    blocks.push({
      type: "context",
      elements: [{ type: "mrkdwn", text: truncate(approvalsSoFarWords(shown), 2000) }],
    });
  }
  blocks.push(...durationsBlocks(request), ...destroyButtons(request));
  return { text: `Destroy ${escapeMrkdwn(request.spec.name)} — ${status.label}`, blocks };
}

/** In the thread when a destroy request ends: the requester is told, by mention. */
export function destroyToldWords(request: RequestRecord): string | undefined {
  const to = `<@${request.requester}>`;
  const vm = name(request.spec.name);
  switch (request.status) {
    case "ready":
      return `:wastebasket: ${to} ${vm} is destroyed.`;
    case "failed":
      return `:x: ${to} the destroy of ${vm} failed; the VM stays listed. The request message above says why.`;
    case "expired":
      return `:alarm_clock: ${to} the destroy of ${vm} expired before anyone approved it; the VM stays.`;
    case "rejected":
      return `:no_entry_sign: ${to} the destroy of ${vm} was rejected${request.decision === null ? "" : ` by <@${request.decision.by}>`}; the VM stays.${reasonWords(request)}`;
    default:
      return undefined;
  }
}

/** In the thread when a destroy request waits: the approvers are called in. */
export function destroyApproversWords(request: RequestRecord, mentions: readonly string[]): string {
  return `:eyes: ${mentions.join(" ")} <@${request.requester}> asks to destroy ${name(request.spec.name)}: it awaits your approval.`;
}

/** The thread reply once the destroy job has succeeded. */
export function destroyedWords(request: RequestRecord, job: Job): string {
  return `:wastebasket: Terraform destroyed ${name(request.spec.name)} (${link(job.webUrl, `job #${job.id}`)}). It is no longer listed.`;
}

/** The failed destroy, on the request and under the VM in `/vm list`. */
export function destroyFailedWords(job: Job): string {
  return `The destroy job (${link(job.webUrl, `job #${job.id}`)}) ${escapeMrkdwn(job.status)}: the VM stays, and stays listed. Look at the job's log, then run /vm destroy again.`;
}

/** Under the VM in `/vm list` (plain text: the list escapes it), after a failed destroy. */
export function destroyFailedNote(job: Job): string {
  return `The last destroy failed (job #${job.id} ${job.status}: ${job.webUrl}).`;
}

/** A destroy request that waited longer than PLAN_TTL (`ttl`, in words) for approval. */
export function destroyExpiredWords(vm: string, ttl: string): string {
  return `This destroy request waited longer than ${ttl} for approval and expired: ${name(vm)} stays, and vmbot will not play its destroy job. Run /vm destroy ${escapeMrkdwn(truncate(vm, 100))} again to ask anew.`;
}

/** The destroy job is missing from the pipeline vmbot started. */
export function noDestroyJobWords(job: string): string {
  return `The pipeline has no job named \`${escapeMrkdwn(job)}\`, so there is nothing to approve. Check the destroy job's name in vmbot's settings, and that its rules accept pipelines created through the API with \`action: destroy\`.`;
}
