import type { webApi } from "@slack/bolt";
import { PostedResultSchema, PostFailedSchema } from "../effect-results.js";
import type { Effects } from "../effects.js";
import { STEP_EVENT_TYPE } from "../ids.js";
import type { Logger } from "../logger.js";
import { PASSING_SLACK_ERRORS, slackErrorCode } from "../slack/error-code.js";
import { findDirectMessage } from "../slack/find.js";
import { postOnce } from "../slack/lost-answers.js";
import { metadataOf } from "../slack/metadata.js";
import type { AsyncStore } from "../store/async.js";
import type { RequestRecord } from "../store/store.js";

/**
 * The requester told, in a direct message, that their request's message could not be posted in
 * the channel: the only place they hear of it. Its intent is written with the request's move to
 * failed, so a crash before the message is sent sends it at the restart, and one after it finds
 * it in the requester's direct messages (by its metadata) rather than sending it twice. Slack
 * refusing it for good (the person deactivated, say) ends it; Slack or the network failing this
 * time leaves it for the next pass.
 */

export const NOT_POSTED_STEP = "tell_not_posted";

export interface NotPostedDeps {
  store: Pick<AsyncStore, "effect" | "pendingEffects" | "getRequest" | "complete">;
  client: Pick<webApi.WebClient, "chat" | "conversations">;
  effects: Effects;
  log: Logger;
}

/** Tells the requester of `request` (failed, its `error` the words), once. */
export async function tellNotPosted(
  deps: NotPostedDeps,
  request: RequestRecord,
  fresh: boolean,
): Promise<void> {
  const { client } = deps;
  const payload = { request_id: request.id, step: NOT_POSTED_STEP };
  const find = async () => {
    const since = (await deps.store.effect(request.id, NOT_POSTED_STEP))?.intendedAt;
    const oldest = String((Date.parse(since ?? request.updatedAt) - 60_000) / 1000);
    return findDirectMessage(client, request.requester, oldest, (message) => {
      const metadata = metadataOf(message);
      return (
        metadata?.eventType === STEP_EVENT_TYPE &&
        metadata.payload.request_id === payload.request_id &&
        metadata.payload.step === payload.step
      );
    });
  };
  const post = async () => {
    const posted = await client.chat.postMessage({
      channel: request.requester,
      text: request.error ?? `vmbot could not post your request for ${request.spec.name}.`,
      metadata: { event_type: STEP_EVENT_TYPE, event_payload: payload },
    });
    return { ts: posted.ts ?? "" };
  };
  try {
    await deps.effects.once(request.id, NOT_POSTED_STEP, {
      result: PostedResultSchema,
      fresh,
      reconcile: find,
      act: () => postOnce(post, find),
      settle: (error) => {
        const code = slackErrorCode(error);
        const final = code !== undefined && !PASSING_SLACK_ERRORS.has(code);
        return Promise.resolve(final ? { failed: code } : undefined);
      },
      failure: PostFailedSchema,
    });
  } catch (error) {
    deps.log.error({ err: error, requestId: request.id }, "could not tell the requester");
  }
}

/** The notices a crash or Slack cut short: sent now, or found sent already. */
export async function finishNotPosted(deps: NotPostedDeps): Promise<void> {
  for (const effect of await deps.store.pendingEffects()) {
    if (effect.step !== NOT_POSTED_STEP) continue;
    const request = await deps.store.getRequest(effect.subject);
    if (request === undefined) {
      await deps.store.complete(effect.subject, effect.step, { abandoned: "no request" });
      continue;
    }
    await tellNotPosted(deps, request, false);
  }
}
