import type { types } from "@slack/bolt";
import { PLAN_ACTIONS_BLOCK, PLAN_APPROVE, PLAN_REJECT } from "../ids.js";
import { escapeMrkdwn, link, truncate } from "../slack/mrkdwn.js";
import type { RequestRecord } from "../store/store.js";
import type { PlanResource, PlanSummary, ResourceAction } from "../terraform/plan-text.js";
import { orderNodes, type NodeUsage } from "../vm/nodes.js";
import { planLogCutWarning } from "./log-cut.js";
import { approvalWindowWords, approverMentions } from "./notify.js";
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

/** Resources that a plan would destroy, replacing or not. */
export function destructive(plan: PlanSummary): PlanResource[] {
  return plan.resources.filter((r) => r.action === "delete" || r.action === "replace");
}

function countsLine(plan: PlanSummary): string {
  const derived = plan.derivedCounts;
  const counts = plan.counts ?? derived;
  const parts = [
    `*${counts.add}* to add`,
    `*${counts.change}* to change`,
    `*${counts.destroy}* to destroy`,
  ];
  if (derived.replace > 0) parts.push(`of which *${derived.replace}* replaced`);
  return `*Plan:* ${parts.join(", ")}`;
}

function resourceList(plan: PlanSummary): string {
  const changing = plan.resources.filter((r) => r.action !== "no-op");
  const listed = changing.slice(0, LISTED_RESOURCES).map((r) => {
    const address = truncate(r.address, 150);
    return `\`${ACTION[r.action].marker}\` ${code(address)} ${actionWords(r)}`;
  });
  const more = changing.length - listed.length;
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

function warning(resources: readonly PlanResource[], vmName: string): string {
  const names = resources
    .slice(0, 10)
    .map((r) => `• ${code(truncate(r.address, 150))} ${destroyWords(r)}`);
  if (resources.length > 10) names.push(`and ${resources.length - 10} more`);
  return `:rotating_light: *This plan destroys ${resources.length === 1 ? "a resource" : `${resources.length} resources`} of VM ${escapeMrkdwn(truncate(vmName, 100))}.* Check that this is what you want before approving:\n${names.join("\n")}`;
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
function approveConfirmation(resources: readonly PlanResource[], vmName: string) {
  const shown: string[] = [];
  for (const resource of resources) {
    const name = truncate(resource.address, 120);
    if (shown.length > 0 && [...shown, name].join(", ").length > 200) break;
    shown.push(name);
  }
  const more = resources.length - shown.length;
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

/**
 * The request message once Terraform has planned: what will change, what would be destroyed,
 * the nodes' load, links, and the Approve and Reject buttons (which carry only the request ID).
 */
export function planMessage(
  request: RequestRecord,
  review: PlanReview,
): { text: string; blocks: KnownBlock[] } {
  const { plan } = review;
  const destroyed = destructive(plan);
  const blocks: KnownBlock[] = [...requestHead(request), { type: "divider" }];

  if (destroyed.length > 0) {
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: truncate(warning(destroyed, request.spec.name), 3000) },
    });
  }
  blocks.push({
    type: "section",
    text: {
      type: "mrkdwn",
      text: truncate(
        plan.noChanges
          ? "*Plan:* no changes. Terraform found nothing to do."
          : `${countsLine(plan)}\n${resourceList(plan)}`,
        3000,
      ),
    },
  });
  if (plan.mismatch !== undefined) {
    blocks.push({
      type: "context",
      elements: [
        { type: "mrkdwn", text: truncate(`:warning: ${escapeMrkdwn(plan.mismatch)}`, 2000) },
      ],
    });
  }
  if (review.logCutAt !== undefined && review.planJobUrl !== undefined) {
    blocks.push({
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text: truncate(planLogCutWarning(review.logCutAt, review.planJobUrl), 2000),
        },
      ],
    });
  }
  if (review.nodes !== undefined && review.nodes.length > 0) {
    const lines = orderNodes(review.nodes, request.spec.node)
      .slice(0, 20)
      .map((node) => nodeLine(node, request.spec.node));
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: truncate(`*Nodes*\n${lines.join("\n")}`, 3000) },
    });
  }

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
  if (links.length > 0) {
    blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: links.join(" · ") }] });
  }

  if (request.decision !== null) {
    const at = Math.floor(Date.parse(request.decision.at) / 1000);
    const verb = {
      approved: ":white_check_mark: Approved",
      rejected: ":no_entry_sign: Rejected",
      withdrawn: ":leftwards_arrow_with_hook: Withdrawn",
    }[request.decision.kind];
    blocks.push({
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text: truncate(
            `${verb} by <@${request.decision.by}> at <!date^${at}^{date_short_pretty} {time}|${request.decision.at}>${reasonWords(request).replace("\n", " · ")}`,
            2000,
          ),
        },
      ],
    });
  }
  if (request.status !== "awaiting_approval") {
    blocks.push({
      type: "section",
      text: {
        type: "mrkdwn",
        text: truncate(`${statusEmoji(request)} ${statusLine(request)}`, 3000),
      },
    });
    blocks.push(...durationsBlocks(request), ...nextStepBlocks(request));
  } else {
    const window = request.review;
    if (window !== null && (window.expiresAt !== undefined || window.approvers !== undefined)) {
      blocks.push({
        type: "context",
        elements: [
          {
            type: "mrkdwn",
            text: approvalWindowWords(approverMentions(window.approvers ?? []), window.expiresAt),
          },
        ],
      });
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
            text: destroyed.length > 0 ? "Approve (destroys)" : "Approve",
          },
          // Destroying is not the safe default: the button says so in red.
          style: destroyed.length > 0 ? "danger" : "primary",
          value: request.id,
          ...(destroyed.length > 0
            ? { confirm: approveConfirmation(destroyed, request.spec.name) }
            : {}),
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
  }
  return { text: requestTitle(request), blocks };
}
