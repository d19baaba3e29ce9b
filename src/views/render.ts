import type { types } from "@slack/bolt";
import type { RequestRecord } from "../store/store.js";
import { destroyMessage } from "./destroy.js";
import { extendMessage } from "./extend.js";
import { planMessage } from "./plan-message.js";
import { requestMessage } from "./request-message.js";

/** The request message for whatever stage a request is in. */
export function renderRequest(request: RequestRecord): {
  text: string;
  blocks: types.KnownBlock[];
} {
  if (request.kind === "destroy") return destroyMessage(request);
  if (request.kind === "extend") return extendMessage(request);
  if (request.review === null) return requestMessage(request);
  return planMessage(request, {
    // The stored JSON drops an undefined `counts`; the view wants the key.
    plan: { ...request.review.plan, counts: request.review.plan.counts },
    nodes: request.review.nodes,
    planJobUrl: request.review.planJobUrl,
    planFile: request.review.planFile,
    logCutAt: request.review.logCutAt,
  });
}
