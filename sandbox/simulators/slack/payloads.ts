/** Signing, and the payloads Slack posts: slash commands, view submissions, block actions. */
import { createHmac, randomBytes } from "node:crypto";
import { interactiveElements } from "./arguments.js";
import { messageObject } from "./directory.js";
import { isObject, slackTs, viewHash } from "./support.js";
import { type FakeSlack, type JsonObject } from "./types.js";
import {
  type BlockActionInput,
  type DeliveryOptions,
  type SlackDelivery,
  type SlashCommandInput,
  type ViewStateValues,
} from "./signer-types.js";
import { findOption } from "./view-state.js";

const SLACK_USER_AGENT = "Slackbot 1.0 (+https://api.slack.com/robots)";
export const DEFAULT_VERIFICATION_TOKEN = "fakeVerificationToken0001";

/** `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}`, as in "Verifying requests from Slack". */
export function slackSignature(signingSecret: string, timestamp: string, body: string): string {
  const digest = createHmac("sha256", signingSecret)
    .update(`v0:${timestamp}:${body}`)
    .digest("hex");
  return `v0=${digest}`;
}

export async function deliver(
  url: string,
  signingSecret: string,
  body: string,
  options: DeliveryOptions & { contentType?: string },
): Promise<SlackDelivery> {
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = {
    "content-type": options.contentType ?? "application/x-www-form-urlencoded",
    "user-agent": SLACK_USER_AGENT,
    "x-slack-request-timestamp": timestamp,
    "x-slack-signature": options.signature ?? slackSignature(signingSecret, timestamp, body),
  };
  if (options.retryNum !== undefined) headers["x-slack-retry-num"] = String(options.retryNum);
  if (options.retryReason !== undefined) headers["x-slack-retry-reason"] = options.retryReason;
  const started = performance.now();
  const response = await fetch(url, { method: "POST", headers, body });
  const text = await response.text();
  return {
    status: response.status,
    body: text,
    headers: Object.fromEntries(response.headers),
    elapsedMs: performance.now() - started,
    request: { body, headers },
  };
}

export function parseAck(delivery: SlackDelivery): JsonObject | undefined {
  const isJson = (delivery.headers["content-type"] ?? "").includes("application/json");
  if (delivery.body === "" || !isJson) return undefined;
  const parsed: unknown = JSON.parse(delivery.body);
  return isObject(parsed) ? parsed : undefined;
}

export function payloadBody(payload: JsonObject): string {
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}

export interface PayloadContext {
  slack: FakeSlack;
  team: { id: string; domain: string };
  appId: string;
  token: string;
}

function userObject(ctx: PayloadContext, userId: string, userName: string | undefined): JsonObject {
  const name = userName ?? ctx.slack.user(userId).name;
  return { id: userId, username: name, name, team_id: ctx.team.id };
}

export function slashCommandBody(
  ctx: PayloadContext,
  input: SlashCommandInput,
  triggerId: string,
  responseUrl: string,
): string {
  return new URLSearchParams({
    token: ctx.token,
    team_id: ctx.team.id,
    team_domain: ctx.team.domain,
    channel_id: input.channelId,
    channel_name: input.channelName ?? input.channelId.toLowerCase(),
    user_id: input.userId,
    user_name: input.userName ?? ctx.slack.user(input.userId).name,
    command: input.command ?? "/vm",
    text: input.text,
    api_app_id: ctx.appId,
    is_enterprise_install: "false",
    response_url: responseUrl,
    trigger_id: triggerId,
  }).toString();
}

/** The Events API envelope around `event` (see Slack's "Events API" reference). */
export function eventEnvelope(ctx: PayloadContext, event: JsonObject): JsonObject {
  const now = Date.now();
  return {
    token: ctx.token,
    team_id: ctx.team.id,
    api_app_id: ctx.appId,
    event: { ...event, event_ts: slackTs(now * 1000) },
    type: "event_callback",
    event_id: `Ev${randomBytes(5).toString("hex").toUpperCase()}`,
    event_time: Math.floor(now / 1000),
    authorizations: [
      {
        enterprise_id: null,
        team_id: ctx.team.id,
        user_id: ctx.slack.identity.botUserId,
        is_bot: true,
        is_enterprise_install: false,
      },
    ],
    is_ext_shared_channel: false,
  };
}

/** `app_home_opened` for `userId`: the Home's view included once one was published. */
export function appHomeOpenedEvent(
  ctx: PayloadContext,
  input: { userId: string; tab?: string; channelId?: string },
): JsonObject {
  const tab = input.tab ?? "home";
  const view = tab === "home" ? ctx.slack.home(input.userId) : undefined;
  return {
    type: "app_home_opened",
    user: input.userId,
    channel: input.channelId ?? `D${input.userId.slice(1)}`,
    tab,
    ...(view === undefined ? {} : { view: structuredClone(view) }),
  };
}

export function interactionEnvelope(
  ctx: PayloadContext,
  type: string,
  from: { userId: string; userName?: string },
  triggerId: string,
): JsonObject {
  return {
    type,
    team: { id: ctx.team.id, domain: ctx.team.domain },
    user: userObject(ctx, from.userId, from.userName),
    api_app_id: ctx.appId,
    token: ctx.token,
    trigger_id: triggerId,
    is_enterprise_install: false,
    enterprise: null,
  };
}

/** The view as Slack sends it back: every field present, with the user's input in `state`. */
export function submittedView(
  ctx: PayloadContext,
  view: JsonObject,
  values: ViewStateValues,
): JsonObject {
  const id =
    typeof view.id === "string" ? view.id : `V${randomBytes(5).toString("hex").toUpperCase()}`;
  const defaults: JsonObject = {
    id,
    team_id: ctx.team.id,
    type: "modal",
    close: null,
    submit: null,
    private_metadata: "",
    callback_id: "",
    external_id: "",
    hash: viewHash(),
    clear_on_close: false,
    notify_on_close: false,
    root_view_id: id,
    previous_view_id: null,
    app_id: ctx.appId,
    app_installed_team_id: ctx.team.id,
    bot_id: ctx.slack.identity.botId,
  };
  return { ...defaults, ...structuredClone(view), state: { values: structuredClone(values) } };
}

interface LocatedElement {
  blockId: string;
  element: JsonObject;
}

/** Finds the interactive element a user would click, as Slack only sends actions for elements it rendered. */
export function locateElement(
  blocks: readonly unknown[],
  actionId: string,
  blockId: string | undefined,
): LocatedElement | undefined {
  for (const block of blocks) {
    if (!isObject(block) || typeof block.block_id !== "string") continue;
    if (blockId !== undefined && block.block_id !== blockId) continue;
    const element = interactiveElements(block).find(
      (candidate) => candidate.action_id === actionId,
    );
    if (element !== undefined) return { blockId: block.block_id, element };
  }
  return undefined;
}

function actionTs(): string {
  return slackTs(Date.now() * 1000);
}

export function actionObject(located: LocatedElement, input: BlockActionInput): JsonObject {
  const { element, blockId } = located;
  const base: JsonObject = {
    action_id: element.action_id,
    block_id: blockId,
    type: element.type,
    action_ts: actionTs(),
  };
  const where = `action_id "${String(element.action_id)}"`;
  if (element.type === "button") {
    return {
      ...base,
      text: element.text,
      value: input.value ?? element.value,
      style: element.style,
    };
  }
  if (input.value === undefined) return base;
  if (element.type === "static_select" || element.type === "overflow") {
    return { ...base, selected_option: findOption(element, input.value, where) };
  }
  return { ...base, value: input.value };
}

export function actionSurface(
  ctx: PayloadContext,
  input: BlockActionInput,
): { blocks: readonly unknown[]; fields: JsonObject; viewId?: string } {
  const values = input.values ?? {};
  if (input.message !== undefined) {
    const channelId = input.channelId ?? input.message.channel;
    return {
      blocks: input.message.blocks,
      fields: {
        container: {
          type: "message",
          message_ts: input.message.ts,
          channel_id: channelId,
          is_ephemeral: input.ephemeral === true,
        },
        channel: { id: channelId, name: input.channelName ?? channelId.toLowerCase() },
        ...(input.ephemeral === true ? {} : { message: messageObject(input.message, ctx.team.id) }),
        state: { values: structuredClone(values) },
        response_url: input.responseUrl ?? ctx.slack.issueResponseUrl(),
      },
    };
  }
  if (input.view !== undefined) {
    return {
      blocks: input.view.blocks,
      fields: {
        container: { type: "view", view_id: input.view.id },
        view: submittedView(ctx, { ...input.view }, values),
      },
      viewId: input.view.id,
    };
  }
  throw new Error("blockAction needs the message or the view that holds the element");
}
