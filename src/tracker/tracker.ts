import type { webApi } from "@slack/bolt";
import type { Config } from "../config.js";
import type { Effects } from "../effects.js";
import { userMessage, VmbotError } from "../errors.js";
import type { GitlabPort, Job } from "../gitlab/gitlab.js";
import { cleanTrace } from "../gitlab/trace.js";
import type { Logger } from "../logger.js";
import type { NodeDirectory } from "../proxmox/directory.js";
import type { Redactor } from "../redact.js";
import type { RequestRecord, RequestStatus, Store } from "../store/store.js";
import { parseAnsibleOutput } from "../ansible/recap.js";
import { parsePlanText } from "../terraform/plan-text.js";
import { recapCutWords, tailCutWords } from "../views/log-cut.js";
import { recapText } from "../views/recap.js";
import { causeWords, failureExcerptWords, jobFailedWords } from "../views/failure.js";
import { classifyFailure, type FailureFinding, type FailureRecord } from "./failure-cause.js";
import { STEP_EVENT_TYPE } from "../ids.js";
import { findMessage, type ListedMessage } from "../slack/find.js";
import { metadataOf } from "../slack/metadata.js";
import { createThreadPoster } from "../slack/thread.js";
import { createLatePipelines } from "./late-pipelines.js";
import { catchUpMessages, renderRequestMessage } from "./message-sync.js";
import { createClosure, isClosed } from "./closure.js";
import { createApprovalFinisher } from "./play.js";
import { createDestroyAdvance } from "./destroy-advance.js";
import { createLeaseKeeper } from "./leases.js";
import { leaseEnd } from "../vm/lease.js";
import { createPlanReviewer } from "./plan-review.js";
import { createConfigureRetry } from "./retry-configure.js";
import { createNotifier, finishNotices } from "./notify.js";
import { planExpired } from "./review.js";
import type { RequestStarter } from "./starter.js";

type SlackClient = webApi.WebClient;

export interface TrackerDeps {
  config: Config;
  store: Store;
  gitlab: GitlabPort;
  client: SlackClient;
  log: Logger;
  redact: Redactor;
  effects: Effects;
  /** Finishes requests a crash left without their message or pipeline. */
  starter: RequestStarter;
  /** Live Proxmox, for the nodes' load when the plan brings none (no `node_resources`). */
  nodes?: NodeDirectory | undefined;
  now?: () => Date;
}

/** Follows every unfinished request through its pipeline, reading the truth from GitLab. */
export interface Tracker {
  /** One pass: one pipelines list for the project, and job reads only for what changed. */
  tick(): Promise<void>;
  /** Starts polling every POLL_INTERVAL_MS. */
  start(): void;
  /**
   * Asks for a tick as soon as possible (a webhook arrived, a button was clicked). With a
   * pipeline (a Job Hook names one), that pipeline's jobs are read on the pass whatever its
   * `updated_at` says: GitLab leaves a running pipeline's `updated_at` alone while its jobs move.
   */
  wake(pipelineId?: number): void;
  /** Stops polling and waits for a tick in progress. */
  stop(): Promise<void>;
}

const RUNNING = new Set(["created", "waiting_for_resource", "preparing", "pending", "running"]);
const STOPPED = new Set(["failed", "canceled", "skipped"]);
/** How far behind its own clock the bot looks when it has no GitLab timestamp yet. */
const FIRST_LOOKBACK_MS = 60_000;
const LOG_TAIL_LINES = 15;
/** How much of a Terraform error's text a failure message shows. */
const ERROR_EXCERPT_CHARS = 1_500;
/** queued → planning → awaiting approval, or applying → configuring → ready, in one reading. */
const MAX_STEPS_PER_PASS = 4;
/** Pipelines followed at once in a pass. */
const PARALLEL_READS = 4;

export function createTracker(deps: TrackerDeps): Tracker {
  const { store, gitlab, client, config, log } = deps;
  const now = deps.now ?? (() => new Date());
  /** GitLab's updated_at of the newest change seen; undefined until the first pass. */
  let since: string | undefined;
  /**
   * Each pipeline's updated_at when it was last read. GitLab compares `updated_after` against
   * timestamps finer than the API shows, so the newest pipeline comes back on every list: this
   * keeps it from costing a jobs read each time.
   */
  const seen = new Map<number, string>();
  /** Pipelines whose last reading failed; read again on the next pass whatever the list says. */
  const retry = new Set<number>();
  /** Pipelines a webhook named since the last pass: read on the next one. */
  const hinted = new Set<number>();
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let wakeAgain = false;

  const poster = createThreadPoster({ client, effects: deps.effects, log });
  const notify = createNotifier({ config, post: poster });

  /**
   * Renders the request message (one Slack refused is rendered again on a later pass), then
   * calls in whoever's turn it is.
   */
  async function render(request: RequestRecord): Promise<void> {
    await renderRequestMessage(client, store, request, log);
    await notify(request);
  }

  const approvals = createApprovalFinisher({ store, gitlab, effects: deps.effects, log, render });
  const retries = createConfigureRetry({
    config,
    store,
    gitlab,
    effects: deps.effects,
    log,
    post: poster,
  });
  const closure = createClosure({
    config,
    store,
    gitlab,
    effects: deps.effects,
    log,
    render,
    post: poster,
    now,
  });

  function move(
    request: RequestRecord,
    to: RequestStatus,
    patch: Parameters<Store["transition"]>[3] = {},
  ): RequestRecord | undefined {
    const moved = store.transition(request.id, [request.status], to, patch);
    if (moved) {
      store.audit({ requestId: request.id, actor: "vmbot", action: to, detail: {} });
    }
    return moved;
  }

  /**
   * The part of a failed job's log that shows the failure (a Terraform job's first `Error:`
   * diagnostic, whole; else its last lines), cleaned and redacted, whether the log was cut at the
   * cap, and the failure's cause when the log shows one.
   */
  async function failureOf(
    job: Job,
    terraform: boolean,
  ): Promise<{
    excerpt: string;
    kind: "error" | "tail";
    truncated: boolean;
    finding: FailureFinding | undefined;
  }> {
    try {
      const read = await gitlab.jobLog(job.id, config.gitlab.logMaxBytes);
      const text = cleanTrace(read.text);
      // A Terraform job's root cause is its first `Error:` diagnostic, wherever it stands.
      const diagnostic = terraform ? parsePlanText(text).errors[0] : undefined;
      const finding = classifyFailure(text, diagnostic);
      if (diagnostic !== undefined) {
        const block = [`Error: ${diagnostic.summary}`, diagnostic.detail]
          .filter((part) => part.trim() !== "")
          .join("\n\n");
        const excerpt = deps.redact(block.slice(0, ERROR_EXCERPT_CHARS));
        return { excerpt, kind: "error", truncated: false, finding };
      }
      const lines = text.split("\n").filter((line) => line.trim() !== "");
      const excerpt = deps.redact(lines.slice(-LOG_TAIL_LINES).join("\n"));
      return { excerpt, kind: "tail", truncated: read.truncated, finding };
    } catch (error) {
      log.warn({ err: error, jobId: job.id }, "could not read a failed job's log");
      return { excerpt: "", kind: "tail", truncated: false, finding: undefined };
    }
  }

  async function fail(
    request: RequestRecord,
    words: string,
    failure?: FailureRecord,
  ): Promise<void> {
    const failed = move(request, "failed", {
      error: words,
      ...(failure === undefined ? {} : { failure }),
    });
    if (failed) await render(failed);
  }

  /**
   * A failed job ends the request: its cause in one sentence on the message, the excerpt that
   * shows it in the thread (a configure job's failed tasks are there already, in its recap), and
   * what the next step (Retry configure, Plan again) needs recorded.
   */
  async function failJob(
    request: RequestRecord,
    job: Job,
    stage: FailureRecord["stage"],
  ): Promise<void> {
    const { excerpt, kind, truncated, finding } = await failureOf(job, stage !== "configure");
    if (stage !== "configure" && excerpt !== "") {
      const cut = truncated ? tailCutWords(config.gitlab.logMaxBytes) : undefined;
      await postResult(
        request,
        `failure_excerpt:${job.id}`,
        failureExcerptWords(kind, excerpt, cut),
      );
    }
    const retries = request.failure?.retries;
    await fail(
      request,
      jobFailedWords(stage, job, finding === undefined ? undefined : causeWords(finding)),
      {
        stage,
        jobId: job.id,
        ...(finding === undefined ? {} : { cause: finding.cause }),
        ...(retries === undefined ? {} : { retries }),
      },
    );
  }

  const advanceDestroy = createDestroyAdvance({
    config,
    store,
    log,
    approvals,
    move: async (request, to, patch) => {
      const moved = move(request, to, patch);
      if (moved) await render(moved);
      return moved;
    },
    postResult: (request, step, text) => postResult(request, step, text),
  });

  /** Moves one request as far as its pipeline's jobs allow. */
  async function advance(request: RequestRecord, jobs: Job[]): Promise<void> {
    if (request.kind === "destroy") {
      await advanceDestroy(request, jobs);
      return;
    }
    const plan = jobs.find((job) => job.name === config.gitlab.jobs.plan);
    if (request.status === "queued" || request.status === "planning") {
      if (!plan) {
        await fail(
          request,
          `The pipeline has no job named \`${config.gitlab.jobs.plan}\`. Check GITLAB_PLAN_JOB, and that the job's rules accept pipelines created through the API (\`$CI_PIPELINE_SOURCE == "api"\`).`,
        );
        return;
      }
      if (plan.status === "success") {
        await reviewPlan(request, plan);
      } else if (STOPPED.has(plan.status)) {
        await failJob(request, plan, "plan");
      } else if (RUNNING.has(plan.status) && request.status === "queued") {
        const next = move(request, "planning");
        if (next) await render(next);
      }
      return;
    }
    const apply = jobs.find((job) => job.name === config.gitlab.jobs.apply);
    const configure = jobs.find((job) => job.name === config.gitlab.jobs.configure);
    if (request.status === "awaiting_approval") {
      if (apply && STOPPED.has(apply.status)) {
        const next = move(request, "canceled", {
          error: `The apply job was ${apply.status} in GitLab before anyone approved here.`,
        });
        if (next) await render(next);
      } else if (apply && (RUNNING.has(apply.status) || apply.status === "success")) {
        // Someone played the job in GitLab itself: follow it.
        const next = move(request, "applying");
        if (next) await render(next);
      }
      return;
    }
    if (request.status === "applying" && apply) {
      if (apply.status !== "manual") await approvals.settle(request, apply);
      if (STOPPED.has(apply.status)) {
        await failJob(request, apply, "apply");
      } else if (apply.status === "success") {
        const address = await vmAddress(apply.id);
        // The reply first: a crash after it finds it posted; a crash before it posts it.
        await postResult(
          request,
          "applied",
          `:gear: Terraform applied${address === undefined ? "" : `: the VM has address ${address}`}.`,
        );
        // The VM exists from here on, whatever configure does: into the inventory before the
        // move, so a crash between the two records it again, never misses it.
        store.inventory.record({
          name: request.spec.name,
          requestId: request.id,
          owner: request.requester,
          spec: request.spec,
          stateName: request.stateName,
          address: address ?? null,
          pipelineId: request.pipelineId,
          approvedBy: request.decision?.kind === "approved" ? request.decision.by : null,
          // VM_LEASE_DEFAULT from when Terraform made it; none when leases are off.
          leaseUntil: leaseEnd(config.lease, now()),
        });
        const next = move(request, configure ? "configuring" : "ready", {
          ...(address === undefined ? {} : { address }),
        });
        if (next) await render(next);
      } else if (apply.status === "manual" && request.decision?.kind === "approved") {
        // Approved here, but GitLab has not started the job (a crash, a lost answer): finish it.
        await approvals.playApproved(request, apply);
      }
      return;
    }
    if (request.status === "configuring" && configure) {
      if (request.failure !== null) {
        // Retried from Slack: settled first; the failed job itself is not followed again.
        const released = await retries.settle(request);
        if (released) await render(released);
        if (released || configure.id <= request.failure.jobId) return;
      }
      if (STOPPED.has(configure.status) || configure.status === "success") {
        await finishConfigure(request, configure);
      }
    }
  }

  /** The VM's address from the apply job's `vm_ip.txt` artifact, when there is one. */
  async function vmAddress(jobId: number): Promise<string | undefined> {
    try {
      const text = await gitlab.jobArtifact(jobId, "vm_ip.txt");
      const address = text?.trim().split(/\s+/)[0];
      return address === undefined || address === "" ? undefined : address.slice(0, 64);
    } catch (error) {
      log.warn({ err: error, jobId }, "could not read vm_ip.txt");
      return undefined;
    }
  }

  /** A message of the request's thread that `matches`, found through conversations.replies. */
  const findInThread = (request: RequestRecord, matches: (message: ListedMessage) => boolean) =>
    request.messageTs === null
      ? Promise.resolve(undefined)
      : findMessage(client, { channel: request.channel, threadTs: request.messageTs }, matches);

  const reviewPlan = createPlanReviewer({
    ...deps,
    now,
    findInThread,
    reviewed: async (request, review) => {
      const next = move(request, "awaiting_approval", { review });
      if (next) await render(next);
    },
  });

  /**
   * A reply in the request's thread, posted once: it carries metadata naming the request and the
   * step, so that after a crash the bot finds it in the thread instead of posting it again.
   */
  async function postResult(request: RequestRecord, step: string, text: string): Promise<void> {
    if (request.messageTs === null) return;
    const threadTs = request.messageTs;
    try {
      await deps.effects.once(request.id, `reply_${step}`, {
        reconcile: () =>
          findInThread(request, (message) => {
            const metadata = metadataOf(message);
            return (
              metadata?.eventType === STEP_EVENT_TYPE &&
              metadata.payload.request_id === request.id &&
              metadata.payload.step === step
            );
          }),
        act: async () => {
          const posted = await client.chat.postMessage({
            channel: request.channel,
            thread_ts: threadTs,
            text,
            metadata: {
              event_type: STEP_EVENT_TYPE,
              event_payload: { request_id: request.id, step },
            },
          });
          return { ts: posted.ts ?? "" };
        },
      });
    } catch (error) {
      log.warn({ err: error, requestId: request.id }, "could not post in the request's thread");
    }
  }

  async function finishConfigure(request: RequestRecord, job: Job): Promise<void> {
    const read = await gitlab.jobLog(job.id, config.gitlab.logMaxBytes);
    const run = parseAnsibleOutput(cleanTrace(read.text));
    const summary = read.truncated
      ? `${recapText(run)}\n${recapCutWords(config.gitlab.logMaxBytes, job.webUrl)}`
      : recapText(run);
    // A retried configure job posts its own recap.
    const again = request.failure === null ? "" : `:${job.id}`;
    if (job.status === "success") {
      await postResult(
        request,
        `configured${again}`,
        deps.redact(`:white_check_mark: Configured.\n${summary}`),
      );
      const next = move(request, "ready");
      if (next) await render(next);
      return;
    }
    await postResult(
      request,
      `configure_failed${again}`,
      deps.redact(`:x: Configuration failed.\n${summary}`),
    );
    await failJob(request, job, "configure");
  }

  /** The pipeline's jobs; undefined (and the request ended) when the pipeline is gone. */
  async function pipelineJobsOrGone(request: RequestRecord, pipelineId: number) {
    try {
      return await gitlab.pipelineJobs(pipelineId);
    } catch (error) {
      if (!(error instanceof VmbotError) || error.code !== "gitlab_not_found") throw error;
      await fail(
        request,
        `Pipeline #${pipelineId} no longer exists in GitLab (it was deleted), so nothing more will happen for this request. Run /vm create again if the VM is still needed.`,
      );
      return undefined;
    }
  }

  /** A closed request's pipeline: an apply played after the close is reported. */
  async function followClosed(request: RequestRecord, pipelineId: number): Promise<void> {
    try {
      await closure.follow(request, await gitlab.pipelineJobs(pipelineId));
    } catch (error) {
      if (!(error instanceof VmbotError) || error.code !== "gitlab_not_found") throw error;
      closure.forget(request);
    }
  }

  /** Plans that waited longer than PLAN_TTL: their messages turn to "expired". */
  async function expirePlans(unfinished: readonly RequestRecord[]): Promise<void> {
    for (const request of unfinished) {
      if (request.status !== "awaiting_approval") continue;
      if (!planExpired(request.review, config.planTtlMs, now())) continue;
      // Expired, its pipeline canceled and its plan deleted in GitLab, so it cannot be applied.
      await closure.expire(request);
    }
  }

  const leases = createLeaseKeeper({ ...deps, now });

  const latePipelines = createLatePipelines({
    store,
    gitlab,
    effects: deps.effects,
    log,
    note: postResult,
    now,
  });

  async function pass(): Promise<void> {
    // Housekeeping on the unfinished requests as they stand, then a fresh read for following.
    const unfinished = store.listActive();
    await deps.starter.resume(unfinished);
    await closure.finishPending();
    await finishNotices(store, notify);
    await latePipelines.sweep();
    await expirePlans(unfinished);
    await leases.check();
    // Rejected and expired requests too, while their apply job could still be played in GitLab.
    const active = [...store.listActive(), ...closure.watched()].flatMap((r) =>
      r.pipelineId === null ? [] : [{ request: r, pipelineId: r.pipelineId }],
    );
    /** Pipelines to read now, with the updated_at to remember once they are handled. */
    const toRead = new Map<number, string | undefined>();
    if (since === undefined) {
      // First pass after start: look at every unfinished request once, then only at changes.
      for (const { pipelineId } of active) toRead.set(pipelineId, undefined);
      since = new Date(now().getTime() - FIRST_LOOKBACK_MS).toISOString();
    } else {
      if (active.length === 0) return;
      for (const p of await gitlab.changedPipelines(since)) {
        if (seen.get(p.id) !== p.updatedAt) toRead.set(p.id, p.updatedAt);
        if (p.updatedAt > since) since = p.updatedAt;
      }
    }
    for (const id of retry) if (!toRead.has(id)) toRead.set(id, undefined);
    // GitLab moves a pipeline's updated_at only when its combined status changes: from the
    // apply job to the configure job it stays "running". Requests in those stages, and the
    // pipelines a Job Hook named, have their jobs read on every pass.
    for (const { request, pipelineId } of active) {
      const moving = request.status === "applying" || request.status === "configuring";
      if ((moving || hinted.has(pipelineId)) && !toRead.has(pipelineId)) {
        toRead.set(pipelineId, undefined);
      }
    }
    hinted.clear();
    const activeIds = new Set(active.map((a) => a.pipelineId));
    for (const id of seen.keys()) if (!activeIds.has(id)) seen.delete(id);

    const follow = async ({ request, pipelineId }: (typeof active)[number]): Promise<void> => {
      try {
        if (isClosed(request)) {
          await followClosed(request, pipelineId);
        } else {
          const jobs = await pipelineJobsOrGone(request, pipelineId);
          if (jobs === undefined) return;
          // Several stages may have finished since the last reading (GitLab does not touch a
          // pipeline's updated_at while it keeps running): take every step the jobs allow.
          let current: RequestRecord | undefined = request;
          for (let step = 0; current && step < MAX_STEPS_PER_PASS; step += 1) {
            const before: RequestStatus = current.status;
            await advance(current, jobs);
            current = store.getRequest(request.id);
            if (current?.status === before) break;
          }
        }
        retry.delete(pipelineId);
        const updatedAt = toRead.get(pipelineId);
        if (updatedAt !== undefined) seen.set(pipelineId, updatedAt);
      } catch (error) {
        // One request's trouble must not stop the others; it is read again on the next pass.
        retry.add(pipelineId);
        log
          .child({ requestId: request.id, pipelineId })
          .warn({ err: error, words: userMessage(error) }, "could not follow a pipeline");
      }
    };
    // A few at a time: one pipeline whose GitLab calls hang does not hold up the others.
    const queue = active.filter(({ pipelineId }) => toRead.has(pipelineId));
    const worker = async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) await follow(next);
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_READS, queue.length) }, worker));
  }

  async function tick(): Promise<void> {
    if (running) {
      wakeAgain = true;
      return running;
    }
    // First the messages Slack refused to update on earlier passes (finished requests' too).
    running = catchUpMessages({ client, store, log })
      .catch((error: unknown) => {
        log.warn({ err: error }, "could not catch up the request messages; retrying next pass");
      })
      .then(pass)
      .catch((error: unknown) => {
        log.warn({ err: error }, "tracker pass failed; retrying on the next one");
      })
      .finally(() => {
        running = undefined;
      });
    await running;
    if (wakeAgain && !stopped) {
      wakeAgain = false;
      await tick();
    }
  }

  function schedule(delay: number): void {
    clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(() => {
      void tick().finally(() => {
        schedule(config.pollIntervalMs);
      });
    }, delay);
  }

  return {
    tick,
    start() {
      stopped = false;
      schedule(0);
    },
    wake(pipelineId) {
      if (pipelineId !== undefined) hinted.add(pipelineId);
      schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
