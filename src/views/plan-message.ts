import type { types } from "@slack/bolt";
import { approveValue, PLAN_ACTIONS_BLOCK, PLAN_APPROVE, PLAN_REJECT } from "../ids.js";
import { escapeMrkdwn, link, truncate } from "../slack/mrkdwn.js";
import type { RequestRecord } from "../store/store.js";
import type { PlanResource, PlanSummary, ResourceAction } from "../terraform/plan-text.js";
import { orderNodes, type NodeUsage } from "../vm/nodes.js";
import { planLogCutWarning } from "./log-cut.js";
import { approvalWindowWords, approverMentions } from "./notify.js";
import { approvalsSoFarWords } from "./policy-words.js";
import {
  durationsBlocks,
  nextStepBlocks,
  reasonWords,
  requestHead,
  requestTitle,
  statusEmoji,
  statusLine,
  withdrawButton,
} from "./request-message.js";

type KnownBlock = types.KnownBlock;

export interface PlanReview {
  plan: PlanSummary;
  /** Node load from the plan's `node_resources` output or Proxmox; undefined when unknown. */
  nodes: readonly NodeUsage[] | undefined;
  planJobUrl: string | undefined;
  /** Whether the full plan went to the thread as a file. */
  planFile: "uploaded" | "failed" | "none";
  /** The plan job's log was read only this far (GITLAB_LOG_MAX_BYTES). */
  logCutAt?: number | undefined;
}

/** How many resources are listed before "and N more". */
export const LISTED_RESOURCES = 20;

/** How many of the plan's notes are shown before "and N more". */
export const SHOWN_NOTES = 5;

/** How many resources a plan's destroy warning names before "and N more". */
export const NAMED_DESTROYS = 10;

const ACTION: Record<ResourceAction, { marker: string; words: string }> = {
  create: { marker: "+", words: "create" },
  update: { marker: "~", words: "update in place" },
  delete: { marker: "-", words: "destroy" },
  replace: { marker: "-/+", words: "replace" },
  read: { marker: "<=", words: "read" },
  "no-op": { marker: " ", words: "no change" },
};

const code = (text: string) => `\`${escapeMrkdwn(text)}\``;

function actionWords(resource: PlanResource): string {
  if (resource.action !== "replace") return ACTION[resource.action].words;
  return resource.replaceOrder === "create-first"
    ? "replace (create before destroy)"
    : "replace (destroy before create)";
}

/** Whether a resource is destroyed by the plan, replaced or not. */
export const destroys = (r: PlanResource) => r.action === "delete" || r.action === "replace";

/** Resources that a plan would destroy, replacing or not (those it kept: see `destroyCount`). */
export function destructive(plan: PlanSummary): PlanResource[] {
  return plan.resources.filter(destroys);
}

/** How many resources the plan destroys, those left out of a stored plan's list included. */
function destroyCount(plan: PlanSummary, listed: readonly PlanResource[]): number {
  return listed.length + (plan.omitted?.destroying ?? 0);
}

function countsLine(plan: PlanSummary): string {
  const derived = plan.derivedCounts;
  const counts = plan.counts ?? derived;
  const importing = plan.counts?.import ?? derived.import;
  const parts = [
    ...(importing > 0 ? [`*${importing}* to import`] : []),
    `*${counts.add}* to add`,
    `*${counts.change}* to change`,
    `*${counts.destroy}* to destroy`,
  ];
  if (derived.replace > 0) parts.push(`of which *${derived.replace}* replaced`);
  return `*Plan:* ${parts.join(", ")}`;
}

/**
 * What to say when Terraform printed no "Plan:" line and listed no resource: a refresh-only plan,
 * an output-only plan, or output that is not a plan. Counts of zero would be made up.
 */
function withoutPlanLine(plan: PlanSummary): string {
  if (plan.outputChanges.length === 0) {
    return '*Plan:* Terraform printed no "Plan:" line and no resource change was found in its output.';
  }
  const shown = plan.outputChanges
    .slice(0, LISTED_RESOURCES)
    .map((o) => `${code(truncate(o.name, 150))} (${ACTION[o.action].words})`);
  const more = plan.outputChanges.length - shown.length + (plan.omitted?.outputChanges ?? 0);
  if (more > 0) shown.push(`and ${more} more`);
  return `*Plan:* no resource changes, only outputs: ${shown.join(", ")}`;
}

function planText(plan: PlanSummary): string {
  if (plan.noChanges) return "*Plan:* no changes. Terraform found nothing to do.";
  const d = plan.derivedCounts;
  if (plan.counts === undefined && d.add + d.change + d.destroy + d.import === 0) {
    return withoutPlanLine(plan);
  }
  const list = resourceList(plan);
  return list === "" ? countsLine(plan) : `${countsLine(plan)}\n${list}`;
}

/** Where a resource moved from, when its only change is a `moved` block. */
function movedFrom(resource: PlanResource): string | undefined {
  if (resource.action !== "no-op") return undefined;
  const moved = resource.reason?.split("; ").find((part) => part.startsWith("moved from "));
  return moved?.slice("moved from ".length);
}

/** A resource's marker and words: its action, or the import or move that is its only change. */
function listedAs(r: PlanResource): { marker: string; words: string } {
  const from = movedFrom(r);
  if (r.importing === true) {
    return r.action === "no-op"
      ? { marker: "<-", words: "import" }
      : { marker: ACTION[r.action].marker, words: `import, then ${actionWords(r)}` };
  }
  if (from !== undefined) return { marker: "->", words: `moved from ${code(truncate(from, 150))}` };
  return { marker: ACTION[r.action].marker, words: actionWords(r) };
}

/** Whether the message lists the resource: an import or a move changes the state too. */
export const isListedChange = (r: PlanResource) =>
  r.action !== "no-op" || r.importing === true || movedFrom(r) !== undefined;

function resourceList(plan: PlanSummary): string {
  const changing = plan.resources.filter(isListedChange);
  const listed = changing.slice(0, LISTED_RESOURCES).map((r) => {
    const { marker, words } = listedAs(r);
    return `\`${marker}\` ${code(truncate(r.address, 150))} ${words}`;
  });
  const more = changing.length - listed.length + (plan.omitted?.changing ?? 0);
  if (more > 0) listed.push(`and ${more} more`);
  return listed.join("\n");
}

/** What happens to a destroyed resource, and why when Terraform says (`# forces replacement`). */
function destroyWords(resource: PlanResource): string {
  const what =
    resource.action === "delete"
      ? "is destroyed"
      : resource.replaceOrder === "create-first"
        ? "is replaced: a new one is created, then this one destroyed"
        : "is replaced: destroyed, then created again";
  const why =
    resource.reason === undefined
      ? ""
      : `, because ${escapeMrkdwn(truncate(resource.reason, 200))}`;
  return `${what}${why}`;
}

function warning(resources: readonly PlanResource[], total: number, vmName: string): string {
  const names = resources
    .slice(0, NAMED_DESTROYS)
    .map((r) => `• ${code(truncate(r.address, 150))} ${destroyWords(r)}`);
  if (total > names.length) names.push(`and ${total - names.length} more`);
  return `:rotating_light: *This plan destroys ${total === 1 ? "a resource" : `${total} resources`} of VM ${escapeMrkdwn(truncate(vmName, 100))}.* Check that this is what you want before approving:\n${names.join("\n")}`;
}

function nodeLine(node: NodeUsage, chosen: string): string {
  const name = `*${escapeMrkdwn(node.name)}*${node.name === chosen ? " (chosen)" : ""}`;
  if (!node.online) return `${name}: offline`;
  const cpu = node.cpuPercent === undefined ? "CPU ?" : `CPU ${node.cpuPercent.toFixed(0)}%`;
  const memory =
    node.memoryUsedGb === undefined || node.memoryTotalGb === undefined
      ? "memory ?"
      : `memory ${node.memoryUsedGb.toFixed(1)} / ${node.memoryTotalGb.toFixed(1)} GiB`;
  return `${name}: ${cpu}, ${memory}`;
}

/** The confirmation Slack shows before an Approve that would destroy something (max 300 chars). */
function approveConfirmation(resources: readonly PlanResource[], total: number, vmName: string) {
  const shown: string[] = [];
  for (const resource of resources) {
    const name = truncate(resource.address, 120);
    if (shown.length > 0 && [...shown, name].join(", ").length > 200) break;
    shown.push(name);
  }
  const more = total - shown.length;
  const list = `${shown.join(", ")}${more > 0 ? ` and ${more} more` : ""}`;
  return {
    title: { type: "plain_text" as const, text: "Destroy resources?" },
    text: {
      type: "plain_text" as const,
      text: truncate(
        `Applying this plan destroys resources of VM ${truncate(vmName, 70)}: ${list}. This cannot be undone.`,
        300,
      ),
    },
    confirm: { type: "plain_text" as const, text: "Approve and destroy" },
    deny: { type: "plain_text" as const, text: "Go back" },
    style: "danger" as const,
  };
}

const context = (text: string): KnownBlock => ({
  type: "context",
  elements: [{ type: "mrkdwn", text }],
});

const section = (text: string): KnownBlock => ({
  type: "section",
  text: { type: "mrkdwn", text },
});

/** The plan's warnings and notes: a count mismatch, how the summary was made, a cut log. */
function planNotesBlocks(review: PlanReview): KnownBlock[] {
  const { plan } = review;
  const blocks: KnownBlock[] = [];
  if (plan.mismatch !== undefined) {
    blocks.push(context(truncate(`:warning: ${escapeMrkdwn(plan.mismatch)}`, 2000)));
  }
  if (plan.notes.length > 0) {
    // How the summary was put together, and what leaves the state without being destroyed.
    const shown = plan.notes.slice(0, SHOWN_NOTES).map((note) => escapeMrkdwn(note));
    const more = plan.notes.length - shown.length + (plan.omitted?.notes ?? 0);
    if (more > 0) shown.push(`and ${more} more`);
    blocks.push(context(truncate(shown.join("\n"), 2000)));
  }
  if (review.logCutAt !== undefined && review.planJobUrl !== undefined) {
    blocks.push(context(truncate(planLogCutWarning(review.logCutAt, review.planJobUrl), 2000)));
  }
  return blocks;
}

function nodesBlocks(request: RequestRecord, review: PlanReview): KnownBlock[] {
  if (review.nodes === undefined || review.nodes.length === 0) return [];
  const lines = orderNodes(review.nodes, request.spec.node)
    .slice(0, 20)
    .map((node) => nodeLine(node, request.spec.node));
  return [section(truncate(`*Nodes*\n${lines.join("\n")}`, 3000))];
}

function linksBlocks(request: RequestRecord, review: PlanReview): KnownBlock[] {
  const links = [
    request.pipelineUrl === null || request.pipelineId === null
      ? undefined
      : link(request.pipelineUrl, `Pipeline #${request.pipelineId}`),
    review.planJobUrl === undefined ? undefined : link(review.planJobUrl, "plan job"),
    review.planFile === "uploaded"
      ? "full plan in the thread"
      : review.planFile === "failed"
        ? "the full plan could not be attached: open the plan job's log"
        : undefined,
  ].filter((part): part is string => part !== undefined);
  return links.length > 0 ? [context(links.join(" · "))] : [];
}

function decisionBlocks(request: RequestRecord): KnownBlock[] {
  if (request.decision === null) return [];
  const at = Math.floor(Date.parse(request.decision.at) / 1000);
  const verb = {
    approved: ":white_check_mark: Approved",
    rejected: ":no_entry_sign: Rejected",
    withdrawn: ":leftwards_arrow_with_hook: Withdrawn",
  }[request.decision.kind];
  return [
    context(
      truncate(
        `${verb} by <@${request.decision.by}> at <!date^${at}^{date_short_pretty} {time}|${request.decision.at}>${reasonWords(request).replace("\n", " · ")}`,
        2000,
      ),
    ),
  ];
}

/** Who may approve until when, the approvals so far, and the Approve, Reject, Withdraw buttons. */
function approvalBlocks(
  request: RequestRecord,
  destroyed: readonly PlanResource[],
  total: number,
): KnownBlock[] {
  const blocks: KnownBlock[] = [];
  const window = request.review;
  if (window !== null && (window.expiresAt !== undefined || window.approvers !== undefined)) {
    blocks.push(
      context(approvalWindowWords(approverMentions(window.approvers ?? []), window.expiresAt)),
    );
  }
  if (window?.approvals !== undefined) {
    blocks.push(context(truncate(approvalsSoFarWords(window.approvals), 2000)));
  }
  blocks.push({
    type: "actions",
    block_id: PLAN_ACTIONS_BLOCK,
    elements: [
      {
        type: "button",
        action_id: PLAN_APPROVE,
        text: {
          type: "plain_text",
          text: total > 0 ? "Approve (destroys)" : "Approve",
        },
        // Destroying is not the safe default: the button says so in red.
        style: total > 0 ? "danger" : "primary",
        value: window === null ? request.id : approveValue(request.id, window.planJobId),
        ...(total > 0 ? { confirm: approveConfirmation(destroyed, total, request.spec.name) } : {}),
      },
      {
        type: "button",
        action_id: PLAN_REJECT,
        text: { type: "plain_text", text: "Reject" },
        style: "danger",
        value: request.id,
      },
      withdrawButton(request),
    ],
  });
  return blocks;
}

/**
 * The request message once Terraform has planned: what will change, what would be destroyed,
 * the nodes' load, links, and the Approve and Reject buttons (Approve names the plan it shows too).
 */
export function planMessage(
  request: RequestRecord,
  review: PlanReview,
): { text: string; blocks: KnownBlock[] } {
  const destroyed = destructive(review.plan);
  const total = destroyCount(review.plan, destroyed);
  const blocks: KnownBlock[] = [...requestHead(request), { type: "divider" }];
  if (total > 0) {
    blocks.push(section(truncate(warning(destroyed, total, request.spec.name), 3000)));
  }
  blocks.push(
    section(truncate(planText(review.plan), 3000)),
    ...planNotesBlocks(review),
    ...nodesBlocks(request, review),
    ...linksBlocks(request, review),
    ...decisionBlocks(request),
  );
  if (request.status !== "awaiting_approval") {
    blocks.push(
      section(truncate(`${statusEmoji(request)} ${statusLine(request)}`, 3000)),
      ...durationsBlocks(request),
      ...nextStepBlocks(request),
    );
  } else {
    blocks.push(...approvalBlocks(request, destroyed, total));
  }
  return { text: requestTitle(request), blocks };
}
