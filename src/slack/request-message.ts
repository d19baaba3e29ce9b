import { slackErrorCode } from "./error-code.js";
import { createHash } from "node:crypto";
import type { webApi } from "@slack/bolt";
import { REQUEST_EVENT_TYPE } from "../ids.js";
import type { Logger } from "../logger.js";
import { FencedError } from "../store/postgres/leader.js";
import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import { renderRequest } from "../views/render.js";
import { couldNotUpdateWords } from "../views/request-message.js";

type SlackClient = webApi.WebClient;

/**
 * The one place that posts and updates a request's message. Every update records the revision
 * it showed; an update Slack refused leaves the message behind, and the tracker's next pass
 * renders it again. Replies in the request's thread go through `createThreadPoster`
 * (`./thread.ts`), once per step.
 */

/** Slack's answers after which no later edit of the message can succeed: not retried. */
const UNEDITABLE = new Set([
  "message_not_found",
  "channel_not_found",
  "is_archived",
  "cant_update_message",
  "edit_window_closed",
]);

/** A digest of a rendered message, to tell whether the message already shows it. */
export function messageDigest(message: ReturnType<typeof renderRequest>): string {
  return createHash("sha256").update(JSON.stringify(message)).digest("hex").slice(0, 32);
}

/** Records that the message shows `request` as it is (digest `digest`); never throws. */
export async function record(
  store: AsyncStore,
  request: RequestRecord,
  digest: string,
  log: Logger,
): Promise<void> {
  try {
    await store.markRendered(request.id, request.revision, digest);
  } catch (error) {
    // The message is right; the next pass renders it once more, which is harmless.
    log.warn({ err: error, requestId: request.id }, "could not record what the message shows");
  }
}

/** Posts the request's message in its channel, with the metadata that finds it after a crash. */
export async function postRequestMessage(
  client: SlackClient,
  request: RequestRecord,
): Promise<{ ts: string }> {
  const posted = await client.chat.postMessage({
    channel: request.channel,
    ...renderRequest(request),
    metadata: { event_type: REQUEST_EVENT_TYPE, event_payload: { request_id: request.id } },
  });
  if (posted.ts === undefined) throw new Error("chat.postMessage returned no ts");
  return { ts: posted.ts };
}

/**
 * How long an answer from the store stays news: one that took longer may have waited in the
 * socket while the process was paused (a stopped container, a long pause of the runtime), and
 * says what the request was then, not now.
 */
export const FRESH_ANSWER_MS = 1_000;

/** How many times a late answer is asked again before the update is sent anyway. */
const MOST_ASKS = 3;

/** Milliseconds on a clock that moves with real time and nothing else. */
export type Elapsed = () => number;

/**
 * Whether the store has moved on from `request` since it was read: whoever changed it renders
 * the newer state (or the leader's next pass, which renders every message behind the store), so
 * sending this one would only show an older state after a newer one. Asked right before the
 * update leaves, and asked again when the answer came late, so that a replica paused between
 * reading and sending (even with the answer waiting in its socket), or a render overtaken by a
 * later one, sends nothing when it goes on.
 */
async function overtaken(
  store: AsyncStore,
  request: RequestRecord,
  elapsed: Elapsed,
): Promise<boolean> {
  for (let asked = 1; ; asked += 1) {
    const sent = elapsed();
    const now = await store.getRequest(request.id);
    if (now !== undefined && now.revision > request.revision) return true;
    if (elapsed() - sent < FRESH_ANSWER_MS || asked === MOST_ASKS) return false;
  }
}

/**
 * Renders `request` into its message in place. False when Slack refused: the message stays
 * behind the store, and a later pass renders it again. True also when the store has moved on
 * since `request` was read: the newer state is rendered by whoever made it.
 */
export async function renderRequestMessage(
  client: SlackClient,
  store: AsyncStore,
  request: RequestRecord,
  log: Logger,
  elapsed: Elapsed = () => performance.now(),
): Promise<boolean> {
  if (request.messageTs === null) return true;
  const message = renderRequest(request);
  const digest = messageDigest(message);
  // A store that cannot answer does not keep the message back: the update is sent.
  if (await overtaken(store, request, elapsed).catch(() => false)) {
    log.debug({ requestId: request.id }, "the request changed again; its newer state is shown");
    return true;
  }
  try {
    await client.chat.update({ channel: request.channel, ts: request.messageTs, ...message });
  } catch (error) {
    // This replica no longer leads (its led client refused): the leader renders it.
    if (error instanceof FencedError) throw error;
    const code = slackErrorCode(error);
    if (code !== undefined && UNEDITABLE.has(code)) {
      log.warn(
        { err: error, requestId: request.id, code },
        "the request message can no longer be edited; giving up on it",
      );
      await record(store, request, digest, log);
    } else {
      log.error(
        { err: error, requestId: request.id },
        "could not update the request message; trying again on the next pass",
      );
    }
    return false;
  }
  await record(store, request, digest, log);
  return true;
}

/**
 * Re-renders the request message in place. When Slack refuses the update, the requester is
 * told directly, so a failure never hides behind a message that looks like it is still working.
 */
export async function updateRequestMessage(
  client: SlackClient,
  store: AsyncStore,
  request: RequestRecord,
  log: Logger,
): Promise<void> {
  if (request.messageTs === null) return;
  if (await renderRequestMessage(client, store, request, log)) return;
  // The tracker renders it again on its next passes; meanwhile the requester knows.
  log.error("could not update the request message; telling the requester");
  await client.chat
    .postMessage({ channel: request.requester, ...couldNotUpdateWords(request) })
    .catch((dmError: unknown) => {
      log.error({ err: dmError }, "could not tell the requester either");
    });
}
