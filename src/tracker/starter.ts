import { slackErrorCode } from "../slack/error-code.js";
import type { webApi } from "@slack/bolt";
import type { Config } from "../config.js";
import { EffectFailedError, type Effects } from "../effects.js";
import { VmbotError } from "../errors.js";
import { userMessage } from "../views/errors.js";
import type { GitlabPort } from "../gitlab/gitlab.js";
import { REQUEST_EVENT_TYPE } from "../ids.js";
import type { Logger } from "../logger.js";
import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import { findMessage } from "../slack/find.js";
import { postOnce } from "../slack/lost-answers.js";
import { metadataOf } from "../slack/metadata.js";
import { renderRequest } from "../views/render.js";
import { destroyParams } from "../destroy/params.js";
import { pipelineParams } from "../vm/spec.js";
import { LATE_WATCH_MS } from "./late-pipelines.js";
import { finishNotPosted, NOT_POSTED_STEP, tellNotPosted } from "./not-posted.js";
import {
  messageDigest,
  postRequestMessage as postMessage,
  record,
  updateRequestMessage,
} from "../slack/request-message.js";
import {
  PipelineCreatedSchema,
  PipelineFailedSchema,
  PipelineRecordedSchema,
  PostedResultSchema,
  PostFailedSchema,
} from "../effect-results.js";
import { notPostedWords, tookFirstPipelineNote } from "../views/request-notes.js";

type SlackClient = webApi.WebClient;

/**
 * Takes a stored request to its first two outside effects, each exactly once: the request
 * message in the channel, then the GitLab pipeline. Runs right after the form is submitted, and
 * again for any request a crash left without its message or pipeline.
 */
export interface RequestStarter {
  start(request: RequestRecord): Promise<void>;
  /**
   * Requests queued without a message or a pipeline (what a crash interrupted), among `active`,
   * the store's unfinished requests; and the requesters' notices that a message could not be
   * posted, which a crash or Slack cut short.
   */
  resume(active: readonly RequestRecord[]): Promise<void>;
}

export interface StarterDeps {
  config: Config;
  store: AsyncStore;
  gitlab: GitlabPort;
  client: SlackClient;
  effects: Effects;
  log: Logger;
}

/** How far back a restart looks for its own message and pipeline, around the intent's time. */
const LOOKBACK_MS = 5 * 60_000;

/** GitLab errors after which the pipeline may exist all the same (the answer was lost). */
const UNCERTAIN = new Set(["gitlab_timeout", "gitlab_unreachable", "gitlab_unavailable"]);

const before = (iso: string, ms: number) => new Date(Date.parse(iso) - ms).toISOString();

/** The request message a crash left unrecorded, found by its metadata in the channel. */
const findRequestMessage = (client: SlackClient, request: RequestRecord) =>
  findMessage(
    client,
    {
      channel: request.channel,
      oldest: String((Date.parse(request.createdAt) - LOOKBACK_MS) / 1000),
    },
    (message) => {
      const metadata = metadataOf(message);
      return (
        metadata?.eventType === REQUEST_EVENT_TYPE && metadata.payload.request_id === request.id
      );
    },
  );

async function postRequestMessage(
  deps: StarterDeps,
  request: RequestRecord,
): Promise<RequestRecord | undefined> {
  const { store, client, effects, log } = deps;
  let ts: string;
  try {
    ({ ts } = await effects.once(request.id, "post_request_message", {
      result: PostedResultSchema,
      reconcile: () => findRequestMessage(client, request),
      // A lost answer is read back before the message is posted again: it is posted once.
      act: () =>
        postOnce(
          () => postMessage(client, request),
          () => findRequestMessage(client, request),
        ),
      // Ended here: a run waiting for the step (another replica's) finds it failed, and neither
      // posts nor tells the requester again.
      settle: (error) => Promise.resolve({ failed: slackErrorCode(error) ?? "error" }),
      failure: PostFailedSchema,
    }));
  } catch (error) {
    return postFailed(deps, request, error);
  }
  try {
    const posted = await store.updateRequest(request.id, { messageTs: ts });
    // What was posted is what the request held: the message is not behind.
    if ((await store.effect(request.id, "post_request_message"))?.result?.reconciled !== true) {
      await record(store, posted, messageDigest(renderRequest(request)), log);
    }
    return posted;
  } catch (error) {
    // The message is in the channel: the request stays queued, and the next pass records it.
    log.warn({ err: error }, "could not record the posted request message yet");
    return undefined;
  }
}

/**
 * The request message could not be posted, by this run or by another that ended the step as
 * failed (EffectFailedError). The move and its audit entry are one conditional write, so whichever
 * run gets there first tells the requester, once.
 */
async function postFailed(deps: StarterDeps, request: RequestRecord, error: unknown) {
  const { store, log } = deps;
  const elsewhere =
    error instanceof EffectFailedError ? PostFailedSchema.safeParse(error.result) : undefined;
  // Slack's error code, read from the step another run ended ("error": none was given).
  const recorded = elsewhere?.success === true ? elsewhere.data.failed : undefined;
  const reason =
    recorded === undefined ? slackErrorCode(error) : recorded === "error" ? undefined : recorded;
  if (elsewhere === undefined) log.error({ err: error }, "could not post the request message");
  // A failure outside the act (the store, a look-up) has not ended the step yet.
  if ((await store.effect(request.id, "post_request_message"))?.state !== "done") {
    await store.complete(request.id, "post_request_message", { failed: reason ?? "error" });
  }
  const message = notPostedWords(request, reason);
  // The requester's notice is intended in the same write: a crash before it is sent sends it.
  const failed = await store.transition(
    request.id,
    ["queued"],
    "failed",
    { error: message },
    { step: NOT_POSTED_STEP },
    { actor: "vmbot", action: "failed", detail: { reason } },
  );
  if (failed !== undefined) await tellNotPosted({ ...deps, log }, failed, true);
  return undefined;
}

/** What a create attempt knows before it calls GitLab: when it was meant, and how to look. */
async function createAttempt(deps: StarterDeps, request: RequestRecord) {
  const { store, gitlab } = deps;
  const earlier = await store.effect(request.id, "create_pipeline");
  const intended = earlier?.intendedAt ?? request.createdAt;
  // A crash left a create in flight: GitLab may still make that one visible after this
  // attempt, and the tracker keeps looking for it for a while (late-pipelines.ts).
  const leftInFlight = earlier?.state === "intended";
  const watch = async () => ({
    watchUntil: new Date(
      Date.parse((await store.effect(request.id, "create_pipeline"))?.intendedAt ?? intended) +
        LATE_WATCH_MS,
    ).toISOString(),
  });
  const find = async () => {
    const found = await gitlab.findPipeline(request.id, before(intended, 60_000));
    return found === undefined
      ? undefined
      : { id: found.id, webUrl: found.webUrl, sure: found.sure };
  };
  return { leftInFlight, watch, find };
}

type CreateAttempt = Awaited<ReturnType<typeof createAttempt>>;

async function triggerPipeline(deps: StarterDeps, request: RequestRecord, attempt: CreateAttempt) {
  const { config } = deps;
  const { leftInFlight, watch, find } = attempt;
  try {
    const shape = {
      sizing: config.gitlab.sizingParams,
      numberInputs: config.gitlab.numberInputs,
    };
    // A destroy request sends the VM's recorded inputs with action=destroy.
    const params =
      request.kind === "destroy"
        ? destroyParams(request.spec, shape, request.stateName)
        : pipelineParams(request.spec, shape, request.stateName);
    const created = await deps.gitlab.triggerPipeline(params, request.id);
    return {
      id: created.id,
      webUrl: created.webUrl,
      sure: true,
      ...(leftInFlight ? await watch() : {}),
    };
  } catch (error) {
    // The answer may be lost while the pipeline exists: look before calling it failed.
    if (!(error instanceof VmbotError) || !UNCERTAIN.has(error.code)) throw error;
    const found = await find().catch((readError: unknown) => {
      deps.log.warn(
        { err: readError },
        "could not look for the pipeline after GitLab's answer was lost; one that shows up later is canceled",
      );
      return undefined;
    });
    if (found === undefined) throw error;
    return { ...found, ...(leftInFlight ? await watch() : {}) };
  }
}

/**
 * Records the created pipeline on the request and audits it, once whoever gets there: the replica
 * that created it, or another finishing the request (a leader's recovery, or after a crash), which
 * finds the record already made.
 */
async function recordPipeline(
  deps: StarterDeps,
  request: RequestRecord,
  pipeline: { id: number; webUrl: string; sure: boolean },
): Promise<RequestRecord> {
  const { store } = deps;
  const id = pipeline.id;
  const recorded = async () => {
    const current = await store.getRequest(request.id);
    const audited = (await store.listAudit(request.id)).some(
      (entry) => entry.action === "pipeline_created",
    );
    return current?.pipelineId === id && audited ? { pipelineId: id } : undefined;
  };
  await deps.effects.once(request.id, "record_pipeline", {
    result: PipelineRecordedSchema,
    reconcile: recorded,
    act: async () => {
      const notes = !pipeline.sure ? [...request.notes, tookFirstPipelineNote(id)] : undefined;
      await store.updateRequest(request.id, {
        pipelineId: id,
        pipelineUrl: pipeline.webUrl,
        ...(notes === undefined ? {} : { notes }),
      });
      await store.audit({
        requestId: request.id,
        actor: "vmbot",
        action: "pipeline_created",
        detail: {
          pipelineId: id,
          webUrl: pipeline.webUrl,
          ...((await store.effect(request.id, "create_pipeline"))?.result?.reconciled === true
            ? { reconciled: true }
            : {}),
        },
      });
      deps.log.info({ pipelineId: id }, "pipeline created");
      return { pipelineId: id };
    },
  });
  return (await store.getRequest(request.id)) ?? request;
}

/** What a failed create ends its step with: the error, and a watch for a late pipeline. */
async function pipelineFailure(attempt: CreateAttempt, error: unknown) {
  const code = error instanceof VmbotError ? error.code : "internal";
  return {
    failed: code,
    words: userMessage(error),
    // GitLab may still create it: the tracker cancels one that lands late.
    ...(attempt.leftInFlight || UNCERTAIN.has(code) ? await attempt.watch() : {}),
  };
}

/**
 * The request failed: by this run's create, or by another's that ended the step as failed
 * (EffectFailedError; a replica that acted, perhaps gone before it said so). The move and its
 * audit entry are one conditional write, so whichever run gets there first tells it, once.
 */
async function pipelineFailed(
  deps: StarterDeps,
  request: RequestRecord,
  attempt: CreateAttempt,
  error: unknown,
): Promise<RequestRecord> {
  const { store } = deps;
  const elsewhere =
    error instanceof EffectFailedError ? PipelineFailedSchema.safeParse(error.result) : undefined;
  const ended =
    elsewhere?.success === true ? elsewhere.data : await pipelineFailure(attempt, error);
  if (elsewhere === undefined) {
    deps.log.error({ err: error, code: ended.failed }, "could not create the pipeline");
  }
  // A failure outside the act (the store, a look-up) has not ended the step yet.
  if ((await store.effect(request.id, "create_pipeline"))?.state !== "done") {
    await store.complete(request.id, "create_pipeline", ended);
  }
  const entry = { actor: "vmbot", action: "failed", detail: { code: ended.failed } };
  const failed = await store.transition(
    request.id,
    ["queued"],
    "failed",
    { error: ended.words ?? userMessage(error) },
    undefined,
    entry,
  );
  if (failed !== undefined) return failed;
  const current = (await store.getRequest(request.id)) ?? request;
  // Withdrawn meanwhile: the request keeps that end, and the run that acted still audits that
  // the pipeline failed.
  if (elsewhere === undefined && current.status !== "failed") {
    await store.audit({ requestId: request.id, ...entry });
  }
  return current;
}

async function createPipeline(deps: StarterDeps, request: RequestRecord): Promise<RequestRecord> {
  const attempt = await createAttempt(deps, request);
  try {
    const pipeline = await deps.effects.once(request.id, "create_pipeline", {
      result: PipelineCreatedSchema,
      reconcile: attempt.find,
      act: () => triggerPipeline(deps, request, attempt),
      // Ended here, not left for the led work waiting on the claim to try again.
      settle: (error) => pipelineFailure(attempt, error),
      failure: PipelineFailedSchema,
    });
    return await recordPipeline(deps, request, pipeline);
  } catch (error) {
    return pipelineFailed(deps, request, attempt, error);
  }
}

export function createRequestStarter(deps: StarterDeps): RequestStarter {
  const { store, client } = deps;
  const starting = new Map<string, Promise<void>>();

  async function run(initial: RequestRecord): Promise<void> {
    let request = initial;
    if (request.messageTs === null) {
      const posted = await postRequestMessage(deps, request);
      // Not posted, or ended meanwhile by another run: no pipeline.
      if (posted?.status !== "queued") return;
      request = posted;
    }
    // A lease extension has no pipeline: its message is all it needs (extend/waiting.ts).
    if (request.kind === "extend") return;
    if (request.pipelineId === null) request = await createPipeline(deps, request);
    await updateRequestMessage(client, store, request, deps.log.child({ requestId: request.id }));
  }

  const start = (request: RequestRecord): Promise<void> => {
    let inflight = starting.get(request.id);
    if (inflight === undefined) {
      inflight = run(request).finally(() => starting.delete(request.id));
      starting.set(request.id, inflight);
    }
    return inflight;
  };

  return {
    start,
    async resume(active) {
      const unstarted = active.filter(
        (r) =>
          r.status === "queued" &&
          (r.messageTs === null || (r.pipelineId === null && r.kind !== "extend")),
      );
      // Side by side: a request another replica is starting now (a form just submitted there)
      // is waited for through its claims, and that wait holds up none of the others.
      await Promise.all(
        unstarted.map((request) =>
          start(request).catch((error: unknown) => {
            deps.log.warn({ err: error, requestId: request.id }, "could not resume a request");
          }),
        ),
      );
      await finishNotPosted(deps);
    },
  };
}
