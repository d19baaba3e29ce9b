/**
 * What the sandbox server pushes to its page (`event: state` on `/sandbox/events`): the whole
 * visible state of the simulated workspace, with the exact JSON the bot sent.
 */

export interface SandboxPerson {
  id: string;
  name: string;
  realName: string;
}

/** A channel message or thread reply as the bot posted and last edited it. */
export interface ChannelMessage {
  ts: string;
  thread_ts?: string;
}

/** One answer only its recipient sees: `chat.postEphemeral`, or a `response_url` reply. */
export interface Ephemeral {
  id: string;
  user: string;
  ts: string;
  text: string;
  blocks: unknown[];
}

/** A modal as the views.* methods left it. */
export interface OpenView {
  id: string;
  hash: string;
  blocks: unknown[];
}

export interface Snapshot {
  channel: { id: string; name: string };
  bot: { id: string; name: string };
  /** The simulated GitLab's address: links to it open its pages through the sandbox. */
  gitlab: string;
  people: Record<string, SandboxPerson>;
  messages: ChannelMessage[];
  ephemerals: Ephemeral[];
  /** Each person's Home tab (by Slack user ID), as the bot last published it (views.publish). */
  homes: Record<string, OpenView>;
  /** The bot's direct messages to the sandbox's people (lease reminders), as posted and edited. */
  direct: (ChannelMessage & { channel: string })[];
  /**
   * Every open modal, with the person it was opened for and the page (`tab`, one load of the page)
   * whose action opened it: only that page shows it, and it closes when that page goes away.
   */
  views: { user: string; view: OpenView; tab?: string }[];
  /** Uploaded files that can be opened at `/sandbox/files/:id`. */
  files: string[];
  scenarios: { name: string; label: string; detail: string; on: boolean }[];
}
