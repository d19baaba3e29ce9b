import type { types } from "@slack/bolt";
import {
  HOME_CREATE,
  HOME_DESTROY_MODAL,
  HOME_VM_ASK_LONGER,
  HOME_VM_DESTROY,
  HOME_VM_EXTEND,
} from "../ids.js";
import { escapeMrkdwn, link, truncate } from "../slack/mrkdwn.js";
import type { VmRecord } from "../store/inventory.js";
import type { RequestRecord, RequestStatus } from "../store/store.js";
import { destroyConfirmation, type DestroyReply } from "./destroy.js";
import { askLongerButton } from "./extend.js";
import { age } from "./unlock.js";

type KnownBlock = types.KnownBlock;

/**
 * The Home tab: the person's VMs with their leases (Extend, Destroy), their requests in flight,
 * what waits for their approval when they approve, and a Create VM button. Within a view's 100
 * blocks whatever the counts: each list is cut with a count of what is not shown.
 */

/** A request waiting for the reader's approval, with a link to its message when it has one. */
export interface PendingApproval {
  request: RequestRecord;
  link: string | undefined;
}

export interface HomeInput {
  vms: readonly VmRecord[];
  /** The reader's own requests that have not ended, newest first. */
  requests: readonly RequestRecord[];
  /** Undefined when the reader is not an approver. */
  approvals: readonly PendingApproval[] | undefined;
  /** Links to request messages, by request ID, where known. */
  links?: ReadonlyMap<string, string>;
  /**
   * The VMs whose owner may ask for a lease past the maximum (the policy's `extend` rule), by
   * name: the length offered, and the maximum it goes past.
   */
  longer?: ReadonlyMap<string, { ms: number; maxMs: number }>;
  now: Date;
}

export interface HomeView {
  type: "home";
  blocks: KnownBlock[];
}

/** Shown at most: a VM takes two blocks (its line, its buttons); the whole view stays under 80. */
export const HOME_MAX_VMS = 20;
export const HOME_MAX_REQUESTS = 12;
export const HOME_MAX_APPROVALS = 15;

const STATUS: Partial<Record<RequestStatus, string>> = {
  queued: "Queued",
  planning: "Planning",
  awaiting_approval: "Awaiting approval",
  applying: "Applying",
  configuring: "Configuring",
};

/**
 * A time in the reader's own time zone, with the time it was read as (in ISO 8601) as the
 * fallback: never the stored text itself, which `Date.parse` may read as a time however odd it
 * is, inside the date token. Text that is not a time is shown alone, escaped.
 */
function when(iso: string): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return escapeMrkdwn(iso);
  return `<!date^${Math.floor(at / 1000)}^{date_short_pretty} {time}|${new Date(at).toISOString()}>`;
}

const section = (text: string): KnownBlock => ({
  type: "section",
  text: { type: "mrkdwn", text: truncate(text, 3000) },
});
const context = (text: string): KnownBlock => ({
  type: "context",
  elements: [{ type: "mrkdwn", text: truncate(text, 2000) }],
});
const header = (text: string): KnownBlock => ({
  type: "header",
  text: { type: "plain_text", text: truncate(text, 150) },
});

const GIB = 1024;

function vmLine(vm: VmRecord, now: Date): string {
  const { spec } = vm;
  const memory =
    spec.memoryMb % GIB === 0 ? `${spec.memoryMb / GIB}` : (spec.memoryMb / GIB).toFixed(1);
  const parts = [
    `*${escapeMrkdwn(truncate(vm.name, 100))}*`,
    escapeMrkdwn(truncate(vm.address ?? spec.ip.split("/")[0] ?? spec.ip, 100)),
    escapeMrkdwn(truncate(spec.node, 100)),
    `${spec.cores} ${spec.cores === 1 ? "core" : "cores"}, ${memory} GiB, ${spec.diskGb} GiB disk`,
    `${age(vm.createdAt, now)} old`,
  ];
  const lease =
    vm.leaseUntil === null
      ? "No lease: it stays until destroyed."
      : `Lease ends ${when(vm.leaseUntil)}.`;
  const status =
    vm.status === "live" && vm.statusNote === null
      ? ""
      : `\n:warning: ${escapeMrkdwn(truncate(vm.statusNote ?? "Gone outside vmbot.", 500))}`;
  return `${parts.join(" · ")}\n${lease}${status}`;
}

function vmButtons(
  vm: VmRecord,
  index: number,
  longer: { ms: number; maxMs: number } | undefined,
): KnownBlock {
  return {
    type: "actions",
    block_id: `home_vm_${index}`,
    elements: [
      ...(vm.leaseUntil === null
        ? []
        : [
            {
              type: "button" as const,
              action_id: HOME_VM_EXTEND,
              text: { type: "plain_text" as const, text: "Extend lease" },
              value: vm.name,
            },
          ]),
      ...(longer === undefined
        ? []
        : [askLongerButton(HOME_VM_ASK_LONGER, vm.name, longer.ms, longer.maxMs)]),
      {
        type: "button",
        action_id: HOME_VM_DESTROY,
        style: "danger",
        text: { type: "plain_text", text: "Destroy" },
        value: vm.name,
      },
    ],
  };
}

const more = (count: number, what: string, where: string): KnownBlock[] =>
  count > 0 ? [context(`…and ${count} more ${what}, not shown here: ${where}.`)] : [];

function vmBlocks(input: HomeInput): KnownBlock[] {
  const { vms, now } = input;
  const blocks: KnownBlock[] = [header(`Your VMs (${vms.length})`)];
  if (vms.length === 0) {
    blocks.push(section("You have no VM made by vmbot. *Create VM* asks for one."));
    return blocks;
  }
  vms.slice(0, HOME_MAX_VMS).forEach((vm, index) => {
    blocks.push(section(vmLine(vm, now)), vmButtons(vm, index, input.longer?.get(vm.name)));
  });
  blocks.push(...more(vms.length - HOME_MAX_VMS, "VMs", "`/vm list` shows them all"));
  return blocks;
}

const KIND_WORDS = { create: "Create", destroy: "Destroy", extend: "Longer lease for" } as const;

const kindWords = (request: RequestRecord) =>
  `${KIND_WORDS[request.kind]} *${escapeMrkdwn(truncate(request.spec.name, 100))}*`;

const messageLink = (url: string | undefined) =>
  url === undefined ? "" : ` ${link(url, "Open the request")}`;

function requestLine(request: RequestRecord, url: string | undefined): string {
  const status = STATUS[request.status] ?? request.status;
  return `${kindWords(request)}: ${status} since ${when(request.stageAt)}.${messageLink(url)}`;
}

function requestBlocks(input: HomeInput): KnownBlock[] {
  const { requests } = input;
  const blocks: KnownBlock[] = [header(`Your requests in flight (${requests.length})`)];
  if (requests.length === 0) {
    blocks.push(context("None: every request you made has ended."));
    return blocks;
  }
  for (const request of requests.slice(0, HOME_MAX_REQUESTS)) {
    blocks.push(section(requestLine(request, input.links?.get(request.id))));
  }
  blocks.push(
    ...more(requests.length - HOME_MAX_REQUESTS, "requests", "their messages are in the channel"),
  );
  return blocks;
}

function approvalBlocks(approvals: readonly PendingApproval[]): KnownBlock[] {
  const blocks: KnownBlock[] = [header(`Waiting for your approval (${approvals.length})`)];
  if (approvals.length === 0) {
    blocks.push(context("Nothing waits for your approval."));
    return blocks;
  }
  for (const { request, link: url } of approvals.slice(0, HOME_MAX_APPROVALS)) {
    blocks.push(
      section(
        `${kindWords(request)} for <@${request.requester}>, waiting since ${when(request.stageAt)}.${messageLink(url)}`,
      ),
    );
  }
  blocks.push(
    ...more(approvals.length - HOME_MAX_APPROVALS, "requests", "their messages are in the channel"),
  );
  blocks.push(context("Approve or reject on the request's message in the channel."));
  return blocks;
}

/** The Home tab of one person. */
export function homeView(input: HomeInput): HomeView {
  const blocks: KnownBlock[] = [
    {
      type: "section",
      text: {
        type: "mrkdwn",
        text: "Your VMs, their leases and your requests, kept up to date here.",
      },
      accessory: {
        type: "button",
        action_id: HOME_CREATE,
        style: "primary",
        text: { type: "plain_text", text: "Create VM" },
        value: "create",
      },
    },
    { type: "divider" },
    ...vmBlocks(input),
    { type: "divider" },
    ...requestBlocks(input),
  ];
  if (input.approvals !== undefined) {
    blocks.push({ type: "divider" }, ...approvalBlocks(input.approvals));
  }
  return { type: "home", blocks };
}

/** A modal telling the outcome of a Home button: the words the DM's or command's reply has. */
export function homeNotice(reply: DestroyReply | string) {
  const text = typeof reply === "string" ? reply : reply.text;
  const blocks =
    typeof reply !== "string" && reply.blocks.length > 0 ? reply.blocks : [section(text)];
  return {
    type: "modal" as const,
    title: { type: "plain_text" as const, text: "vmbot" },
    close: { type: "plain_text" as const, text: "Close" },
    blocks: blocks.filter((block) => block.type !== "actions"),
  };
}

/**
 * The Home's Destroy: the same confirmation as `/vm destroy` (what will be destroyed), as a
 * modal whose submit asks to destroy; the VM's name travels in private_metadata.
 */
export function homeDestroyModal(vm: VmRecord, now: Date) {
  const confirmation = destroyConfirmation(vm, now);
  return {
    type: "modal" as const,
    callback_id: HOME_DESTROY_MODAL,
    private_metadata: vm.name,
    title: { type: "plain_text" as const, text: "Destroy a VM" },
    submit: { type: "plain_text" as const, text: "Ask to destroy" },
    close: { type: "plain_text" as const, text: "Cancel" },
    blocks: confirmation.blocks.filter((block) => block.type !== "actions"),
  };
}
