import type { webApi } from "@slack/bolt";

/** A message as conversations.history and .replies return it, as far as vmbot reads it. */
export interface ListedMessage {
  ts?: string;
  text?: string;
  metadata?: unknown;
  files?: { name?: string }[];
}

interface Page {
  messages?: ListedMessage[];
  has_more?: boolean;
  response_metadata?: { next_cursor?: string };
}

/** Pages read at most in one search: a restart looks back minutes, not the channel's history. */
const MAX_PAGES = 10;

/**
 * The first message, in the channel's history since `oldest` or in the thread of `threadTs`,
 * that `matches` — how a restart finds what it posted before it crashed. Metadata included.
 */
export async function findMessage(
  client: Pick<webApi.WebClient, "conversations">,
  where: { channel: string; oldest?: string; threadTs?: string },
  matches: (message: ListedMessage) => boolean,
): Promise<{ ts: string } | undefined> {
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const common = {
      channel: where.channel,
      include_all_metadata: true,
      limit: 200,
      ...(cursor === undefined ? {} : { cursor }),
    };
    const listed: Page =
      where.threadTs === undefined
        ? await client.conversations.history({
            ...common,
            ...(where.oldest === undefined ? {} : { oldest: where.oldest }),
          })
        : await client.conversations.replies({ ...common, ts: where.threadTs });
    const found = listed.messages?.find(
      (message) => message.ts !== where.threadTs && matches(message),
    );
    if (found?.ts !== undefined) return { ts: found.ts };
    cursor = listed.response_metadata?.next_cursor;
    if (listed.has_more !== true || cursor === undefined || cursor === "") return undefined;
  }
  return undefined;
}

/**
 * The first message in `user`'s direct messages with vmbot since `oldest` that `matches`: how a
 * restart finds a direct message it sent before it crashed.
 */
export async function findDirectMessage(
  client: Pick<webApi.WebClient, "conversations">,
  user: string,
  oldest: string,
  matches: (message: ListedMessage) => boolean,
): Promise<{ ts: string } | undefined> {
  const opened = await client.conversations.open({ users: user });
  const channel = opened.channel?.id;
  return channel === undefined ? undefined : findMessage(client, { channel, oldest }, matches);
}
