import type { webApi } from "@slack/bolt";
import type { Logger } from "../logger.js";
import { messageDigest, record, renderRequestMessage } from "../slack/request-message.js";
import type { AsyncStore } from "../store/async.js";
import { renderRequest } from "../views/render.js";

type SlackClient = webApi.WebClient;

/**
 * Keeps each request message showing what the store holds: a render Slack refused leaves the
 * message behind (`slack/request-message.ts` records what each render showed), and the
 * tracker's next pass renders it again, for finished requests too.
 */

/** Requests caught up per pass, oldest change first. */
const CATCH_UP_PER_PASS = 20;

/** Renders again every request message that shows less than the store holds. */
export async function catchUpMessages(deps: {
  client: SlackClient;
  store: AsyncStore;
  log: Logger;
}): Promise<void> {
  for (const request of await deps.store.listBehind(CATCH_UP_PER_PASS)) {
    const digest = messageDigest(renderRequest(request));
    if (request.renderedHash === digest) {
      // A change that does not show (e.g. the message's own ts): nothing to send.
      await record(deps.store, request, digest, deps.log);
      continue;
    }
    await renderRequestMessage(deps.client, deps.store, request, deps.log);
  }
}
