import { oneAtATime } from "../requests/one-at-a-time.js";
import type { webApi } from "@slack/bolt";
import type { Access } from "../access.js";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Effects } from "../effects.js";
import { FencedError } from "../store/postgres/leader.js";
import { userMessage } from "../views/errors.js";
import type { GitlabPort } from "../gitlab/gitlab.js";
import type { Logger } from "../logger.js";
import type { NodeDirectory } from "../proxmox/directory.js";
import type { Redactor } from "../redact.js";
import { findMessage, type ListedMessage } from "../slack/find.js";
import { createThreadPoster } from "../slack/thread.js";
import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import { createAdvance, move } from "./advance.js";
import { createClosure } from "./closure.js";
import { createDestroyAdvance } from "./destroy-advance.js";
import { expirePlans } from "./expiry.js";
import { createLatePipelines } from "./late-pipelines.js";
import { createLeaseKeeper } from "./leases.js";
import { finishClaimedExtensions } from "../extend/finish.js";
import { awaitPostedExtensions } from "../extend/waiting.js";
import { renderRequestMessage } from "../slack/request-message.js";
import { catchUpMessages } from "./message-sync.js";
import { createNotifier } from "./notify.js";
import { createApprovalFinisher } from "./play.js";
import { dropLapsed, waitingApprovals } from "../policy/approval-step.js";
import { createPlanReviewer } from "./plan-review.js";
import { createRecovery } from "./recovery.js";
import { createConfigureRetry } from "./retry-configure.js";
import { createScheduler } from "./scheduler.js";
import type { RequestStarter } from "./starter.js";

type SlackClient = webApi.WebClient;

export interface TrackerDeps {
  config: Config;
  store: AsyncStore;
  gitlab: GitlabPort;
  client: SlackClient;
  log: Logger;
  redact: Redactor;
  effects: Effects;
  /** Finishes requests a crash left without their message or pipeline. */
  starter: RequestStarter;
  /** The policy in force and people's groups: the approvals a request needs. */
  access: Pick<Access, "policy" | "groupsOf">;
  /** Live Proxmox, for the nodes' load when the plan brings none (no `node_resources`). */
  nodes?: NodeDirectory | undefined;
  now: Clock;
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

/**
 * How far behind the newest change seen the first list after a start looks, and one list a
 * minute (`LOOK_BACK_EVERY_MS`). Rails sets a row's updated_at before its transaction commits, so
 * a change can become visible after a later one was listed, its updated_at older than what the
 * next list asks for; `seen` keeps the changes listed again from costing a read.
 */
const LOOK_BACK_MS = 60_000;
const LOOK_BACK_EVERY_MS = 60_000;
/** Pipelines followed at once in a pass. */
const PARALLEL_READS = 4;

interface Followed {
  request: RequestRecord;
  pipelineId: number;
}

/** The tracker's parts, wired over one Slack client, one journal and one clock. */
function createParts(deps: TrackerDeps) {
  const { store, gitlab, client, config, log, now } = deps;
  const post = createThreadPoster({ client, effects: deps.effects, log });
  const notify = createNotifier({ config, post });
  /**
   * Renders the request message (one Slack refused is rendered again on a later pass), then
   * calls in whoever's turn it is.
   */
  const render = async (request: RequestRecord): Promise<void> => {
    await renderRequestMessage(client, store, request, log);
    await notify(request);
  };
  const effects = deps.effects;
  const closure = createClosure({ config, store, gitlab, effects, log, render, post, now });
  /** A message of the request's thread that `matches`, found through conversations.replies. */
  const findInThread = (request: RequestRecord, matches: (message: ListedMessage) => boolean) =>
    request.messageTs === null
      ? Promise.resolve(undefined)
      : findMessage(client, { channel: request.channel, threadTs: request.messageTs }, matches);
  const reviewPlan = createPlanReviewer({
    ...deps,
    findInThread,
    reviewed: async (request, review) => {
      const next = await move(store, request, "awaiting_approval", { review });
      if (next) await render(next);
    },
  });
  const approvals = createApprovalFinisher({ store, gitlab, effects, log, render });
  const advanceDestroy = createDestroyAdvance({
    config,
    store,
    log,
    approvals,
    waiting: async (request) => {
      const { approvers, approvals: shown } = await waitingApprovals(
        { access: deps.access, store },
        request,
        now(),
      );
      // One approval decides: nothing to count on the message, only whom to call.
      return { approvals: shown ?? { tally: "", by: [], notes: [], approvers } };
    },
    move: async (request, to, patch, intent) => {
      const moved = await move(store, request, to, patch, intent);
      if (moved) await render(moved);
      return moved;
    },
    postResult: post,
    render,
  });
  const advance = createAdvance({
    ...deps,
    post,
    render,
    closure,
    reviewPlan,
    approvals,
    advanceDestroy,
    retries: createConfigureRetry({ config, store, gitlab, effects, log, post }),
  });
  const latePipelines = createLatePipelines({ store, gitlab, effects, log, note: post, now });
  const recovery = createRecovery({ store, starter: deps.starter, closure, notify, latePipelines });
  const leases = createLeaseKeeper({ ...deps, now });
  /** Approvals older than their rule allows are removed on every pass, with a note. */
  const lapse = async (unfinished: readonly RequestRecord[]) => {
    for (const request of unfinished) {
      const moved = await oneAtATime(store, request.id, () =>
        dropLapsed({ access: deps.access, store }, request, now()),
      );
      if (moved) await render(moved);
    }
  };
  /** Lease extensions a crash left posted but not waiting, or approved but not finished. */
  const extensions = async () => {
    for (const moved of await awaitPostedExtensions({ access: deps.access, store }, now())) {
      await render(moved);
    }
    for (const ended of await finishClaimedExtensions({ store, effects, log })) {
      await render(ended);
    }
  };
  return { closure, advance, recovery, leases, lapse, extensions };
}

/** GitLab's timestamp in milliseconds; undefined for one that is none (a proxy's mangling). */
function timeOf(text: string | undefined): number | undefined {
  const at = text === undefined ? Number.NaN : Date.parse(text);
  return Number.isFinite(at) ? at : undefined;
}

/**
 * Which pipelines a pass reads: at the first pass every followed one, then only those GitLab
 * says changed since the newest change seen, those followed for the first time, those whose
 * last reading failed, those a webhook named, and those in stages where GitLab does not move a
 * pipeline's updated_at.
 */
function createReadList(gitlab: GitlabPort, now: Clock) {
  /**
   * GitLab's updated_at of the newest change seen, in milliseconds (at the first pass, of its
   * last pipeline change); undefined until the first pass.
   */
  let newest: number | undefined;
  /** When, by this replica's clock, a list last looked back. */
  let lookedBack = 0;
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
  /**
   * The pipelines the last pass followed. One that is new to a pass is read whatever the list
   * says: its request may have got its ID after GitLab's last list showing it change (the
   * answer to the trigger came while a pass was listing, or a recovery found the pipeline).
   */
  let followed = new Set<number>();

  /** Pipelines to read on this pass, with the updated_at to remember once they are handled. */
  async function select(active: readonly Followed[]) {
    const toRead = new Map<number, string | undefined>();
    if (active.length === 0) return undefined;
    if (newest === undefined) {
      // First pass after start: look at every unfinished request once, then only at changes
      // after GitLab's last one by GitLab's clock: this replica's may run ahead of it.
      newest = timeOf(await gitlab.lastPipelineChange()) ?? now().getTime();
      for (const { pipelineId } of active) toRead.set(pipelineId, undefined);
      lookedBack = now().getTime();
    } else {
      const lookBack = now().getTime() - lookedBack >= LOOK_BACK_EVERY_MS;
      if (lookBack) lookedBack = now().getTime();
      const since = new Date(newest - (lookBack ? LOOK_BACK_MS : 0)).toISOString();
      for (const p of await gitlab.changedPipelines(since)) {
        if (seen.get(p.id) !== p.updatedAt) toRead.set(p.id, p.updatedAt);
        newest = Math.max(newest, timeOf(p.updatedAt) ?? newest);
      }
    }
    for (const id of retry) if (!toRead.has(id)) toRead.set(id, undefined);
    // GitLab moves a pipeline's updated_at only when its combined status changes: from the
    // apply job to the configure job it stays "running". Requests in those stages, and the
    // pipelines a Job Hook named, have their jobs read on every pass.
    for (const { request, pipelineId } of active) {
      const moving = request.status === "applying" || request.status === "configuring";
      const first = !followed.has(pipelineId);
      if ((moving || first || hinted.has(pipelineId)) && !toRead.has(pipelineId)) {
        toRead.set(pipelineId, undefined);
      }
    }
    hinted.clear();
    followed = new Set(active.map((a) => a.pipelineId));
    for (const id of seen.keys()) if (!followed.has(id)) seen.delete(id);
    return toRead;
  }

  return {
    select,
    hint: (pipelineId: number) => hinted.add(pipelineId),
    /** The pipeline was read and handled: remembered as seen at `updatedAt`, when known. */
    read(pipelineId: number, updatedAt: string | undefined) {
      retry.delete(pipelineId);
      if (updatedAt !== undefined) seen.set(pipelineId, updatedAt);
    },
    failed: (pipelineId: number) => retry.add(pipelineId),
    /** Started again (this replica leads once more): the next pass reads every followed one. */
    restart() {
      newest = undefined;
      seen.clear();
      followed.clear();
    },
  };
}

export function createTracker(deps: TrackerDeps): Tracker {
  const { store, client, config, log, now } = deps;
  const { closure, advance, recovery, leases, lapse, extensions } = createParts(deps);
  const reads = createReadList(deps.gitlab, now);

  async function pass(): Promise<void> {
    // Housekeeping on the unfinished requests as they stand, then a fresh read for following.
    const unfinished = await store.listActive();
    await recovery.sweep(unfinished);
    await expirePlans({ closure, planTtlMs: config.planTtlMs, now }, unfinished);
    await lapse(await store.listByStatus(["awaiting_approval"]));
    await leases.check();
    await extensions();
    // Rejected and expired requests too, while their apply job could still be played in GitLab.
    const active = [...(await store.listActive()), ...(await closure.watched())].flatMap((r) =>
      r.pipelineId === null ? [] : [{ request: r, pipelineId: r.pipelineId }],
    );
    const toRead = await reads.select(active);
    if (toRead === undefined) return;
    const follow = async ({ request, pipelineId }: Followed): Promise<void> => {
      try {
        await advance.follow(request, pipelineId);
        reads.read(pipelineId, toRead.get(pipelineId));
      } catch (error) {
        reads.failed(pipelineId);
        // Another replica leads now: this pass ends here, writing nothing more. What it had
        // still to read is read on a later pass, if this replica leads again meanwhile.
        if (error instanceof FencedError) {
          for (const left of queue.splice(0)) reads.failed(left.pipelineId);
          throw error;
        }
        // One request's trouble must not stop the others; it is read again on the next pass.
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

  const scheduler = createScheduler(
    // First the messages Slack refused to update on earlier passes (finished requests' too).
    () =>
      catchUpMessages({ client, store, log })
        .catch((error: unknown) => {
          if (error instanceof FencedError) throw error;
          log.warn({ err: error }, "could not catch up the request messages; retrying next pass");
        })
        .then(pass)
        .catch((error: unknown) => {
          if (error instanceof FencedError) {
            log.info(
              { err: error },
              "another replica leads: this pass ended, writing nothing more",
            );
            return;
          }
          log.warn({ err: error }, "tracker pass failed; retrying on the next one");
        }),
    config.pollIntervalMs,
  );

  return {
    tick: () => scheduler.tick(),
    start() {
      reads.restart();
      scheduler.start();
    },
    wake(pipelineId) {
      if (pipelineId !== undefined) reads.hint(pipelineId);
      scheduler.wake();
    },
    stop: () => scheduler.stop(),
  };
}
