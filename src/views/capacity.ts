import type { types } from "@slack/bolt";
import type { ProxmoxNode } from "../proxmox/proxmox.js";
import { escapeMrkdwn, truncate } from "../slack/mrkdwn.js";

/** `/vm capacity` on a bot with no Proxmox settings. */
export const PROXMOX_NOT_CONFIGURED =
  "Proxmox is not configured: an admin sets PROXMOX_URL, and the API token in PROXMOX_TOKEN or in Vault.";

type KnownBlock = types.KnownBlock;

/** Slack's limits for one message: 50 blocks, 3,000 characters in a section's text. */
export const SLACK_LIMITS = { blocks: 50, sectionText: 3_000, headerText: 150 } as const;

const GAUGE_CELLS = 10;
const GIB = 1024 ** 3;
const TIB = 1024 ** 4;

/** `▰▰▰▱▱▱▱▱▱▱` for 0.3; never empty for a little use, never full short of all of it. */
export function gauge(fraction: number): string {
  const clamped = Math.min(1, Math.max(0, fraction));
  let filled = Math.round(clamped * GAUGE_CELLS);
  if (filled === 0 && clamped > 0) filled = 1;
  if (filled === GAUGE_CELLS && clamped < 1) filled = GAUGE_CELLS - 1;
  return "█".repeat(filled) + "░".repeat(GAUGE_CELLS - filled);
}

/** Bytes as GiB with one decimal, or TiB from 1 TiB up. */
export function size(bytes: number): string {
  return bytes >= TIB ? `${(bytes / TIB).toFixed(1)} TiB` : `${(bytes / GIB).toFixed(1)} GiB`;
}

const percent = (fraction: number) => `${Math.round(Math.min(1, Math.max(0, fraction)) * 100)}%`;
const cores = (count: number) => `${count} core${count === 1 ? "" : "s"}`;

const STATUS_MARK: Record<ProxmoxNode["status"], string> = {
  online: ":large_green_circle: online",
  offline: ":red_circle: *offline*",
  unknown: ":white_circle: *status unknown*",
};

/** Three aligned gauge lines, in a code block so they line up. */
function loadLines(node: ProxmoxNode): string[] {
  const lines: string[] = [];
  if (node.cpu !== undefined) {
    const of = node.cores === undefined ? "" : ` of ${cores(node.cores)}`;
    lines.push(`CPU     ${gauge(node.cpu)}  ${percent(node.cpu).padStart(4)}${of}`);
  }
  if (node.memUsed !== undefined && node.memTotal !== undefined) {
    lines.push(
      `Memory  ${gauge(node.memUsed / node.memTotal)}  ${size(node.memUsed)} / ${size(node.memTotal)}`,
    );
  }
  if (node.diskUsed !== undefined && node.diskTotal !== undefined) {
    lines.push(
      `Disk    ${gauge(node.diskUsed / node.diskTotal)}  ${size(node.diskUsed)} / ${size(node.diskTotal)}`,
    );
  }
  return lines;
}

function maxima(node: ProxmoxNode): string {
  const parts = [
    node.cores === undefined ? undefined : cores(node.cores),
    node.memTotal === undefined ? undefined : `${size(node.memTotal)} memory`,
    node.diskTotal === undefined ? undefined : `${size(node.diskTotal)} disk`,
  ].filter((part) => part !== undefined);
  return parts.length === 0 ? "no figures" : parts.join(" · ");
}

/** One node's text: its name and status, then its load, or its maxima when it is not online. */
export function nodeText(node: ProxmoxNode): string {
  // Node names are hostnames (63 characters at most). Cutting a longer one keeps the node's text
  // well inside a section, which is then never cut itself: a cut could leave its code block open
  // into the next node's text.
  const head = `*${escapeMrkdwn(truncate(node.name, 100))}*  ${STATUS_MARK[node.status]}`;
  if (node.status !== "online") {
    return `${head}\n${maxima(node)} — load unknown while ${node.status === "offline" ? "offline" : "its status is unknown"}`;
  }
  const lines = loadLines(node);
  return lines.length === 0
    ? `${head}\nProxmox reported no load figures for this node.`
    : `${head}\n\`\`\`${lines.join("\n")}\`\`\``;
}

function totals(nodes: readonly ProxmoxNode[]): string {
  const online = nodes.filter((node) => node.status === "online");
  const coreCount = online.reduce((sum, node) => sum + (node.cores ?? 0), 0);
  const busyCores = online.reduce((sum, node) => sum + (node.cpu ?? 0) * (node.cores ?? 0), 0);
  const memUsed = online.reduce((sum, node) => sum + (node.memUsed ?? 0), 0);
  const memTotal = online.reduce((sum, node) => sum + (node.memTotal ?? 0), 0);
  const parts = [`${online.length} of ${nodes.length} node${nodes.length === 1 ? "" : "s"} online`];
  if (coreCount > 0) parts.push(`CPU ${percent(busyCores / coreCount)} of ${cores(coreCount)}`);
  if (memTotal > 0) parts.push(`memory ${size(memUsed)} / ${size(memTotal)}`);
  return parts.join(" · ");
}

export interface CapacityView {
  nodes: readonly ProxmoxNode[];
  /** The Proxmox API the figures come from: shown to the asker only, never in the channel. */
  source: string;
  at: Date;
  /** Posted in the channel (`public`): who asked, and no internal address. */
  askedBy?: string;
}

/**
 * `/vm capacity`: every node by name, with a gauge per resource; offline nodes marked. Packs
 * several nodes into one section when there are many, so any cluster fits Slack's limits.
 */
export function capacityMessage(view: CapacityView): { text: string; blocks: KnownBlock[] } {
  const nodes = [...view.nodes].sort((a, b) =>
    a.name.localeCompare(b.name, "en", { numeric: true }),
  );
  const summary = totals(nodes);
  const unix = Math.floor(view.at.getTime() / 1000);
  const blocks: KnownBlock[] = [
    { type: "header", text: { type: "plain_text", text: "Proxmox capacity", emoji: true } },
    {
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text:
            view.askedBy === undefined
              ? `${summary} · live from ${escapeMrkdwn(view.source)} at <!date^${unix}^{time}|${view.at.toISOString()}>`
              : `Asked for by <@${view.askedBy}> · ${summary} · live from Proxmox at <!date^${unix}^{time}|${view.at.toISOString()}>`,
        },
      ],
    },
  ];
  if (nodes.length === 0) {
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: "Proxmox reported no nodes." },
    });
    return { text: `Proxmox capacity: no nodes`, blocks };
  }
  // Room for the sections, keeping one block for a "not shown" note.
  const sectionsAllowed = SLACK_LIMITS.blocks - blocks.length - 1;
  const sections: string[] = [];
  let shown = 0;
  for (const node of nodes) {
    const text = nodeText(node).slice(0, SLACK_LIMITS.sectionText);
    const last = sections.at(-1);
    // One node per section while there is room; several per section once there is not.
    const packing = nodes.length > sectionsAllowed;
    if (
      packing &&
      last !== undefined &&
      last.length + 2 + text.length <= SLACK_LIMITS.sectionText
    ) {
      sections[sections.length - 1] = `${last}\n\n${text}`;
    } else if (sections.length < sectionsAllowed) {
      sections.push(text);
    } else {
      break;
    }
    shown += 1;
  }
  for (const text of sections) blocks.push({ type: "section", text: { type: "mrkdwn", text } });
  if (shown < nodes.length) {
    blocks.push({
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text: `${nodes.length - shown} more node${nodes.length - shown === 1 ? "" : "s"} not shown: Slack allows ${SLACK_LIMITS.blocks} blocks in a message.`,
        },
      ],
    });
  }
  return { text: `Proxmox capacity: ${summary}`, blocks };
}

/** What `/vm capacity` says to an argument it does not take, and what it does take. */
export function capacityUsage(arg: string): { text: string; blocks: KnownBlock[] } {
  const shown = escapeMrkdwn(truncate(arg, 60)).replace(/`/g, "'");
  const text = `\`/vm capacity\` does not take \`${shown}\`: it always shows every node. Type \`/vm capacity\` to see it yourself, or \`/vm capacity public\` to post it in the channel.`;
  return { text, blocks: [{ type: "section", text: { type: "mrkdwn", text } }] };
}

/** What `/vm capacity` says when Proxmox cannot be asked. */
export function capacityFailure(reason: string): { text: string; blocks: KnownBlock[] } {
  const text = `vmbot could not read the nodes' capacity. ${reason}`;
  return {
    text,
    blocks: [{ type: "section", text: { type: "mrkdwn", text: `:warning: ${text}` } }],
  };
}
