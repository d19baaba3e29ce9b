import type { types } from "@slack/bolt";
import { EXTEND_APPROVE, PLAN_ACTIONS_BLOCK, PLAN_REJECT } from "../ids.js";
import { escapeMrkdwn, truncate } from "../slack/mrkdwn.js";
import type { RequestRecord, RequestStatus } from "../store/store.js";
import { leaseLengthWords } from "./create-modal.js";
import { approvalsSoFarWords } from "./policy-words.js";
import { durationsBlocks, reasonWords, requestedBy } from "./request-message.js";

type KnownBlock = types.KnownBlock;

/**
 * Every sentence of a lease extension past the maximum: the button that asks for it, the request
 * message the approvers decide on in the channel, and what the owner is told.
 */

const name = (vm: string) => `*${escapeMrkdwn(truncate(vm, 100))}*`;

/** A time in the reader's own time zone, the ISO text as the fallback. */
const when = (iso: string) =>
  `<!date^${Math.floor(Date.parse(iso) / 1000)}^{date_short_pretty} {time}|${escapeMrkdwn(iso)}>`;

const section = (text: string): KnownBlock => ({
  type: "section",
  text: { type: "mrkdwn", text: truncate(text, 3000) },
});

/** The button's label: how long is asked for, and that someone must approve it. */
export const askLongerLabel = (ms: number) =>
  truncate(`Ask for ${leaseLengthWords(ms)} (needs approval)`, 75);

/** The confirmation Slack shows before the request is opened (at most 300 characters). */
export function askLongerConfirmation(vm: string, ms: number, maxMs: number) {
  return {
    title: { type: "plain_text" as const, text: "Ask for a longer lease?" },
    text: {
      type: "plain_text" as const,
      text: truncate(
        `vmbot asks the approvers in the channel to lend ${vm} for ${leaseLengthWords(ms)} from their approval, past the usual maximum of ${leaseLengthWords(maxMs)}. The lease stays as it is until then.`,
        300,
      ),
    },
    confirm: { type: "plain_text" as const, text: "Ask" },
    deny: { type: "plain_text" as const, text: "Go back" },
  };
}

/** The "Ask for …" button, behind a confirmation; `actionId` says where it is (reminder or Home). */
export function askLongerButton(actionId: string, vm: string, ms: number, maxMs: number) {
  return {
    type: "button" as const,
    action_id: actionId,
    text: { type: "plain_text" as const, text: askLongerLabel(ms) },
    value: vm,
    confirm: askLongerConfirmation(vm, ms, maxMs),
  };
}

/** The answer once the request is posted. */
export const extensionAskedWords = (vm: string, ms: number, channel: string) =>
  `:white_check_mark: Asked to lend ${name(vm)} for ${leaseLengthWords(ms)}: the request is in <#${escapeMrkdwn(channel)}>, awaiting approval. Its lease stays as it is until then.`;

export const extensionNotOwnerWords = (vm: string, owner: string) =>
  `Only the owner of ${name(vm)} (<@${owner}>) may ask for a longer lease.`;

export const extensionNoVmWords = "vmbot no longer lists this VM: there is no lease to extend.";

export const extensionNoLeaseWords = (vm: string) =>
  `${name(vm)} has no lease: it stays until destroyed.`;

export const extensionNoRuleWords = (vm: string, maxMs: number | null) =>
  maxMs === null
    ? `Leases have no maximum: *Extend* lends ${name(vm)} again.`
    : `No approval rule lets a lease of ${name(vm)} go past the maximum of ${leaseLengthWords(maxMs)}: *Extend* lends it up to that.`;

export const extensionBusyWords = (vm: string, request: RequestRecord) =>
  `:hourglass_flowing_sand: A request for ${name(vm)} is in progress (\`${request.id}\`, ${request.status.replace("_", " ")}). Ask for a longer lease once it ends.`;

export const extensionNoChannelWords =
  "vmbot knows no channel to ask the approvers in: run a `/vm` command in a channel first.";

export const extensionNotRecordedWords =
  "vmbot could not record your request, so nothing was asked. Please try again.";

/** Extend said no because the lease is at the maximum, while a rule lets the owner ask for more. */
export const atMaximumAskWords = (ms: number) =>
  ` To lend it for ${leaseLengthWords(ms)}, use *Ask for ${leaseLengthWords(ms)}*: an approver decides.`;

/** When an approved extension makes the lease end: the approval's time plus the length asked. */
export function extensionEnd(request: RequestRecord): string | undefined {
  const length = request.spec.leaseMs;
  if (request.decision?.kind !== "approved" || length === undefined || length === null) {
    return undefined;
  }
  return new Date(Date.parse(request.decision.at) + length).toISOString();
}

const STATUS: Record<RequestStatus, { emoji: string; label: string }> = {
  queued: { emoji: ":hourglass_flowing_sand:", label: "Asked" },
  planning: { emoji: ":hourglass_flowing_sand:", label: "Asked" },
  awaiting_approval: { emoji: ":eyes:", label: "Awaiting approval" },
  applying: { emoji: ":hourglass_flowing_sand:", label: "Extending" },
  configuring: { emoji: ":hourglass_flowing_sand:", label: "Extending" },
  ready: { emoji: ":white_check_mark:", label: "Extended" },
  failed: { emoji: ":x:", label: "Failed" },
  rejected: { emoji: ":no_entry_sign:", label: "Rejected" },
  expired: { emoji: ":alarm_clock:", label: "Expired" },
  canceled: { emoji: ":heavy_multiplication_x:", label: "Canceled" },
  withdrawn: { emoji: ":leftwards_arrow_with_hook:", label: "Withdrawn" },
};

function statusLine(request: RequestRecord): string {
  const vm = name(request.spec.name);
  const length = leaseLengthWords(request.spec.leaseMs ?? 0);
  const until = extensionEnd(request);
  switch (request.status) {
    case "queued":
    case "planning":
      return `Asking the approvers to lend ${vm} for ${length}…`;
    case "awaiting_approval":
      return `Awaiting approval: approving lends ${vm} for ${length} from the approval, past the usual maximum. Until then its lease stays as it is.`;
    case "applying":
    case "configuring":
      return `Approved: moving the lease of ${vm}${until === undefined ? "" : ` to ${when(until)}`}…`;
    case "ready":
      return `Extended: the lease of ${vm} now ends ${until === undefined ? "later" : when(until)}.`;
    case "rejected":
      return `Rejected${request.decision === null ? "" : ` by <@${request.decision.by}>`}: the lease of ${vm} stays as it was.${reasonWords(request)}`;
    case "failed":
    case "canceled":
    case "expired":
    case "withdrawn":
      return truncate(
        request.error ?? `The extension ${request.status}: the lease of ${vm} stays as it was.`,
        2500,
      );
  }
}

function buttons(request: RequestRecord): KnownBlock[] {
  if (request.status !== "awaiting_approval") return [];
  return [
    {
      type: "actions",
      block_id: PLAN_ACTIONS_BLOCK,
      elements: [
        {
          type: "button",
          action_id: EXTEND_APPROVE,
          style: "primary",
          text: { type: "plain_text", text: "Approve" },
          value: request.id,
        },
        {
          type: "button",
          action_id: PLAN_REJECT,
          text: { type: "plain_text", text: "Reject" },
          value: request.id,
        },
      ],
    },
  ];
}

/** An extension request's one message: which VM, for how long, where it stands, its buttons. */
export function extendMessage(request: RequestRecord): { text: string; blocks: KnownBlock[] } {
  const status = STATUS[request.status];
  const title = `Longer lease for ${request.spec.name} — ${status.label}`;
  const blocks: KnownBlock[] = [
    { type: "header", text: { type: "plain_text", text: truncate(title, 150) } },
    requestedBy(request),
    section(`${status.emoji} ${statusLine(request)}`),
  ];
  if (request.decision?.kind === "approved") {
    blocks.push({
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text: `:white_check_mark: Approved by <@${request.decision.by}> at ${when(request.decision.at)}`,
        },
      ],
    });
  }
  const shown = request.approvals;
  if (request.status === "awaiting_approval" && shown !== null && shown.tally !== "") {
    blocks.push({
      type: "context",
      elements: [{ type: "mrkdwn", text: truncate(approvalsSoFarWords(shown), 2000) }],
    });
  }
  blocks.push(...durationsBlocks(request), ...buttons(request));
  return { text: escapeMrkdwn(title), blocks };
}

/** In the thread when an extension waits: the approvers are called in. */
export function extensionApproversWords(request: RequestRecord, mentions: readonly string[]) {
  return `:eyes: ${mentions.join(" ")} <@${request.requester}> asks to lend ${name(request.spec.name)} for ${leaseLengthWords(request.spec.leaseMs ?? 0)}, past the usual maximum: it awaits your approval.`;
}

/** In the thread when an extension ends: the owner is told, by mention. */
export function extensionToldWords(request: RequestRecord): string | undefined {
  const to = `<@${request.requester}>`;
  const vm = name(request.spec.name);
  const until = extensionEnd(request);
  switch (request.status) {
    case "ready":
      return `:white_check_mark: ${to} the lease of ${vm} now ends ${until === undefined ? "later" : when(until)}.`;
    case "rejected":
      return `:no_entry_sign: ${to} the longer lease for ${vm} was rejected${request.decision === null ? "" : ` by <@${request.decision.by}>`}; its lease stays as it was.${reasonWords(request)}`;
    case "expired":
      return `:alarm_clock: ${to} nobody approved the longer lease for ${vm} in time; its lease stays as it was.`;
    case "failed":
      return `:x: ${to} the lease of ${vm} was not extended: the request message above says why.`;
    default:
      return undefined;
  }
}

/** An extension that waited longer than PLAN_TTL (`ttl`, in words). */
export const extensionExpiredWords = (vm: string, ttl: string) =>
  `This request waited longer than ${ttl} for approval and expired: the lease of ${name(vm)} stays as it was. Ask again from the lease reminder or the Home tab.`;

/** A destroy of the VM was opened (its lease's end, say) before the approved extension was made. */
export const extensionDestroyingWords = (vm: string) =>
  `A destroy of ${name(vm)} was asked for before this extension was made: the lease stays as it was. To keep the VM, withdraw that destroy request from its message, then ask again.`;

/** The VM left the inventory before its extension was approved. */
export const extensionVmGoneWords = (vm: string) =>
  `vmbot no longer lists ${name(vm)}: there was no lease left to extend.`;
