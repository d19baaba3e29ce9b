import type { Clock } from "../clock.js";
import type { Effects } from "../effects.js";
import type { GitlabPort, Pipeline } from "../gitlab/gitlab.js";
import type { Logger } from "../logger.js";
import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import { LateCanceledResultSchema } from "../effect-results.js";
import { latePipelineWords } from "../views/request-notes.js";

/**
 * Pipelines GitLab made visible late. A create whose answer was lost (the bot was killed with
 * `POST /pipeline` in flight, or GitLab timed out) may land after the bot looked for it and
 * created another, or after it told the requester the create failed. For a while after such a
 * create, every pass looks for pipelines carrying the request's VMBOT_REQUEST_ID: the one the
 * request follows is kept, any other is canceled (before its plan can be approved in GitLab),
 * audited and said in the request's thread.
 */
export interface LatePipelinesDeps {
  store: AsyncStore;
  gitlab: GitlabPort;
  effects: Effects;
  log: Logger;
  /** Posts a note in the request's thread, once per step. */
  note: (request: RequestRecord, step: string, text: string) => Promise<void>;
  now: Clock;
}

/** How long after an uncertain create the bot keeps looking for a late pipeline. */
export const LATE_WATCH_MS = 10 * 60_000;

/** Pipeline states after which a cancel changes nothing. */
const ENDED = new Set(["canceled", "success", "failed", "skipped"]);

const before = (iso: string, ms: number) => new Date(Date.parse(iso) - ms).toISOString();

export function createLatePipelines(deps: LatePipelinesDeps): { sweep(): Promise<void> } {
  const { store, gitlab, log } = deps;
  /** Per request, the pipelines already looked at (not its own, or handled). */
  const looked = new Map<string, Set<number>>();

  async function cancelLate(request: RequestRecord, late: Pipeline): Promise<void> {
    const step = `cancel_late_pipeline:${late.id}`;
    if ((await store.effect(request.id, step))?.state === "done") return;
    const result = await deps.effects.once(request.id, step, {
      result: LateCanceledResultSchema,
      reconcile: async () => {
        const read = await gitlab.pipeline(late.id);
        return ENDED.has(read.status) ? { status: read.status } : undefined;
      },
      act: async () => ({ status: (await gitlab.cancelPipeline(late.id)).status }),
    });
    const kept = request.pipelineId;
    await store.audit({
      requestId: request.id,
      actor: "vmbot",
      action: "late_pipeline_canceled",
      detail: { pipelineId: late.id, kept, status: result.status },
    });
    log.warn(
      { requestId: request.id, pipelineId: late.id, kept },
      "canceled a pipeline GitLab created late for a request that has another",
    );
    await deps.note(request, `late_pipeline:${late.id}`, latePipelineWords(late.id, kept));
  }

  async function sweep(): Promise<void> {
    const watched = await store.watchedEffects("create_pipeline", deps.now().toISOString());
    const live = new Set(watched.map((effect) => effect.subject));
    for (const id of looked.keys()) if (!live.has(id)) looked.delete(id);
    for (const effect of watched) {
      const request = await store.getRequest(effect.subject);
      if (request === undefined) continue;
      const seen = looked.get(request.id) ?? new Set<number>();
      looked.set(request.id, seen);
      try {
        const found = await gitlab.requestPipelines(
          request.id,
          before(effect.intendedAt, 60_000),
          seen,
        );
        const mine = new Set(found.pipelines.map((p) => p.id));
        for (const id of found.looked) if (!mine.has(id)) seen.add(id);
        for (const pipeline of found.pipelines) {
          if (pipeline.id !== request.pipelineId) await cancelLate(request, pipeline);
          seen.add(pipeline.id);
        }
      } catch (error) {
        log.warn(
          { err: error, requestId: request.id },
          "could not look for late pipelines; looking again on the next pass",
        );
      }
    }
  }

  return { sweep };
}
