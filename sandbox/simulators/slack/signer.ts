/**
 * Delivers requests to the bot's request URL (`/slack/events`) the way Slack does:
 * a form-encoded body, `X-Slack-Request-Timestamp`, and `X-Slack-Signature:
 * v0=<hex HMAC-SHA256 of "v0:{timestamp}:{body}" keyed with the signing secret>`.
 *
 * trigger_ids and response_urls come from the fake Slack Web API, so a modal the
 * bot opens with them is checked against the same rules Slack applies.
 */
import { createHmac, randomBytes } from "node:crypto";

import {
  interactiveElements,
  isObject,
  messageObject,
  slackTs,
  viewHash,
  type FakeMessage,
  type FakeSlack,
  type FakeView,
  type JsonObject,
} from "./index.js";

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

export interface SlackSignerOptions {
  /** The bot's request URL, e.g. `http://127.0.0.1:3000/slack/events`. */
  eventsUrl: string;
  signingSecret: string;
  slack: FakeSlack;
  /** Defaults to the fake workspace's team. */
  teamId?: string;
  teamDomain?: string;
  appId?: string;
  /** The deprecated verification token Slack still puts in bodies. */
  verificationToken?: string;
}

/** Per-request overrides, for testing how the bot treats suspicious or repeated requests. */
export interface DeliveryOptions {
  /** Unix seconds sent as X-Slack-Request-Timestamp and signed; defaults to now. */
  timestamp?: number;
  /** Sent as X-Slack-Signature instead of the correct signature. */
  signature?: string;
  /** X-Slack-Retry-Num. */
  retryNum?: number;
  /** X-Slack-Retry-Reason, e.g. `"http_timeout"`. */
  retryReason?: string;
}

export interface SlackDelivery {
  status: number;
  /** The response body as text. */
  body: string;
  headers: Record<string, string>;
  /** Time until the bot answered; Slack gives up after 3 seconds. */
  elapsedMs: number;
  /** What was sent, for checking the wire format. */
  request: { body: string; headers: Record<string, string> };
}

export interface SlashCommandInput extends DeliveryOptions {
  text: string;
  userId: string;
  channelId: string;
  /** Defaults to `/vm`. */
  command?: string;
  /** Defaults to a fresh trigger_id from the fake. */
  triggerId?: string;
  /** Defaults to a fresh response_url served by the fake. */
  responseUrl?: string;
  userName?: string;
  channelName?: string;
}

export interface SlashCommandDelivery extends SlackDelivery {
  triggerId: string;
  responseUrl: string;
}

export interface InteractionDelivery extends SlackDelivery {
  triggerId: string;
  /** The interaction payload that was sent. */
  payload: JsonObject;
  /** The ack body parsed as JSON, e.g. `{ response_action: "errors", errors }`; undefined when empty. */
  json: JsonObject | undefined;
}

export interface ViewSubmissionInput extends DeliveryOptions {
  /** The view as the fake returned it (`slack.views`), or a complete view object. */
  view: FakeView | object;
  /** `view.state.values`; build with `stateValues` or `stateValuesFor`. */
  values: ViewStateValues;
  userId: string;
  userName?: string;
  triggerId?: string;
}

export interface BlockActionInput extends DeliveryOptions {
  /** The message holding the element (from `slack.messages`), or … */
  message?: FakeMessage;
  /** … the view holding it (from `slack.views`). */
  view?: FakeView;
  /** Defaults to the message's channel. */
  channelId?: string;
  channelName?: string;
  userId: string;
  userName?: string;
  actionId: string;
  /** Narrows the search when several blocks hold the same action_id. */
  blockId?: string;
  /** Defaults to the element's own value (a button's `value`). */
  value?: string;
  triggerId?: string;
  /** State of the surface's inputs at the time of the click. */
  values?: ViewStateValues;
  /** For a message: defaults to a fresh response_url served by the fake. */
  responseUrl?: string;
  /**
   * The message is ephemeral (posted through a response_url): Slack marks the container so and
   * sends no `message` object, since it keeps no copy of ephemeral messages.
   */
  ephemeral?: boolean;
}

export interface SlackSigner {
  slashCommand(input: SlashCommandInput): Promise<SlashCommandDelivery>;
  viewSubmission(input: ViewSubmissionInput): Promise<InteractionDelivery>;
  blockAction(input: BlockActionInput): Promise<InteractionDelivery>;
  /** Signs and posts any body, e.g. an Events API JSON envelope. */
  send(body: string, options?: DeliveryOptions & { contentType?: string }): Promise<SlackDelivery>;
}

export interface SlackOption {
  text: { type: "plain_text" | "mrkdwn"; text: string; emoji?: boolean };
  value: string;
}

/** One element's entry in `view.state.values[block_id][action_id]`. */
export type ElementState =
  | { type: TextInputType; value: string | null }
  | { type: SingleSelectType; selected_option: SlackOption | null }
  | { type: MultiSelectType; selected_options: SlackOption[] }
  | { type: "users_select"; selected_user: string | null }
  | { type: "multi_users_select"; selected_users: string[] }
  | { type: "conversations_select"; selected_conversation: string | null }
  | { type: "multi_conversations_select"; selected_conversations: string[] }
  | { type: "channels_select"; selected_channel: string | null }
  | { type: "multi_channels_select"; selected_channels: string[] }
  | { type: "datepicker"; selected_date: string | null }
  | { type: "timepicker"; selected_time: string | null };

const TEXT_INPUT_TYPES = [
  "plain_text_input",
  "email_text_input",
  "url_text_input",
  "number_input",
] as const;
const SINGLE_SELECT_TYPES = ["static_select", "external_select", "radio_buttons"] as const;
const MULTI_SELECT_TYPES = ["multi_static_select", "multi_external_select", "checkboxes"] as const;
/** type → the state field of a picker; its initial value is in `initial_…` under the same name. */
const PICKER_FIELDS = {
  users_select: "selected_user",
  multi_users_select: "selected_users",
  conversations_select: "selected_conversation",
  multi_conversations_select: "selected_conversations",
  channels_select: "selected_channel",
  multi_channels_select: "selected_channels",
  datepicker: "selected_date",
  timepicker: "selected_time",
} as const;

type TextInputType = (typeof TEXT_INPUT_TYPES)[number];
type SingleSelectType = (typeof SINGLE_SELECT_TYPES)[number];
type MultiSelectType = (typeof MULTI_SELECT_TYPES)[number];
type PickerType = keyof typeof PICKER_FIELDS;

/** block_id → action_id → element state. */
export type ViewStateValues = Record<string, Record<string, ElementState>>;

/** What a user entered or picked: text or option value, several for multi-selects, null for empty. */
export type InputValue = string | readonly string[] | null;

// ---------------------------------------------------------------------------
// Signing and delivery
// ---------------------------------------------------------------------------

const SLACK_USER_AGENT = "Slackbot 1.0 (+https://api.slack.com/robots)";
const DEFAULT_VERIFICATION_TOKEN = "fakeVerificationToken0001";

/** `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}`, as in "Verifying requests from Slack". */
export function slackSignature(signingSecret: string, timestamp: string, body: string): string {
  const digest = createHmac("sha256", signingSecret)
    .update(`v0:${timestamp}:${body}`)
    .digest("hex");
  return `v0=${digest}`;
}

async function deliver(
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

function parseAck(delivery: SlackDelivery): JsonObject | undefined {
  const isJson = (delivery.headers["content-type"] ?? "").includes("application/json");
  if (delivery.body === "" || !isJson) return undefined;
  const parsed: unknown = JSON.parse(delivery.body);
  return isObject(parsed) ? parsed : undefined;
}

function payloadBody(payload: JsonObject): string {
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}

// ---------------------------------------------------------------------------
// Payloads
// ---------------------------------------------------------------------------

interface PayloadContext {
  slack: FakeSlack;
  team: { id: string; domain: string };
  appId: string;
  token: string;
}

function userObject(ctx: PayloadContext, userId: string, userName: string | undefined): JsonObject {
  const name = userName ?? ctx.slack.user(userId).name;
  return { id: userId, username: name, name, team_id: ctx.team.id };
}

function slashCommandBody(
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

function interactionEnvelope(
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
function submittedView(ctx: PayloadContext, view: JsonObject, values: ViewStateValues): JsonObject {
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
function locateElement(
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

function actionObject(located: LocatedElement, input: BlockActionInput): JsonObject {
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

function actionSurface(
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

// ---------------------------------------------------------------------------
// View state
// ---------------------------------------------------------------------------

/** Types a `view.state.values` map written out by hand: block_id → action_id → element state. */
export function stateValues(values: ViewStateValues): ViewStateValues {
  return values;
}

/**
 * The `state.values` Slack would send when a user fills `view` in: `entries` maps
 * action_id → what the user entered or picked. Elements not mentioned keep their
 * initial value (or stay empty), as in Slack. Picking a value that is not among
 * an element's options, or naming an action_id the view lacks, throws.
 */
export function stateValuesFor(
  view: { blocks: readonly unknown[] },
  entries: Readonly<Record<string, InputValue>>,
): ViewStateValues {
  const values: ViewStateValues = {};
  const filled = new Set<string>();
  for (const block of view.blocks.filter(isObject)) {
    for (const element of interactiveElements(block)) {
      const actionId = typeof element.action_id === "string" ? element.action_id : undefined;
      if (actionId === undefined || !isStateful(element)) continue;
      const blockId = requireBlockId(block, actionId);
      const entry = Object.hasOwn(entries, actionId) ? entries[actionId] : undefined;
      (values[blockId] ??= {})[actionId] = elementState(element, entry, `action_id "${actionId}"`);
      if (entry !== undefined) filled.add(actionId);
    }
  }
  const unknown = Object.keys(entries).filter((actionId) => !filled.has(actionId));
  if (unknown.length > 0) {
    throw new Error(
      `The view has no input with action_id ${unknown.map((id) => `"${id}"`).join(", ")}`,
    );
  }
  return values;
}

const STATEFUL_TYPES = new Set<string>([
  ...TEXT_INPUT_TYPES,
  ...SINGLE_SELECT_TYPES,
  ...MULTI_SELECT_TYPES,
  ...Object.keys(PICKER_FIELDS),
]);

function isStateful(element: JsonObject): boolean {
  return typeof element.type === "string" && STATEFUL_TYPES.has(element.type);
}

function requireBlockId(block: JsonObject, actionId: string): string {
  if (typeof block.block_id === "string") return block.block_id;
  throw new Error(
    `The block holding action_id "${actionId}" has no block_id; use the view from the fake`,
  );
}

function elementState(
  element: JsonObject,
  entry: InputValue | undefined,
  where: string,
): ElementState {
  const one = (initial: unknown): string | null =>
    entry === undefined
      ? typeof initial === "string"
        ? initial
        : null
      : singleValue(entry, where);
  const many = (initial: unknown): string[] =>
    entry === undefined ? stringList(initial) : listValue(entry);
  const type = typeof element.type === "string" ? element.type : "";
  if (isOneOf(TEXT_INPUT_TYPES, type)) return { type, value: one(element.initial_value) };
  if (isOneOf(SINGLE_SELECT_TYPES, type)) {
    const value = one(isObject(element.initial_option) ? element.initial_option.value : undefined);
    return { type, selected_option: value === null ? null : findOption(element, value, where) };
  }
  if (isOneOf(MULTI_SELECT_TYPES, type)) {
    const initial = Array.isArray(element.initial_options)
      ? element.initial_options.filter(isObject).map((option) => option.value)
      : [];
    return {
      type,
      selected_options: many(initial).map((value) => findOption(element, value, where)),
    };
  }
  if (isOneOf(Object.keys(PICKER_FIELDS) as PickerType[], type)) {
    const field = PICKER_FIELDS[type];
    const initial = element[field.replace("selected_", "initial_")];
    const state = type.startsWith("multi_") ? many(initial) : one(initial);
    return { type, [field]: state } as ElementState;
  }
  throw new Error(`${where}: cannot fill a ${type} element`);
}

function isOneOf<T extends string>(types: readonly T[], value: string): value is T {
  return (types as readonly string[]).includes(value);
}

function singleValue(entry: InputValue, where: string): string | null {
  if (entry === null || typeof entry === "string") return entry;
  throw new Error(`${where} takes one value, got ${String(entry.length)}`);
}

function listValue(entry: InputValue): string[] {
  if (entry === null) return [];
  return typeof entry === "string" ? [entry] : [...entry];
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item) => typeof item === "string") : [];
}

/** The option object Slack reports for a picked value; external selects echo the value. */
function findOption(element: JsonObject, value: string, where: string): SlackOption {
  if (typeof element.type === "string" && element.type.includes("external_select")) {
    return { text: { type: "plain_text", text: value }, value };
  }
  const options = elementOptions(element);
  const option = options.find((candidate) => candidate.value === value);
  if (option !== undefined) return option;
  const known = options.map((candidate) => `"${candidate.value}"`).join(", ");
  throw new Error(`${where}: "${value}" is not one of its options (${known})`);
}

function elementOptions(element: JsonObject): SlackOption[] {
  const groups = asList(element.option_groups).filter(isObject);
  const raw = [...asList(element.options), ...groups.flatMap((group) => asList(group.options))];
  return raw.filter(isObject).flatMap((option) => {
    const text = option.text;
    if (typeof option.value !== "string" || !isObject(text) || typeof text.text !== "string") {
      return [];
    }
    const type = text.type === "mrkdwn" ? "mrkdwn" : "plain_text";
    return [{ text: { type, text: text.text }, value: option.value }];
  });
}

function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? (value as unknown[]) : [];
}

// ---------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------

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
  const send = (body: string, delivery: DeliveryOptions & { contentType?: string } = {}) =>
    deliver(options.eventsUrl, options.signingSecret, body, delivery);

  const interact = async (payload: JsonObject, triggerId: string, delivery: DeliveryOptions) => {
    const result = await send(payloadBody(payload), delivery);
    return { ...result, triggerId, payload, json: parseAck(result) };
  };

  return {
    send,

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
