import type { types } from "@slack/bolt";
import type { VmTemplate } from "../config.js";
import { CREATE_FIELDS, CREATE_LEASE_FIELD, CREATE_MODAL, type CreateField } from "../ids.js";
import type { ProxmoxNode } from "../proxmox/proxmox.js";
import { durationText } from "../vm/lease.js";
import { LIMITS } from "../vm/spec.js";

/** What the name field takes: more than a hostname may have, so the check can say so. */
export const NAME_INPUT_MAX = 255;

type ModalView = types.ModalView;
type KnownBlock = types.KnownBlock;
type InputBlock = types.InputBlock;

/** A node the form offers: its name, and what the option shows (e.g. its free resources). */
export interface NodeOption {
  value: string;
  label: string;
}

export interface CreateModalOptions {
  /** Node names (VM_NODES) or live options from Proxmox, the default first. */
  nodes: readonly (string | NodeOption)[];
  /** Under the node list: where it comes from when that is worth saying. */
  nodeHint?: string;
  templates: readonly VmTemplate[];
  defaults: { gateway: string; dns: string; cores: number; memoryMb: number; diskGb: number };
  /** Prefilled from `/vm create <name>`. */
  name?: string;
  /** The lease lengths offered (null: never) and the one chosen at first; none: leases are off. */
  lease?: { choices: readonly (number | null)[]; initial: number | null };
  /** Opaque; read back on submission. */
  privateMetadata: string;
}

export const FORM_DEFAULTS = { cores: 2, memoryMb: 2048, diskGb: 20 } as const;

const plain = (text: string) => ({ type: "plain_text" as const, text, emoji: true });

function input(
  field: CreateField,
  label: string,
  element: (actionId: string) => InputBlock["element"],
  extra: { hint?: string; optional?: boolean } = {},
): InputBlock {
  return {
    type: "input",
    block_id: CREATE_FIELDS[field],
    label: plain(label),
    element: element(CREATE_FIELDS[field]),
    ...(extra.hint === undefined ? {} : { hint: plain(extra.hint) }),
    optional: extra.optional ?? false,
  };
}

const text =
  (initial: string | undefined, placeholder: string, maxLength?: number) => (actionId: string) => ({
    type: "plain_text_input" as const,
    action_id: actionId,
    placeholder: plain(placeholder),
    ...(initial === undefined || initial === "" ? {} : { initial_value: initial }),
    ...(maxLength === undefined ? {} : { max_length: maxLength }),
  });

const wholeNumber =
  (initial: number, range: { min: number; max: number }) => (actionId: string) => ({
    type: "number_input" as const,
    action_id: actionId,
    is_decimal_allowed: false,
    initial_value: String(initial),
    min_value: String(range.min),
    max_value: String(range.max),
  });

const select =
  (options: { value: string; label: string }[], initial: string | undefined) =>
  (actionId: string) => {
    const slackOptions = options.map((o) => ({
      text: plain(o.label.slice(0, 75)),
      value: o.value,
    }));
    const initialOption = slackOptions.find((o) => o.value === initial);
    return {
      type: "static_select" as const,
      action_id: actionId,
      options: slackOptions,
      ...(initialOption === undefined ? {} : { initial_option: initialOption }),
    };
  };

/** The `/vm create` form: every field of the platform's inputs, with its defaults. */
export function createModal(options: CreateModalOptions): ModalView {
  const nodeOptions = options.nodes.map((node) =>
    typeof node === "string" ? { value: node, label: node } : node,
  );
  const blocks: KnownBlock[] = [
    // Longer than a hostname may be, so that a long name is refused on the field, never cut.
    input("name", "Name", text(options.name, "web-01", NAME_INPUT_MAX), {
      hint: "Hostname and Proxmox name: a-z, 0-9 and -, up to 63 characters.",
    }),
    input("node", "Proxmox node", select(nodeOptions, nodeOptions[0]?.value), {
      ...(options.nodeHint === undefined ? {} : { hint: options.nodeHint }),
    }),
    input(
      "template",
      "Template",
      select(
        options.templates.map((t) => ({ value: String(t.id), label: `${t.name} (${t.id})` })),
        options.templates[0] === undefined ? undefined : String(options.templates[0].id),
      ),
      { hint: "Cloud-init template VM that is cloned." },
    ),
    input("cores", "CPU cores", wholeNumber(options.defaults.cores, LIMITS.cores)),
    input("memory", "Memory (MiB)", wholeNumber(options.defaults.memoryMb, LIMITS.memoryMb)),
    input("disk", "Disk (GiB)", wholeNumber(options.defaults.diskGb, LIMITS.diskGb)),
    input("ip", "IP address / prefix", text(undefined, "192.168.1.50/24", 18), {
      hint: "Static IPv4 address with its prefix length, /8 to /30.",
    }),
    input("gateway", "Gateway", text(options.defaults.gateway, "192.168.1.1", 15), {
      hint: "Inside the VM's subnet.",
    }),
    input("dns", "DNS server", text(options.defaults.dns, "192.168.1.1", 15)),
    input("vmId", "VM ID", text(undefined, "auto", 9), {
      optional: true,
      hint: "Leave blank to let Proxmox choose; otherwise 100 to 999999999.",
    }),
    input("vlan", "VLAN", text(undefined, "untagged", 4), {
      optional: true,
      hint: "Leave blank for untagged; otherwise 1 to 4094.",
    }),
    ...(options.lease === undefined ? [] : [leaseInput(options.lease)]),
  ];
  return {
    type: "modal",
    callback_id: CREATE_MODAL,
    title: plain("New VM"),
    submit: plain("Create"),
    close: plain("Cancel"),
    private_metadata: options.privateMetadata,
    blocks,
  };
}

const UNIT_WORDS = [
  [86_400_000, "day"],
  [3_600_000, "hour"],
  [60_000, "minute"],
  [1_000, "second"],
] as const;

/** `30 days`, `1 hour`, `90 seconds`: a lease length as the form and messages show it. */
export function leaseLengthWords(ms: number): string {
  const [size, unit] = UNIT_WORDS.find(([each]) => ms % each === 0) ?? UNIT_WORDS[3];
  const count = Math.max(1, Math.round(ms / size));
  return `${count} ${unit}${count === 1 ? "" : "s"}`;
}

/** The value an offered lease carries: its length (`30d`), or `never`. */
const leaseValue = (ms: number | null) => (ms === null ? "never" : durationText(ms));

/** The lease field: a choice of lengths up to the maximum, the default chosen. */
function leaseInput(lease: { choices: readonly (number | null)[]; initial: number | null }) {
  const options = lease.choices.map((ms) => ({
    value: leaseValue(ms),
    label: ms === null ? "Never (no lease)" : leaseLengthWords(ms),
  }));
  const longest = lease.choices.at(-1);
  const hint =
    longest === null
      ? "When it ends, vmbot asks to destroy the VM; you are reminded before, and may extend it."
      : `At most ${leaseLengthWords(longest ?? 0)}. When it ends, vmbot asks to destroy the VM; you are reminded before, and may extend it.`;
  return {
    type: "input" as const,
    block_id: CREATE_LEASE_FIELD,
    label: plain("Lease"),
    element: select(options, leaseValue(lease.initial))(CREATE_LEASE_FIELD),
    hint: plain(hint),
    optional: false,
  };
}

/** Why the lease chosen on the form is refused, on its field. */
export function leaseChoiceWords(
  problem: "unreadable" | "over_max" | "never_refused",
  maxMs: number | null,
): string {
  const most = maxMs === null ? "" : ` (at most ${leaseLengthWords(maxMs)})`;
  if (problem === "over_max") {
    return `The lease can be at most ${leaseLengthWords(maxMs ?? 0)}: choose one of the offered lengths.`;
  }
  if (problem === "never_refused") {
    return `Every VM has a lease here${most}: choose one of the offered lengths.`;
  }
  return `Choose one of the offered lease lengths${most}.`;
}

const freeCores = (node: ProxmoxNode) =>
  node.cores === undefined || node.cpu === undefined ? undefined : node.cores * (1 - node.cpu);
const freeMemory = (node: ProxmoxNode) =>
  node.memTotal === undefined || node.memUsed === undefined
    ? undefined
    : node.memTotal - node.memUsed;

/** `pve1 — 5.4 of 8 cores, 20.1 GiB free`: what a person choosing a node wants to know. */
export function nodeLabel(node: ProxmoxNode): string {
  const cpu = freeCores(node);
  const memory = freeMemory(node);
  const parts = [
    cpu === undefined || node.cores === undefined
      ? undefined
      : `${cpu.toFixed(1)} of ${node.cores} cores`,
    memory === undefined ? undefined : `${(memory / 1024 ** 3).toFixed(1)} GiB`,
  ].filter((part) => part !== undefined);
  return parts.length === 0 ? node.name : `${node.name} — ${parts.join(", ")} free`;
}

/**
 * The form's node options from Proxmox: online nodes only, by name, with the default first —
 * the first of VM_NODES when it is online, else the one with the most free memory.
 */
export function liveNodeOptions(
  nodes: readonly ProxmoxNode[],
  configured: readonly string[],
): NodeOption[] {
  const online = nodes
    .filter((node) => node.status === "online")
    .sort((a, b) => a.name.localeCompare(b.name, "en", { numeric: true }));
  const preferred =
    online.find((node) => node.name === configured[0]) ??
    [...online].sort((a, b) => (freeMemory(b) ?? 0) - (freeMemory(a) ?? 0))[0];
  const ordered =
    preferred === undefined ? online : [preferred, ...online.filter((node) => node !== preferred)];
  return ordered.map((node) => ({ value: node.name, label: nodeLabel(node) }));
}
