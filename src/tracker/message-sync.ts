import { createHash } from "node:crypto";
import type { webApi } from "@slack/bolt";
import type { Logger } from "../logger.js";
import type { RequestRecord, Store } from "../store/store.js";
import { renderRequest } from "../views/render.js";

type SlackClient = webApi.WebClient;

/**
 * Keeps each request message showing what the store holds. Every render records the revision
 * it showed; a render Slack refused leaves the message behind, and the tracker's next pass
 * renders it again (`catchUpMessages`), for finished requests too.
 */

/** Slack's answers after which no later edit of the message can succeed: not retried. */
const UNEDITABLE = new Set([
  "message_not_found",
  "channel_not_found",
  "is_archived",
  "cant_update_message",
  "edit_window_closed",
]);

/** Requests caught up per pass, oldest change first. */
const CATCH_UP_PER_PASS = 20;

const slackErrorCode = (error: unknown): string | undefined => {
  const data = (error as { data?: { error?: unknown } } | undefined)?.data;
  return typeof data?.error === "string" ? data.error : undefined;
};

/** A digest of a rendered message, to tell whether the message already shows it. */
export function messageDigest(message: ReturnType<typeof renderRequest>): string {
  return createHash("sha256").update(JSON.stringify(message)).digest("hex").slice(0, 32);
}

/** Records that the message shows `request` as it is (digest `digest`); never throws. */
export function record(store: Store, request: RequestRecord, digest: string, log: Logger): void {
  try {
    store.markRendered(request.id, request.revision, digest);
  } catch (error) {
    // The message is right; the next pass renders it once more, which is harmless.
    log.warn({ err: error, requestId: request.id }, "could not record what the message shows");
  }
}

/**
 * Renders `request` into its message in place. False when Slack refused: the message stays
 * behind the store, and a later pass renders it again.
 */
export async function renderRequestMessage(
  client: SlackClient,
  store: Store,
  request: RequestRecord,
  log: Logger,
): Promise<boolean> {
  if (request.messageTs === null) return true;
  const message = renderRequest(request);
  const digest = messageDigest(message);
  try {
    await client.chat.update({ channel: request.channel, ts: request.messageTs, ...message });
  } catch (error) {
    const code = slackErrorCode(error);
    if (code !== undefined && UNEDITABLE.has(code)) {
      log.warn(
        { err: error, requestId: request.id, code },
        "the request message can no longer be edited; giving up on it",
      );
      record(store, request, digest, log);
    } else {
      log.error(
        { err: error, requestId: request.id },
        "could not update the request message; trying again on the next pass",
      );
    }
    return false;
  }
  record(store, request, digest, log);
  return true;
}

/** Renders again every request message that shows less than the store holds. */
export async function catchUpMessages(deps: {
  client: SlackClient;
  store: Store;
  log: Logger;
}): Promise<void> {
  for (const request of deps.store.listBehind(CATCH_UP_PER_PASS)) {
    const digest = messageDigest(renderRequest(request));
    if (request.renderedHash === digest) {
      // A change that does not show (e.g. the message's own ts): nothing to send.
      record(deps.store, request, digest, deps.log);
      continue;
    }
    await renderRequestMessage(deps.client, deps.store, request, deps.log);
  }
}
