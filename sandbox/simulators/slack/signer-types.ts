/** The request signer's public types: what it delivers and the view state it fills in. */
import { type FakeMessage, type FakeSlack, type FakeView, type JsonObject } from "./types.js";

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
  /**
   * Told of each body as it is sent, before the bot answers: a test delivers the same body again
   * (Slack's retry, perhaps to another replica) while the first delivery is still in hand.
   */
  onSend?: (sent: { body: string; contentType: string }) => void;
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

export interface AppHomeOpenedInput extends DeliveryOptions {
  userId: string;
  /** Which tab of the app the user opened; `home` by default. */
  tab?: "home" | "messages";
  /** The user's direct message with the app; a fixed one per user by default. */
  channelId?: string;
}

export interface SlackSigner {
  /**
   * An Events API `event_callback` carrying `event`, as JSON with an event_id and the app's
   * authorization, signed like every delivery.
   */
  event(event: JsonObject, options?: DeliveryOptions): Promise<SlackDelivery>;
  /**
   * A user opened the app (`app_home_opened`): with the Home tab's current view when one was
   * published for them before, as Slack sends it.
   */
  appHomeOpened(input: AppHomeOpenedInput): Promise<SlackDelivery>;
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

export const TEXT_INPUT_TYPES = [
  "plain_text_input",
  "email_text_input",
  "url_text_input",
  "number_input",
] as const;
export const SINGLE_SELECT_TYPES = ["static_select", "external_select", "radio_buttons"] as const;
export const MULTI_SELECT_TYPES = [
  "multi_static_select",
  "multi_external_select",
  "checkboxes",
] as const;
/** type → the state field of a picker; its initial value is in `initial_…` under the same name. */
export const PICKER_FIELDS = {
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
export type PickerType = keyof typeof PICKER_FIELDS;

/** block_id → action_id → element state. */
export type ViewStateValues = Record<string, Record<string, ElementState>>;

/** What a user entered or picked: text or option value, several for multi-selects, null for empty. */
export type InputValue = string | readonly string[] | null;
