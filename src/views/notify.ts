import { destroyToldWords } from "./destroy.js";
import { extensionToldWords } from "./extend.js";
import type { RequestRecord } from "../store/store.js";
import { escapeMrkdwn } from "../slack/mrkdwn.js";
import { reasonWords } from "./request-message.js";

/**
 * The words that call people in: the approvers when a plan waits for them, the requester when
 * the request ends. Posted as thread replies, because Slack notifies nobody of an edited message.
 */

const USER = /^[UW][A-Z0-9]+$/;
const GROUP = /^S[A-Z0-9]+$/;

/** A Slack date that each reader sees in their own time zone, with the ISO time as fallback. */
export function slackDate(iso: string): string {
  const seconds = Math.floor(Date.parse(iso) / 1000);
  return `<!date^${seconds}^{date_short_pretty} {time}|${escapeMrkdwn(iso)}>`;
}

/**
 * Mentions of who may approve: each user group as the group, each person as the person. The
 * requester is left out when they may not approve their own request.
 */
export function approverMentions(approvers: readonly string[], without?: string): string[] {
  return approvers.flatMap((id) => {
    if (GROUP.test(id)) return [`<!subteam^${id}>`];
    if (USER.test(id) && id !== without) return [`<@${id}>`];
    return [];
  });
}

/** "a, b or c" */
function anyOf(names: readonly string[]): string {
  if (names.length <= 1) return names.join("");
  return `${names.slice(0, -1).join(", ")} or ${names[names.length - 1] ?? ""}`;
}

const vm = (request: RequestRecord) => `*${escapeMrkdwn(request.spec.name)}*`;

/** Under the plan, while it waits: until when it can be approved, and by whom. */
export function approvalWindowWords(mentions: readonly string[], expiresAt?: string): string {
  const until = expiresAt === undefined ? "" : ` until ${slackDate(expiresAt)}`;
  const who = mentions.length === 0 ? "" : ` by ${anyOf(mentions)}`;
  return `:hourglass: Can be approved${until}${who}; after that it expires and cannot be applied.`;
}

/** In the thread when a plan waits: the approvers are called in. */
export function approversCalledWords(
  request: RequestRecord,
  mentions: readonly string[],
  expiresAt?: string,
): string {
  const until =
    expiresAt === undefined ? "" : ` Approve or reject it before ${slackDate(expiresAt)}.`;
  return `:eyes: ${mentions.join(" ")} the plan for ${vm(request)}, asked by <@${request.requester}>, awaits your approval.${until}`;
}

/** In the thread when the request ends: the requester is told, by mention. */
export function requesterToldWords(request: RequestRecord): string | undefined {
  if (request.kind === "destroy") return destroyToldWords(request);
  if (request.kind === "extend") return extensionToldWords(request);
  const to = `<@${request.requester}>`;
  const by = request.decision === null ? "" : ` by <@${request.decision.by}>`;
  switch (request.status) {
    case "ready":
      return `:white_check_mark: ${to} ${vm(request)} is ready${request.address === null ? "" : ` at \`${escapeMrkdwn(request.address)}\``}.`;
    case "failed":
      return `:x: ${to} ${vm(request)} failed: the request message above says why.`;
    case "rejected":
      return `:no_entry_sign: ${to} the plan for ${vm(request)} was rejected${by}; nothing was built.${reasonWords(request)}`;
    case "expired":
      return `:alarm_clock: ${to} the plan for ${vm(request)} expired before anyone approved it; nothing was built. Run /vm create again for a fresh plan.`;
    default:
      return undefined;
  }
}
