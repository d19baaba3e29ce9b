import type { webApi } from "@slack/bolt";
import type { Access } from "../access.js";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Effects } from "../effects.js";
import type { GitlabPort, Job } from "../gitlab/gitlab.js";
import type { Logger } from "../logger.js";
import { within, type NodeDirectory } from "../proxmox/directory.js";
import type { Redactor } from "../redact.js";
import type { ListedMessage } from "../slack/find.js";
import { postOnce } from "../slack/lost-answers.js";
import { createTextSpool, uploadSpooledText, type TextSpool } from "../slack/upload.js";
import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import { parsePlanJson } from "../terraform/plan-json.js";
import type { PlanTextResult } from "../terraform/plan-text.js";
import { planFileCutNotes, planJsonMissing } from "../views/log-cut.js";
import { keptForMessage, messageResources } from "../views/plan-kept.js";
import { waitingApprovals } from "../policy/approval-step.js";
import { usageOf, type NodeUsage } from "../vm/nodes.js";
import { approvalDeadline } from "./notify.js";
import { createPlanLogReader } from "./plan-log-reader.js";
import { PlanSummarySchema, type PlanReviewRecord } from "./review.js";
import { UploadedResultSchema } from "../effect-results.js";

export interface PlanReviewDeps {
  config: Config;
  store: AsyncStore;
  gitlab: GitlabPort;
  client: webApi.WebClient;
  /** The policy in force and people's groups: the approvals the plan needs. */
  access: Pick<Access, "policy" | "groupsOf">;
  log: Logger;
  redact: Redactor;
  effects: Effects;
  nodes?: NodeDirectory | undefined;
  now: Clock;
  /** A message of the request's thread that `matches`. */
  findInThread(
    request: RequestRecord,
    matches: (message: ListedMessage) => boolean,
  ): Promise<{ ts: string } | undefined>;
  /** Records the review: the request awaits approval, and its message says so. */
  reviewed(request: RequestRecord, review: PlanReviewRecord): Promise<void>;
}

/** How long a plan review waits for Proxmox before it goes out with the last answer, or none. */
const NODES_BUDGET_MS = 3_000;

/** What reading a plan job's log gave: the plan as its text says, and the plan file. */
interface PlanLogReading {
  plan: PlanTextResult;
  truncated: boolean;
  file: TextSpool | undefined;
  /** The log's last line when it had no newline, which the file still has to take. */
  last: string;
}

async function readLog(deps: PlanReviewDeps, job: Job, keepFile: boolean): Promise<PlanLogReading> {
  const file = keepFile ? await createTextSpool(deps.redact) : undefined;
  // Only what the message shows of the resources is kept, however long the plan.
  const reader = createPlanLogReader({
    overwritten: "keep",
    keepLines: file !== undefined,
    resources: messageResources(),
  });
  try {
    const { truncated } = await deps.gitlab.streamJobLog(
      job.id,
      deps.config.gitlab.logMaxBytes,
      async (text) => {
        const lines = reader.push(text);
        await file?.writeLines(lines);
      },
    );
    // A last line with no newline that reads as a heading may be one cut short: the reader
    // leaves it out (the file keeps it), as `parsePlanText` does.
    const { lines, last } = reader.end();
    await file?.writeLines(lines);
    return { plan: reader.result(), truncated, file, last: last ?? "" };
  } catch (error) {
    await file?.discard();
    throw error;
  }
}

/**
 * The plan from the job's JSON artifact when one is configured and present (with the nodes'
 * load from its `node_resources` output), else the plan its log showed.
 */
async function readPlan(
  deps: PlanReviewDeps,
  job: Job,
  fromLog: PlanTextResult,
): Promise<Pick<PlanReviewRecord, "plan" | "nodes">> {
  const path = deps.config.gitlab.planJsonArtifact;
  const maxBytes = deps.config.gitlab.logMaxBytes;
  const json =
    path === undefined ? undefined : await deps.gitlab.jobArtifact(job.id, path, maxBytes);
  if (json === undefined || json.truncated) {
    const plan = fromLog;
    if (path !== undefined) plan.notes.push(planJsonMissing(path, json !== undefined, maxBytes));
    const nodes = await liveNodes(deps);
    return { plan, ...(nodes === undefined ? {} : { nodes }) };
  }
  const result = parsePlanJson(json.text);
  const nodes = Object.entries(result.nodeResources ?? {}).map(([name, usage]) => ({
    name,
    online: true,
    cpuPercent: usage.cpuUsagePercent,
    memoryUsedGb: usage.memoryUsedGb,
    memoryTotalGb: usage.memoryTotalGb,
  }));
  if (result.nodeResourcesProblem !== undefined) result.notes.push(result.nodeResourcesProblem);
  // Only the summary is kept: outputs may hold values nobody should see again in Slack.
  const plan = PlanSummarySchema.parse(result);
  const load = nodes.length > 0 ? nodes : await liveNodes(deps);
  return { plan, ...(load === undefined ? {} : { nodes: load }) };
}

/**
 * The nodes' load from Proxmox, for a plan that brings none: a fresh read within a few
 * seconds, else the last answer Proxmox gave; undefined without Proxmox or any answer.
 */
async function liveNodes(deps: PlanReviewDeps): Promise<NodeUsage[] | undefined> {
  const directory = deps.nodes;
  if (directory === undefined) return undefined;
  const read = await within(directory.nodes(), NODES_BUDGET_MS).catch((error: unknown) => {
    deps.log.warn({ err: error }, "could not read the nodes' load from Proxmox for a plan");
    return undefined;
  });
  const nodes = Array.isArray(read) ? read : directory.last();
  if (nodes === undefined || nodes.length === 0) return undefined;
  return nodes.map(usageOf);
}

/** Shares the plan file in the request's thread, once across crashes. */
async function uploadPlanFile(
  deps: PlanReviewDeps,
  request: RequestRecord,
  job: Job,
  reading: PlanLogReading & { file: TextSpool },
): Promise<PlanReviewRecord["planFile"]> {
  const threadTs = request.messageTs;
  if (threadTs === null) return "none";
  const filename = `${request.spec.name}-plan.txt`;
  const cut = planFileCutNotes(deps.config.gitlab.logMaxBytes, job.webUrl);
  try {
    const spooled = await reading.file.finish(reading.last);
    // Slack takes no empty file, and an empty log has nothing to show.
    if (spooled.bytes === 0 && !reading.truncated) return "none";
    const shared = () =>
      deps.findInThread(request, (message) =>
        (message.files ?? []).some((file) => file.name === filename),
      );
    await deps.effects.once(request.id, `upload_plan:${job.id}`, {
      result: UploadedResultSchema,
      reconcile: shared,
      act: async () => {
        // A lost answer to the share is read back before the file is shared again.
        await postOnce(async () => {
          await uploadSpooledText(
            deps.client,
            spooled,
            {
              channel: request.channel,
              threadTs,
              filename,
              title: `Terraform plan for ${request.spec.name}`,
              ...(reading.truncated ? { head: cut.head, tail: cut.tail } : {}),
            },
            deps.redact,
          );
          return { ts: "" };
        }, shared);
        await deps.store.audit({
          requestId: request.id,
          actor: "vmbot",
          action: "plan_uploaded",
          detail: { jobId: job.id },
        });
        return { jobId: job.id };
      },
    });
    return "uploaded";
  } catch (error) {
    deps.log.warn({ err: error, requestId: request.id }, "could not upload the plan");
    await deps.store.complete(request.id, `upload_plan:${job.id}`, { failed: true });
    return "failed";
  }
}

/**
 * Reads a finished plan job: its plan (from the `terraform show -json` artifact when there is
 * one, else from the log), the nodes' load, and the log as a file in the request's thread.
 *
 * The log streams through once, up to GITLAB_LOG_MAX_BYTES: each piece is cleaned, fed to the
 * plan parser and written (redacted) to a file on disk, then dropped. What stays in memory is
 * the parser's reading, not the log, so a long log costs no more memory than a short one.
 */
export function createPlanReviewer(deps: PlanReviewDeps) {
  /** Reads a finished plan job and hands its review on. */
  return async function reviewPlan(request: RequestRecord, job: Job): Promise<void> {
    const reading = await readLog(deps, job, request.messageTs !== null);
    let planFile: PlanReviewRecord["planFile"] = "none";
    try {
      const { plan, nodes } = await readPlan(deps, job, reading.plan);
      if (reading.file !== undefined) {
        planFile = await uploadPlanFile(deps, request, job, { ...reading, file: reading.file });
      }
      const now = deps.now();
      const reviewedAt = now.toISOString();
      const review: PlanReviewRecord = {
        // What the message needs of the plan, not the whole of a long one.
        plan: keptForMessage(plan),
        ...(nodes === undefined ? {} : { nodes }),
        planJobId: job.id,
        planJobUrl: job.webUrl,
        planFile,
        reviewedAt,
        expiresAt: approvalDeadline(reviewedAt, deps.config.planTtlMs),
        ...(reading.truncated ? { logCutAt: deps.config.gitlab.logMaxBytes } : {}),
      };
      // What the policy's rule for this plan needs, shown from the first message on, and who
      // may give it: not its requester, unless the rule lets them.
      const { approvers, approvals } = await waitingApprovals(deps, { ...request, review }, now);
      await deps.reviewed(request, {
        ...review,
        approvers,
        ...(approvals === undefined ? {} : { approvals }),
      });
    } finally {
      await reading.file?.discard();
    }
  };
}
