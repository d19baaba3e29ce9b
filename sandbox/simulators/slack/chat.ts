import { hasContent, readMessageContent } from "./arguments.js";
import { compareTs, messageObject, timeRange, WorkspaceDirectory } from "./directory.js";
import { missingArgument, SlackApiError, stringArg } from "./support.js";
import { type FakeEphemeral, type FakeMessage, type JsonObject } from "./types.js";

/** chat.* and conversations.history/replies: messages posted and read back. */
export class WorkspaceChat extends WorkspaceDirectory {
  // --- chat ---------------------------------------------------------------

  protected postMessage(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const content = readMessageContent(args);
    if (!hasContent(content, args)) throw new SlackApiError("no_text");
    if (!channel.is_member) throw new SlackApiError("not_in_channel");
    const message: FakeMessage = {
      channel: channel.id,
      ts: this.clock.next(),
      text: content.text ?? "",
      blocks: content.blocks ?? [],
      user: this.identity.botUserId,
      bot_id: this.identity.botId,
      app_id: this.identity.appId,
    };
    if (content.attachments !== undefined) message.attachments = content.attachments;
    if (content.metadata !== undefined && Object.keys(content.metadata).length > 0) {
      message.metadata = content.metadata;
    }
    const threadTs = stringArg(args, "thread_ts");
    if (threadTs !== undefined) message.thread_ts = threadTs;
    this.messages.push(message);
    return { channel: message.channel, ts: message.ts, message: this.messageObject(message) };
  }

  protected updateMessage(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const message = this.existingMessage(channel.id, args.ts);
    const content = readMessageContent(args);
    if (!hasContent(content, args)) throw new SlackApiError("no_text");
    if (content.text !== undefined) message.text = content.text;
    if (content.blocks !== undefined) message.blocks = content.blocks;
    if (content.attachments !== undefined) message.attachments = content.attachments;
    if (content.metadata !== undefined) this.replaceMetadata(message, content.metadata);
    message.edited = { user: this.identity.botUserId, ts: this.clock.next() };
    return {
      channel: message.channel,
      ts: message.ts,
      text: message.text,
      message: this.messageObject(message),
    };
  }

  protected deleteMessage(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const message = this.existingMessage(channel.id, args.ts);
    this.messages.splice(this.messages.indexOf(message), 1);
    return { channel: message.channel, ts: message.ts };
  }

  protected postEphemeral(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const user = stringArg(args, "user");
    if (user === undefined) throw new SlackApiError("user_not_in_channel");
    const content = readMessageContent(args);
    if (!hasContent(content, args)) throw new SlackApiError("no_text");
    const ephemeral: FakeEphemeral = {
      channel: channel.id,
      user,
      message_ts: this.clock.next(),
      text: content.text ?? "",
      blocks: content.blocks ?? [],
    };
    const threadTs = stringArg(args, "thread_ts");
    if (threadTs !== undefined) ephemeral.thread_ts = threadTs;
    this.ephemerals.push(ephemeral);
    return { message_ts: ephemeral.message_ts };
  }

  protected permalink(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const message = this.existingMessage(channel.id, args.message_ts);
    const path = `archives/${message.channel}/p${message.ts.replace(".", "")}`;
    return {
      channel: message.channel,
      permalink: `https://${this.identity.teamDomain}.slack.com/${path}`,
    };
  }

  protected existingMessage(channel: string, ts: unknown): FakeMessage {
    const message = typeof ts === "string" ? this.message(channel, ts) : undefined;
    if (message === undefined) throw new SlackApiError("message_not_found");
    return message;
  }

  protected replaceMetadata(message: FakeMessage, metadata: JsonObject): void {
    if (Object.keys(metadata).length === 0) delete message.metadata;
    else message.metadata = metadata;
  }

  protected messageObject(message: FakeMessage): JsonObject {
    return {
      ...messageObject(message, this.identity.teamId),
      blocks: message.blocks.length > 0 ? message.blocks : undefined,
      attachments: message.attachments,
      edited: message.edited,
      bot_profile: {
        id: this.identity.botId,
        app_id: this.identity.appId,
        name: this.identity.botUserName,
        team_id: this.identity.teamId,
      },
    };
  }

  // --- conversations: reading messages back ---------------------------------

  /**
   * conversations.history: the channel's top-level messages (thread replies are not listed),
   * newest first, between `oldest` and `latest` (exclusive unless `inclusive`), `limit` per page
   * with a cursor. Metadata only with `include_all_metadata`.
   */
  protected history(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    if (!channel.is_member) throw new SlackApiError("not_in_channel");
    const inRange = timeRange(args);
    const listed = this.messages
      .filter(
        (m) => m.channel === channel.id && (m.thread_ts === undefined || m.thread_ts === m.ts),
      )
      .filter((m) => inRange(m.ts))
      .sort((a, b) => compareTs(b.ts, a.ts));
    return this.page(listed, args, 100);
  }

  /** conversations.replies: a thread's parent and its replies, oldest first. */
  protected replies(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const ts = stringArg(args, "ts");
    if (ts === undefined) throw missingArgument("ts");
    const parent = this.message(channel.id, ts);
    if (parent === undefined) throw new SlackApiError("thread_not_found");
    const root = parent.thread_ts ?? parent.ts;
    const inRange = timeRange(args);
    const thread = this.messages
      .filter((m) => m.channel === channel.id && (m.ts === root || m.thread_ts === root))
      .filter((m) => m.ts === root || inRange(m.ts))
      .sort((a, b) => compareTs(a.ts, b.ts));
    return this.page(thread, args, 1000);
  }

  protected page(messages: FakeMessage[], args: JsonObject, defaultLimit: number): JsonObject {
    const limit = Math.min(Math.max(Number(args.limit ?? defaultLimit) || defaultLimit, 1), 999);
    const cursor = stringArg(args, "cursor");
    const offset = cursor === undefined ? 0 : Number(Buffer.from(cursor, "base64").toString());
    if (!Number.isInteger(offset) || offset < 0) throw new SlackApiError("invalid_cursor");
    const withMetadata = args.include_all_metadata === true || args.include_all_metadata === "true";
    const slice = messages.slice(offset, offset + limit).map((message) => {
      const object = this.messageObject(message);
      if (message.files !== undefined) object.files = structuredClone(message.files);
      if (!withMetadata) delete object.metadata;
      return object;
    });
    const more = offset + limit < messages.length;
    return {
      messages: slice,
      has_more: more,
      response_metadata: {
        next_cursor: more ? Buffer.from(String(offset + limit)).toString("base64") : "",
      },
    };
  }
}
