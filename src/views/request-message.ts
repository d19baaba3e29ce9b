import type { types } from "@slack/bolt";
import type { RequestRecord, RequestStatus } from "../store/store.js";
import { REQUEST_ACTIONS_BLOCK, REQUEST_WITHDRAW } from "../ids.js";
import { escapeMrkdwn, link, truncate } from "../slack/mrkdwn.js";
import { destroyedSinceWords, nextStepButton, plannedAgainWords } from "./failure.js";
import { wholeNumberWords } from "./numbers.js";

type KnownBlock = types.KnownBlock;

const STATUS: Record<RequestStatus, { emoji: string; label: string }> = {
  queued: { emoji: ":hourglass_flowing_sand:", label: "Queued" },
  planning: { emoji: ":mag:", label: "Planning" },
  awaiting_approval: { emoji: ":eyes:", label: "Awaiting approval" },
  applying: { emoji: ":gear:", label: "Applying" },
  configuring: { emoji: ":wrench:", label: "Configuring" },
  ready: { emoji: ":white_check_mark:", label: "Ready" },
  failed: { emoji: ":x:", label: "Failed" },
  rejected: { emoji: ":no_entry_sign:", label: "Rejected" },
  expired: { emoji: ":alarm_clock:", label: "Expired" },
  canceled: { emoji: ":heavy_multiplication_x:", label: "Canceled" },
  withdrawn: { emoji: ":leftwards_arrow_with_hook:", label: "Withdrawn" },
};

/** Until its apply starts, the requester may withdraw a request whose pipeline exists. */
export function withdrawable(request: RequestRecord): boolean {
  return (
    request.pipelineId !== null &&
    (request.status === "queued" ||
      request.status === "planning" ||
      request.status === "awaiting_approval")
  );
}

/** The requester's Withdraw button, behind a confirmation; it carries only the request ID. */
export function withdrawButton(request: RequestRecord) {
  return {
    type: "button" as const,
    action_id: REQUEST_WITHDRAW,
    text: { type: "plain_text" as const, text: "Withdraw" },
    value: request.id,
    confirm: {
      title: { type: "plain_text" as const, text: "Withdraw this request?" },
      text: {
        type: "plain_text" as const,
        text: truncate(
          `vmbot cancels the pipeline of ${request.spec.name} in GitLab and its plan can no longer be applied. Only you, who asked for it, can withdraw it.`,
          300,
        ),
      },
      confirm: { type: "plain_text" as const, text: "Withdraw" },
      deny: { type: "plain_text" as const, text: "Keep it" },
    },
  };
}

function field(label: string, value: string) {
  return { type: "mrkdwn" as const, text: truncate(`*${label}*\n${value}`, 2000) };
}

/** A duration as a clock reads: 0:42, 12:05, 1:02:09. */
export function duration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const [h, m, s] = [Math.floor(total / 3600), Math.floor(total / 60) % 60, total % 60];
  const two = (n: number) => String(n).padStart(2, "0");
  return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
}

/** When the current stage started, in each reader's own time zone. */
const since = (request: RequestRecord) =>
  `since <!date^${Math.floor(Date.parse(request.stageAt) / 1000)}^{time}|${request.stageAt}>`;

/** Why it was rejected, when the rejecter said: quoted as they wrote it, escaped. */
export function reasonWords(request: RequestRecord): string {
  const reason = request.decision?.reason;
  return reason === undefined
    ? ""
    : `\nReason: “${escapeMrkdwn(truncate(reason.replace(/\s+/g, " "), 500))}”`;
}

/** One sentence on where the request stands: a verb, the pipeline's link, and the time. */
export function statusLine(request: RequestRecord): string {
  const pipeline =
    request.pipelineId === null || request.pipelineUrl === null
      ? undefined
      : link(request.pipelineUrl, `pipeline #${request.pipelineId}`);
  const see = pipeline === undefined ? "" : `\nSee ${pipeline}.`;
  switch (request.status) {
    case "queued":
      return pipeline === undefined
        ? "Starting the GitLab pipeline…"
        : `Queued… GitLab ${pipeline} started: waiting for Terraform to plan.`;
    case "planning":
      return `Planning… Terraform is planning${pipeline === undefined ? "" : ` in GitLab ${pipeline}`}, ${since(request)}.`;
    case "awaiting_approval":
      return `Awaiting approval… ${since(request)}.${see}`;
    case "failed":
    case "canceled":
    case "expired":
      // The error is cut, not the line: a long one (GitLab's words, a log excerpt) must leave
      // room for the pipeline's link, which a cut would break.
      return `${truncate(request.error ?? `The request ${request.status === "failed" ? "failed" : `was ${request.status}`}.`, 2500)}${see}`;
    case "applying":
      // While GitLab has not said whether the apply started, the words say so (checkingWords).
      return request.error !== null
        ? `${truncate(request.error, 2500)}${see}`
        : `Applying… Terraform is applying the plan${pipeline === undefined ? "" : ` (${pipeline})`}, ${since(request)}.`;
    case "configuring":
      // The address is cut so that the time after it always fits whole.
      return `Configuring… Ansible is configuring the VM${request.address === null ? "" : ` at ${truncate(escapeMrkdwn(request.address), 300)}`}, ${since(request)}.`;
    case "rejected":
      return `Rejected${request.decision === null ? "" : ` by <@${request.decision.by}>`}: nothing was built${pipeline === undefined ? "" : ` and GitLab ${pipeline} was canceled`}.${reasonWords(request)}`;
    case "withdrawn":
      return `Withdrawn by <@${request.decision?.by ?? request.requester}>, who asked for it: nothing was built${pipeline === undefined ? "" : ` and GitLab ${pipeline} was canceled`}.`;
    case "ready": {
      const took = Date.parse(request.stageAt) - Date.parse(request.createdAt);
      return `Ready: *${escapeMrkdwn(request.spec.name)}*${request.address === null ? "" : ` at \`${escapeMrkdwn(request.address)}\``}, ${duration(took)} after it was requested.`;
    }
  }
}

/** A VM's memory (MiB, as Proxmox takes it) in GiB, the unit every message uses. */
export function memoryWords(mib: number): string {
  const gib = mib / 1024;
  return `${Number.isInteger(gib) ? wholeNumberWords(gib) : gib.toFixed(2)} GiB`;
}

/** The line under a request message's header: who asked, when, and the request's ID. */
export function requestedBy(request: RequestRecord): KnownBlock {
  const createdAt = Math.floor(Date.parse(request.createdAt) / 1000);
  return {
    type: "context",
    elements: [
      {
        type: "mrkdwn",
        text: `Requested by <@${request.requester}> · <!date^${createdAt}^{date_short_pretty} {time}|${request.createdAt}> · \`${request.id}\``,
      },
    ],
  };
}

/** The head every request message starts with: name and status, who asked, the inputs. */
export function requestHead(request: RequestRecord): KnownBlock[] {
  const { spec } = request;
  const status = STATUS[request.status];
  return [
    {
      type: "header",
      text: { type: "plain_text", text: truncate(`VM ${spec.name} — ${status.label}`, 150) },
    },
    requestedBy(request),
    {
      type: "section",
      fields: [
        field("Node", escapeMrkdwn(spec.node)),
        field("Template", `${escapeMrkdwn(spec.templateName)} (${spec.templateId})`),
        field("CPU", `${spec.cores} cores`),
        field("Memory", memoryWords(spec.memoryMb)),
        field("Disk", `${wholeNumberWords(spec.diskGb)} GiB`),
        field("Address", `${escapeMrkdwn(spec.ip)} via ${escapeMrkdwn(spec.gateway)}`),
        field("DNS", escapeMrkdwn(spec.dns)),
        field("VM ID", spec.vmId === 0 ? "auto" : String(spec.vmId)),
        field("VLAN", spec.vlanId === 0 ? "untagged" : String(spec.vlanId)),
      ],
    },
  ];
}

/** Where the time of a finished request went: each stage it went through, as a clock reads. */
export function durationsLine(request: RequestRecord): string | undefined {
  if (request.status !== "ready" && request.status !== "failed") return undefined;
  const at = (iso: string | undefined) => (iso === undefined ? undefined : Date.parse(iso));
  const t = request.stageTimes;
  const end = Date.parse(request.stageAt);
  const stages: [string, number | undefined, number | undefined][] = [
    ["planning", Date.parse(request.createdAt), at(t.awaiting_approval)],
    ["waiting for approval", at(t.awaiting_approval), at(t.applying)],
    ["applying", at(t.applying), at(t.configuring) ?? at(t.ready)],
    ["configuring", at(t.configuring), at(t.ready)],
  ];
  const parts: string[] = [];
  for (const [name, from, to] of stages) {
    if (from === undefined) continue;
    // A stage the request ended in runs until the end.
    const until = to ?? (from <= end ? end : undefined);
    if (until === undefined || until < from) continue;
    parts.push(`${name} ${duration(until - from)}`);
    if (to === undefined) break;
  }
  const total = duration(end - Date.parse(request.createdAt));
  return `:hourglass: ${total} in all${parts.length === 0 ? "" : `: ${parts.join(" · ")}`}.`;
}

/** The finished message's line of durations, as a context block. */
export function durationsBlocks(request: RequestRecord): KnownBlock[] {
  const line = durationsLine(request);
  return line === undefined
    ? []
    : [{ type: "context", elements: [{ type: "mrkdwn", text: truncate(line, 2000) }] }];
}

/**
 * A failed request's next step (Retry configure, Plan again), or where its plan went again, or
 * that its VM was destroyed since.
 */
export function nextStepBlocks(request: RequestRecord): KnownBlock[] {
  const blocks: KnownBlock[] = [];
  for (const words of [plannedAgainWords(request), destroyedSinceWords(request)]) {
    if (words === undefined) continue;
    blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: truncate(words, 2000) }] });
  }
  const next = nextStepButton(request);
  if (next !== undefined) {
    blocks.push({ type: "actions", block_id: REQUEST_ACTIONS_BLOCK, elements: [next] });
  }
  return blocks;
}

/** The text Slack shows in notifications for a request message. */
export function requestTitle(request: RequestRecord): string {
  return `VM ${escapeMrkdwn(request.spec.name)} — ${STATUS[request.status].label}`;
}

export function statusEmoji(request: RequestRecord): string {
  return STATUS[request.status].emoji;
}

/** The one message that follows a request from form to VM; pure, so it can be re-rendered at will. */
export function requestMessage(request: RequestRecord): { text: string; blocks: KnownBlock[] } {
  const status = STATUS[request.status];
  const blocks: KnownBlock[] = [
    ...requestHead(request),
    {
      type: "section",
      text: { type: "mrkdwn", text: truncate(`${status.emoji} ${statusLine(request)}`, 3000) },
    },
  ];
  if (request.notes.length > 0) {
    blocks.push({
      type: "context",
      elements: [
        { type: "mrkdwn", text: truncate(request.notes.map(escapeMrkdwn).join(" "), 2000) },
      ],
    });
  }
  blocks.push(...durationsBlocks(request), ...nextStepBlocks(request));
  if (withdrawable(request)) {
    blocks.push({
      type: "actions",
      block_id: REQUEST_ACTIONS_BLOCK,
      elements: [withdrawButton(request)],
    });
  }
  return { text: requestTitle(request), blocks };
}

/** Told to the requester directly when Slack refused to update their request's message. */
export function couldNotUpdateWords(request: RequestRecord): {
  text: string;
  blocks: KnownBlock[];
} {
  const message = requestMessage(request);
  return {
    text: `vmbot could not update the message of your request ${request.id}. Its status: ${message.text}.`,
    blocks: message.blocks,
  };
}
