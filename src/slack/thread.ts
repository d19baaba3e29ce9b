import type { webApi } from "@slack/bolt";
import type { Effects } from "../effects.js";
import { STEP_EVENT_TYPE } from "../ids.js";
import type { Logger } from "../logger.js";
import type { RequestRecord } from "../store/store.js";
import { findMessage } from "./find.js";
import { postOnce } from "./lost-answers.js";
import { metadataOf } from "./metadata.js";
import { PostedResultSchema } from "../effect-results.js";

/**
 * Posts a reply in a request's thread once per (request, step): the reply carries metadata naming
 * both, so that after a crash it is found in the thread instead of being posted again.
 */
export type ThreadPoster = (request: RequestRecord, step: string, text: string) => Promise<void>;

export function createThreadPoster(deps: {
  client: Pick<webApi.WebClient, "chat" | "conversations">;
  effects: Effects;
  log: Logger;
}): ThreadPoster {
  return async (request, step, text) => {
    if (request.messageTs === null) return;
    const where = { channel: request.channel, threadTs: request.messageTs };
    const find = () =>
      findMessage(deps.client, where, (message) => {
        const metadata = metadataOf(message);
        return (
          metadata?.eventType === STEP_EVENT_TYPE &&
          metadata.payload.request_id === request.id &&
          metadata.payload.step === step
        );
      });
    try {
      await deps.effects.once(request.id, `reply_${step}`, {
        result: PostedResultSchema,
        reconcile: find,
        // A lost answer is read back before the reply is posted again: it is posted once.
        act: () =>
          postOnce(async () => {
            const posted = await deps.client.chat.postMessage({
              channel: where.channel,
              thread_ts: where.threadTs,
              text,
              metadata: {
                event_type: STEP_EVENT_TYPE,
                event_payload: { request_id: request.id, step },
              },
            });
            return { ts: posted.ts ?? "" };
          }, find),
      });
    } catch (error) {
      deps.log.warn(
        { err: error, requestId: request.id },
        "could not post in the request's thread",
      );
    }
  };
}
