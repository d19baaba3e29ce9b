import type { types } from "@slack/bolt";
import type { VmRecord } from "../store/inventory.js";
import type { RequestKind, RequestStatus } from "../store/store.js";
import { escapeMrkdwn } from "../slack/mrkdwn.js";
import { age } from "./unlock.js";

export const LIST_USAGE =
  "Usage: `/vm list` shows your VMs; `/vm list all` shows every VM vmbot made.";

type KnownBlock = types.KnownBlock;

export interface VmListReply {
  text: string;
  blocks: KnownBlock[];
}

/** VMs listed one per line, in sections of this many (a section holds 3,000 characters). */
const PER_SECTION = 10;
/** VMs listed at most: 5 sections, well inside a message's 50 blocks. */
export const MAX_LISTED = 50;

const GIB = 1024;

/** A request in flight for a listed VM: what it does, and where it stands. */
export interface VmInFlight {
  kind: RequestKind;
  status: RequestStatus;
}

/** The list's status column: live or gone, or what a request in flight is doing to the VM. */
function statusWords(vm: VmRecord, busy: VmInFlight | undefined): string {
  if (busy?.kind === "destroy") {
    if (busy.status === "awaiting_approval") return "*destroy awaiting approval*";
    if (busy.status === "applying" || busy.status === "configuring") return "*destroying*";
    return "*destroy starting*";
  }
  if (busy?.kind === "create") return busy.status === "configuring" ? "configuring" : "changing";
  if (busy?.kind === "extend") return "live, *longer lease awaiting approval*";
  return vm.status === "gone" ? "*gone*" : "live";
}

/** `web-01 · 192.168.1.50 · pve · 4 cores, 4 GiB, 40 GiB disk · <@U1> · 3 d old · no lease · live` */
function line(vm: VmRecord, now: Date, showOwner: boolean, busy?: VmInFlight): string {
  const { spec } = vm;
  const memory =
    spec.memoryMb % GIB === 0 ? `${spec.memoryMb / GIB}` : (spec.memoryMb / GIB).toFixed(1);
  const parts = [
    `*${escapeMrkdwn(vm.name)}*`,
    escapeMrkdwn(vm.address ?? spec.ip.split("/")[0] ?? spec.ip),
    escapeMrkdwn(spec.node),
    `${spec.cores} ${spec.cores === 1 ? "core" : "cores"}, ${memory} GiB, ${spec.diskGb} GiB disk`,
    ...(showOwner ? [`<@${vm.owner}>`] : []),
    `${age(vm.createdAt, now)} old`,
    vm.leaseUntil === null
      ? "no lease"
      : `lease until <!date^${Math.floor(Date.parse(vm.leaseUntil) / 1000)}^{date_short_pretty}|${escapeMrkdwn(vm.leaseUntil)}>`,
    statusWords(vm, busy),
  ];
  // A live VM's note says what went wrong last (a failed destroy); a gone one's why it is gone.
  const status =
    vm.status === "live" && vm.statusNote === null
      ? ""
      : `\n    :warning: ${escapeMrkdwn(vm.statusNote ?? "Gone outside vmbot.")}`;
  return `• ${parts.join(" · ")}${status}`;
}

/** States listed by name at most under the list. */
const LISTED_STATES = 20;

/** For admins under `/vm list all`: the project's states vmbot neither made nor was asked for. */
function unmanagedNote(states: readonly string[]): KnownBlock[] {
  if (states.length === 0) return [];
  const names = states
    .slice(0, LISTED_STATES)
    .map((name) => `\`${escapeMrkdwn(name)}\``)
    .join(", ");
  const more = states.length > LISTED_STATES ? ` and ${states.length - LISTED_STATES} more` : "";
  return [
    {
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text: `Terraform states in the project that vmbot did not make (left alone): ${names}${more}.`,
        },
      ],
    },
  ];
}

/** `/vm list [all]`: the asker's VMs, or everyone's, newest first. */
export function vmList(
  vms: readonly VmRecord[],
  options: ListOptions & { unmanaged?: readonly string[] },
): VmListReply {
  const reply = vmLines(vms, options);
  return { ...reply, blocks: [...reply.blocks, ...unmanagedNote(options.unmanaged ?? [])] };
}

interface ListOptions {
  all: boolean;
  now: Date;
  /** The request in flight for a VM, by its name: a destroy shows in the status column. */
  inFlight?: ReadonlyMap<string, VmInFlight>;
}

function vmLines(vms: readonly VmRecord[], options: ListOptions): VmListReply {
  const whose = options.all ? "vmbot's VMs" : "Your VMs";
  if (vms.length === 0) {
    const text = options.all
      ? "vmbot has made no VM yet (or none is left). `/vm create` asks for one."
      : "You have no VM made by vmbot. `/vm create` asks for one; `/vm list all` shows everyone's.";
    return { text, blocks: [{ type: "section", text: { type: "mrkdwn", text } }] };
  }
  const shown = vms.slice(0, MAX_LISTED);
  const header = `*${whose}* (${vms.length}), newest first:`;
  const sections: KnownBlock[] = [];
  for (let at = 0; at < shown.length; at += PER_SECTION) {
    const lines = shown
      .slice(at, at + PER_SECTION)
      .map((vm) => line(vm, options.now, options.all, options.inFlight?.get(vm.name)));
    sections.push({
      type: "section",
      text: { type: "mrkdwn", text: [...(at === 0 ? [header] : []), ...lines].join("\n") },
    });
  }
  const more = vms.length - shown.length;
  return {
    text: `${whose}: ${vms.length}.`,
    blocks: [
      ...sections,
      ...(more > 0
        ? [
            {
              type: "context" as const,
              elements: [
                {
                  type: "mrkdwn" as const,
                  text: `…and ${more} older ${more === 1 ? "VM" : "VMs"}, not shown.`,
                },
              ],
            },
          ]
        : []),
    ],
  };
}
