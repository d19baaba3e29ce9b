/** The fake Slack's public types: what it records, its options and its drivers. */

export type JsonObject = Record<string, unknown>;

/** One Web API call as the fake received and answered it. */
export interface SlackCall {
  /** Method name, e.g. `"views.open"`. */
  method: string;
  /** Parsed arguments (without the token); JSON-encoded fields such as `blocks` and `view` are objects again. */
  args: Record<string, unknown>;
  at: number;
  ok: boolean;
  error?: string;
}

/** A Slack error code for `{ ok: false, error }`, or an HTTP status (429 carries `Retry-After`). */
/**
 * What `failNext` does to a call: a platform error (`{ ok: false, error }`), or an HTTP status
 * (429 with `retryAfter`), Slack having done nothing; or, with `afterEffect`, the call done and
 * its answer lost: the connection reset, or an HTTP status (a 5xx from Slack's edge, say).
 */
export type SlackFailure =
  string | { status: number; retryAfter?: number } | { afterEffect: "reset" | number };

export interface SlackIdentity {
  teamId: string;
  teamName: string;
  teamDomain: string;
  botUserId: string;
  botUserName: string;
  botId: string;
  appId: string;
}

export interface TextObject {
  type: "plain_text" | "mrkdwn";
  text: string;
  emoji?: boolean;
}

/** A message in a channel, as posted by the bot and then updated. */
export interface FakeMessage {
  channel: string;
  ts: string;
  text: string;
  blocks: JsonObject[];
  attachments?: JsonObject[];
  thread_ts?: string;
  metadata?: JsonObject;
  /** Files shared by this message (a completed upload into a channel or thread). */
  files?: JsonObject[];
  user: string;
  bot_id: string;
  app_id: string;
  edited?: { user: string; ts: string };
}

export interface FakeEphemeral {
  channel: string;
  user: string;
  message_ts: string;
  text: string;
  blocks: JsonObject[];
  thread_ts?: string;
}

/** The fields of a modal the app sets through views.open, views.push and views.update. */
export interface ModalInput {
  title: TextObject;
  submit: TextObject | null;
  close: TextObject | null;
  blocks: JsonObject[];
  private_metadata: string;
  callback_id: string;
  external_id: string;
  clear_on_close: boolean;
  notify_on_close: boolean;
  submit_disabled: boolean;
}

/** A modal view exactly as the views.* methods return it. */
export interface FakeView extends ModalInput {
  id: string;
  team_id: string;
  /** `home` for a Home tab (views.publish), whose title, submit and close stay empty. */
  type: "modal" | "home";
  state: { values: Record<string, Record<string, unknown>> };
  hash: string;
  root_view_id: string;
  previous_view_id: string | null;
  app_id: string;
  app_installed_team_id: string;
  bot_id: string;
}

export interface FakeUser {
  id: string;
  team_id: string;
  name: string;
  real_name: string;
  deleted: boolean;
  tz: string;
  tz_offset: number;
  is_admin: boolean;
  is_bot: boolean;
  profile: { real_name: string; display_name: string; email?: string };
}

export interface FakeChannel {
  id: string;
  name: string;
  is_channel: boolean;
  is_group: boolean;
  is_im: boolean;
  is_private: boolean;
  is_member: boolean;
  is_archived: boolean;
  created: number;
}

/** A file uploaded through files.getUploadURLExternal → upload URL → files.completeUploadExternal. */
export interface FakeUpload {
  id: string;
  filename: string;
  title: string;
  length: number;
  content?: string;
  completed: boolean;
  channel?: string;
  initial_comment?: string;
  thread_ts?: string;
}

/** What the app posted to a response_url (Bolt's `respond()`). */
export interface ResponseUrlPost {
  url: string;
  body: JsonObject;
  at: number;
}

export interface FakeSlackOptions {
  botToken: string;
  /**
   * Other tokens of the same bot, each valid beside `botToken`: with token rotation, Slack keeps
   * an access token working until it expires while newer ones are issued, so the replicas of one
   * app may each hold a different one. `callerOf` tells which token made a call.
   */
  otherBotTokens?: readonly string[];
  /** How long an issued trigger_id stays usable; Slack's is 3 seconds. */
  triggerTtlMs?: number;
  /** What time it is, in milliseconds, for trigger_ids' lifetime; the machine's by default. */
  now?: () => number;
  teamId?: string;
  teamDomain?: string;
  /** false: the app's Home tab is off, and views.publish answers `not_enabled`. */
  homeTabEnabled?: boolean;
}

export interface FakeSlack {
  /** Base URL of the fake server, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** Give this to WebClient / Bolt as `slackApiUrl`; ends with `/api/`. */
  readonly apiUrl: string;
  readonly identity: SlackIdentity;
  /** Every Web API call, in order. */
  readonly calls: readonly SlackCall[];
  callsTo(method: string): SlackCall[];
  /** The first call to `method` matching `predicate`, already made or still to come. */
  waitFor(
    method: string,
    predicate?: (call: SlackCall) => boolean,
    timeoutMs?: number,
  ): Promise<SlackCall>;
  /** A fresh trigger_id, as Slack puts in a slash command or interaction; `viewId` for one from inside a modal. */
  issueTriggerId(options?: { viewId?: string }): string;
  /** A fresh response_url served by this fake. */
  issueResponseUrl(): string;
  readonly messages: readonly FakeMessage[];
  message(channel: string, ts: string): FakeMessage | undefined;
  readonly ephemerals: readonly FakeEphemeral[];
  readonly views: readonly FakeView[];
  /** A view by id or external_id. */
  view(idOrExternalId: string): FakeView | undefined;
  /** The Home tab last published for a user (views.publish), if any. */
  home(userId: string): FakeView | undefined;
  readonly uploads: readonly FakeUpload[];
  readonly responses: readonly ResponseUrlPost[];
  waitForResponse(
    predicate?: (post: ResponseUrlPost) => boolean,
    timeoutMs?: number,
  ): Promise<ResponseUrlPost>;
  /** The token a recorded Web API call was made with; undefined when it carried none. */
  callerOf(call: SlackCall): string | undefined;
  /**
   * Makes the next call to `method` fail, before it does anything or (`afterEffect`) after;
   * queued failures apply one call each, in order.
   */
  failNext(method: string, failure: SlackFailure): void;
  addUsergroup(id: string, userIds: readonly string[]): void;
  addUser(user: NewUser): void;
  /** The registered user, or the profile Slack would show for an unregistered well-formed user ID. */
  user(id: string): FakeUser;
  addChannel(channel: NewChannel): void;
  /**
   * Serves another Web API method, e.g. `apps.connections.open` for the Socket Mode fake. The
   * handler authenticates the caller itself (not every method takes the bot token) and returns
   * the whole response body, `{ ok: false, error }` included. Calls are recorded and `failNext`
   * applies as for the built-in methods.
   */
  addMethod(method: string, handler: ExtraMethod): void;
  /**
   * Calls `listener` after every Web API call and every response_url post (anything that may
   * have changed what a user sees); returns the function that stops it.
   */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

/** A Web API method added with `addMethod`: the caller's token and arguments in, the body out. */
export type ExtraMethod = (call: { token: string | undefined; args: JsonObject }) => JsonObject;

export interface NewUser {
  id: string;
  name?: string;
  realName?: string;
  email?: string;
  tz?: string;
  isAdmin?: boolean;
  isBot?: boolean;
  deleted?: boolean;
}

export interface NewChannel {
  id: string;
  name: string;
  isPrivate?: boolean;
  /** false makes chat.postMessage answer `not_in_channel`. */
  isMember?: boolean;
}
