/** The workspace's state: users, channels, user groups, and who the caller is. */
import {
  IdSequence,
  missingArgument,
  SlackApiError,
  stringArg,
  TimestampClock,
  TriggerRegistry,
} from "./support.js";
import {
  type ExtraMethod,
  type FakeChannel,
  type FakeEphemeral,
  type FakeMessage,
  type FakeUpload,
  type FakeUser,
  type FakeView,
  type JsonObject,
  type NewChannel,
  type NewUser,
  type SlackIdentity,
} from "./types.js";

/** A message as interaction payloads carry it; Web API responses add a few fields. */
export function messageObject(message: FakeMessage, teamId: string): JsonObject {
  return {
    type: "message",
    text: message.text,
    user: message.user,
    bot_id: message.bot_id,
    app_id: message.app_id,
    team: teamId,
    ts: message.ts,
    thread_ts: message.thread_ts,
    blocks: structuredClone(message.blocks),
    metadata: message.metadata,
  };
}

export type MethodHandler = (args: JsonObject) => JsonObject;

/** Orders message timestamps ("1700000000.000100") numerically. */
export function compareTs(a: string, b: string): number {
  return Number(a) - Number(b);
}

/** `oldest` / `latest` / `inclusive` as conversations.history and .replies read them. */
export function timeRange(args: JsonObject): (ts: string) => boolean {
  const oldest = Number(args.oldest ?? 0);
  const latest = args.latest === undefined ? Infinity : Number(args.latest);
  const inclusive = args.inclusive === true || args.inclusive === "true";
  return (ts) => {
    const at = Number(ts);
    return inclusive ? at >= oldest && at <= latest : at > oldest && at < latest;
  };
}

interface WorkspaceOptions {
  botToken: string;
  /** Other tokens of the same bot, valid beside `botToken` (token rotation). */
  otherBotTokens?: readonly string[] | undefined;
  /** Whether the app's Home tab is on (views.publish answers `not_enabled` when not). */
  homeTabEnabled?: boolean;
  triggerTtlMs: number;
  now?: (() => number) | undefined;
  identity: SlackIdentity;
  baseUrl: () => string;
}

export const MAX_VIEW_STACK = 3;

export class WorkspaceDirectory {
  readonly messages: FakeMessage[] = [];
  readonly ephemerals: FakeEphemeral[] = [];
  readonly views: FakeView[] = [];
  /** Each user's Home tab, as views.publish last set it. */
  readonly homes = new Map<string, FakeView>();
  readonly uploads: FakeUpload[] = [];
  readonly triggers: TriggerRegistry;
  protected readonly channels = new Map<string, FakeChannel>();
  protected readonly users = new Map<string, FakeUser>();
  protected readonly usergroups = new Map<string, string[]>();
  /** root view id → ids of the views stacked on it, root first. */
  protected readonly viewStacks = new Map<string, string[]>();
  protected readonly clock = new TimestampClock();
  protected readonly viewIds = new IdSequence("V");
  protected readonly fileIds = new IdSequence("F");
  protected readonly identity: SlackIdentity;
  readonly extraMethods = new Map<string, ExtraMethod>();

  constructor(protected readonly options: WorkspaceOptions) {
    this.identity = options.identity;
    this.triggers = new TriggerRegistry(options.triggerTtlMs, options.now);
  }

  message(channel: string, ts: string): FakeMessage | undefined {
    return this.messages.find((message) => message.channel === channel && message.ts === ts);
  }

  view(idOrExternalId: string): FakeView | undefined {
    return this.views.find(
      (view) =>
        view.id === idOrExternalId ||
        (view.external_id !== "" && view.external_id === idOrExternalId),
    );
  }

  upload(id: string): FakeUpload | undefined {
    return this.uploads.find((upload) => upload.id === id);
  }

  addUsergroup(id: string, userIds: readonly string[]): void {
    this.usergroups.set(id, [...userIds]);
  }

  addUser(input: NewUser): void {
    const name = input.name ?? input.id.toLowerCase();
    const realName = input.realName ?? name;
    const profile: FakeUser["profile"] = { real_name: realName, display_name: name };
    if (input.email !== undefined) profile.email = input.email;
    this.users.set(input.id, {
      ...this.syntheticUser(input.id),
      name,
      real_name: realName,
      deleted: input.deleted ?? false,
      tz: input.tz ?? "UTC",
      is_admin: input.isAdmin ?? false,
      is_bot: input.isBot ?? false,
      profile,
    });
  }

  user(id: string): FakeUser {
    return this.users.get(id) ?? this.syntheticUser(id);
  }

  addChannel(input: NewChannel): void {
    this.channels.set(input.id, {
      ...this.syntheticChannel(input.id),
      name: input.name,
      is_private: input.isPrivate ?? false,
      is_group: input.isPrivate ?? false,
      is_member: input.isMember ?? true,
    });
  }

  protected authenticate(token: string | undefined): void {
    if (token === undefined || token === "") throw new SlackApiError("not_authed");
    if (token !== this.options.botToken && !(this.options.otherBotTokens ?? []).includes(token)) {
      throw new SlackApiError("invalid_auth");
    }
  }

  // --- auth ---------------------------------------------------------------

  protected authTest(): JsonObject {
    return {
      url: `https://${this.identity.teamDomain}.slack.com/`,
      team: this.identity.teamName,
      user: this.identity.botUserName,
      team_id: this.identity.teamId,
      user_id: this.identity.botUserId,
      bot_id: this.identity.botId,
      is_enterprise_install: false,
    };
  }

  // --- conversations, users, user groups -----------------------------------

  protected conversationInfo(args: JsonObject): JsonObject {
    return { channel: { ...this.resolveChannel(args.channel) } };
  }

  /** `conversations.open` with one user: the bot's direct-message channel with them. */
  protected openConversation(args: JsonObject): JsonObject {
    const users = stringArg(args, "users");
    if (users === undefined || !/^[UW][A-Z0-9]+$/.test(users))
      throw new SlackApiError("user_not_found");
    return { channel: { id: this.resolveChannel(users).id } };
  }

  protected userInfo(args: JsonObject): JsonObject {
    const id = stringArg(args, "user");
    if (id === undefined || (!this.users.has(id) && !/^[UW][A-Z0-9]+$/.test(id))) {
      throw new SlackApiError("user_not_found");
    }
    return { user: structuredClone(this.user(id)) };
  }

  protected usergroupMembers(args: JsonObject): JsonObject {
    const id = stringArg(args, "usergroup");
    if (id === undefined) throw missingArgument("usergroup");
    const members = this.usergroups.get(id);
    if (members === undefined) throw new SlackApiError("no_such_subteam");
    return { users: [...members] };
  }

  /** Channel IDs are accepted as given; `#name` and names must be registered; user IDs open a DM. */
  protected resolveChannel(raw: unknown): FakeChannel {
    if (typeof raw !== "string" || raw.trim() === "") throw new SlackApiError("channel_not_found");
    const name = raw.replace(/^#/, "");
    const known =
      this.channels.get(raw) ??
      [...this.channels.values()].find((channel) => channel.name === name);
    if (known !== undefined) return known;
    if (raw.startsWith("#")) throw new SlackApiError("channel_not_found");
    const channel = /^[UW][A-Z0-9]+$/.test(raw)
      ? { ...this.syntheticChannel(`D${raw.slice(1)}`), name: raw, is_channel: false, is_im: true }
      : this.syntheticChannel(raw);
    this.channels.set(channel.id, channel);
    return channel;
  }

  protected syntheticChannel(id: string): FakeChannel {
    return {
      id,
      name: id.toLowerCase(),
      is_channel: true,
      is_group: id.startsWith("G"),
      is_im: id.startsWith("D"),
      is_private: id.startsWith("G"),
      is_member: true,
      is_archived: false,
      created: 1_700_000_000,
    };
  }

  protected syntheticUser(id: string): FakeUser {
    const name = id.toLowerCase();
    return {
      id,
      team_id: this.identity.teamId,
      name,
      real_name: name,
      deleted: false,
      tz: "UTC",
      tz_offset: 0,
      is_admin: false,
      is_bot: false,
      profile: { real_name: name, display_name: name },
    };
  }
}
