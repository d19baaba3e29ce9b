/**
 * Delivers requests to the bot's request URL (`/slack/events`) the way Slack does:
 * a form-encoded body, `X-Slack-Request-Timestamp`, and `X-Slack-Signature:
 * v0=<hex HMAC-SHA256 of "v0:{timestamp}:{body}" keyed with the signing secret>`.
 *
 * trigger_ids and response_urls come from the fake Slack Web API, so a modal the
 * bot opens with them is checked against the same rules Slack applies.
 */
import { type JsonObject } from "./types.js";
import {
  appHomeOpenedEvent,
  eventEnvelope,
  actionObject,
  actionSurface,
  DEFAULT_VERIFICATION_TOKEN,
  deliver,
  interactionEnvelope,
  locateElement,
  parseAck,
  payloadBody,
  type PayloadContext,
  slashCommandBody,
  submittedView,
} from "./payloads.js";
import { type DeliveryOptions, type SlackSigner, type SlackSignerOptions } from "./signer-types.js";

export { slackSignature } from "./payloads.js";
export type * from "./signer-types.js";
export { stateValues, stateValuesFor } from "./view-state.js";

/** A client that posts signed slash commands and interactions to the bot, as Slack does. */
export function createSlackSigner(options: SlackSignerOptions): SlackSigner {
  const { slack } = options;
  const ctx: PayloadContext = {
    slack,
    team: {
      id: options.teamId ?? slack.identity.teamId,
      domain: options.teamDomain ?? slack.identity.teamDomain,
    },
    appId: options.appId ?? slack.identity.appId,
    token: options.verificationToken ?? DEFAULT_VERIFICATION_TOKEN,
  };
  const send = (body: string, delivery: DeliveryOptions & { contentType?: string } = {}) => {
    options.onSend?.({
      body,
      contentType: delivery.contentType ?? "application/x-www-form-urlencoded",
    });
    return deliver(options.eventsUrl, options.signingSecret, body, delivery);
  };

  const interact = async (payload: JsonObject, triggerId: string, delivery: DeliveryOptions) => {
    const result = await send(payloadBody(payload), delivery);
    return { ...result, triggerId, payload, json: parseAck(result) };
  };

  const sendEvent = (event: JsonObject, delivery: DeliveryOptions = {}) =>
    send(JSON.stringify(eventEnvelope(ctx, event)), {
      ...delivery,
      contentType: "application/json",
    });

  return {
    send,
    event: sendEvent,
    appHomeOpened: (input) => sendEvent(appHomeOpenedEvent(ctx, input), input),

    async slashCommand(input) {
      const triggerId = input.triggerId ?? slack.issueTriggerId();
      const responseUrl = input.responseUrl ?? slack.issueResponseUrl();
      const result = await send(slashCommandBody(ctx, input, triggerId, responseUrl), input);
      return { ...result, triggerId, responseUrl };
    },

    async viewSubmission(input) {
      const viewId =
        "id" in input.view && typeof input.view.id === "string" ? input.view.id : undefined;
      const triggerId = input.triggerId ?? slack.issueTriggerId({ viewId });
      const payload = {
        ...interactionEnvelope(ctx, "view_submission", input, triggerId),
        view: submittedView(ctx, { ...input.view }, input.values),
        response_urls: [],
      };
      return await interact(payload, triggerId, input);
    },

    async blockAction(input) {
      const surface = actionSurface(ctx, input);
      const located = locateElement(surface.blocks, input.actionId, input.blockId);
      if (located === undefined) {
        const where = input.blockId === undefined ? "" : ` in block "${input.blockId}"`;
        throw new Error(`No element with action_id "${input.actionId}"${where} to click`);
      }
      const triggerId = input.triggerId ?? slack.issueTriggerId({ viewId: surface.viewId });
      const payload = {
        ...interactionEnvelope(ctx, "block_actions", input, triggerId),
        ...surface.fields,
        actions: [actionObject(located, input)],
      };
      return await interact(payload, triggerId, input);
    },
  };
}
