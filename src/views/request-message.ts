import type { types } from "@slack/bolt";
import type { RequestRecord, RequestStatus } from "../store/store.js";
import { escapeMrkdwn, link, truncate } from "../slack/mrkdwn.js";

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
};

function field(label: string, value: string) {
  return { type: "mrkdwn" as const, text: truncate(`*${label}*\n${value}`, 2000) };
}

/** One sentence on where the request stands, with the pipeline's link. */
export function statusLine(request: RequestRecord): string {
  const pipeline =
    request.pipelineId === null || request.pipelineUrl === null
      ? undefined
      : link(request.pipelineUrl, `pipeline #${request.pipelineId}`);
  switch (request.status) {
    case "queued":
      return pipeline === undefined
        ? "Starting the GitLab pipeline…"
        : `GitLab ${pipeline} started: waiting for Terraform to plan.`;
    case "failed":
    case "canceled":
      // The error is cut, not the line: a long one (GitLab's words, a log excerpt) must leave
      // room for the pipeline's link, which a cut would break.
      return `${truncate(request.error ?? "The request failed.", 2500)}${pipeline === undefined ? "" : `\nSee ${pipeline}.`}`;
    case "applying":
      // While GitLab has not said whether the apply started, the words say so (checkingWords).
      return request.error !== null
        ? `${truncate(request.error, 2500)}${pipeline === undefined ? "" : `\nSee ${pipeline}.`}`
        : `Terraform is applying the plan${pipeline === undefined ? "" : ` (${pipeline})`}.`;
    case "configuring":
      return `Ansible is configuring the VM${request.address === null ? "" : ` at ${escapeMrkdwn(request.address)}`}.`;
    case "ready":
      return `Ready: *${escapeMrkdwn(request.spec.name)}*${request.address === null ? "" : ` at \`${escapeMrkdwn(request.address)}\``}.`;
    default:
      return pipeline === undefined ? STATUS[request.status].label : `GitLab ${pipeline}`;
  }
}

/** The head every request message starts with: name and status, who asked, the inputs. */
export function requestHead(request: RequestRecord): KnownBlock[] {
  const { spec } = request;
  const status = STATUS[request.status];
  const createdAt = Math.floor(Date.parse(request.createdAt) / 1000);
  return [
    {
      type: "header",
      text: { type: "plain_text", text: truncate(`VM ${spec.name} — ${status.label}`, 150) },
    },
    {
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text: `Requested by <@${request.requester}> · <!date^${createdAt}^{date_short_pretty} {time}|${request.createdAt}> · \`${request.id}\``,
        },
      ],
    },
    {
      type: "section",
      fields: [
        field("Node", escapeMrkdwn(spec.node)),
        field("Template", `${escapeMrkdwn(spec.templateName)} (${spec.templateId})`),
        field("CPU", `${spec.cores} cores`),
        field("Memory", `${spec.memoryMb.toLocaleString("en-US")} MB`),
        field("Disk", `${spec.diskGb.toLocaleString("en-US")} GB`),
        field("Address", `${escapeMrkdwn(spec.ip)} via ${escapeMrkdwn(spec.gateway)}`),
        field("DNS", escapeMrkdwn(spec.dns)),
        field("VM ID", spec.vmId === 0 ? "auto" : String(spec.vmId)),
        field("VLAN", spec.vlanId === 0 ? "untagged" : String(spec.vlanId)),
      ],
    },
  ];
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
  return { text: requestTitle(request), blocks };
}
