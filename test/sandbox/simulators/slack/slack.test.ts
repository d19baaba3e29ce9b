import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

import { App, HTTPReceiver, LogLevel, type Logger } from "@slack/bolt";
import {
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebClient,
  type KnownBlock,
  type ModalView,
} from "@slack/web-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { TEST_SECRETS } from "../../../support/secrets.js";
import {
  startFakeServer,
  type FakeServer,
  type RecordedRequest,
} from "../../../../sandbox/simulators/http.js";
import {
  createSlackSigner,
  slackSignature,
  stateValuesFor,
  type DeliveryOptions,
  type SlackSigner,
} from "../../../../sandbox/simulators/slack/signer.js";
import {
  formatProblem,
  startFakeSlack,
  validateBlocks,
  validateModalView,
  type FakeSlack,
} from "../../../../sandbox/simulators/slack/index.js";

const BOT_TOKEN = TEST_SECRETS.botToken;
const SIGNING_SECRET = TEST_SECRETS.signingSecret;
const CHANNEL = "C0REQUESTS";
const ALICE = "U0ALICE";

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/** Collects what Bolt and WebClient log instead of printing it. */
function recordingLogger(): Logger & { errors: unknown[][] } {
  const errors: unknown[][] = [];
  return {
    errors,
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: (...message: unknown[]) => {
      errors.push(message);
    },
    setLevel: () => undefined,
    getLevel: () => LogLevel.ERROR,
    setName: () => undefined,
  };
}

function clientFor(fake: FakeSlack, token: string = BOT_TOKEN): WebClient {
  return new WebClient(token, {
    slackApiUrl: fake.apiUrl,
    retryConfig: { retries: 0 },
    logger: recordingLogger(),
  });
}

/** The Slack error a call failed with (`error.data`), or a test failure if it succeeded. */
async function slackError(call: Promise<unknown>): Promise<WebAPIPlatformError["data"]> {
  try {
    await call;
  } catch (error) {
    if (error instanceof WebAPIPlatformError) return error.data;
    throw error;
  }
  throw new Error("expected the call to fail with a Slack error");
}

function section(text: string, blockId?: string): KnownBlock {
  return {
    type: "section",
    text: { type: "mrkdwn", text },
    ...(blockId ? { block_id: blockId } : {}),
  };
}

function buttons(label: string): KnownBlock {
  return {
    type: "actions",
    block_id: "decision",
    elements: [
      {
        type: "button",
        action_id: "approve",
        text: { type: "plain_text", text: label },
        value: "R1",
      },
    ],
  };
}

const SMALL = { text: { type: "plain_text", text: "Small" }, value: "s" } as const;
const LARGE = { text: { type: "plain_text", text: "Large" }, value: "l" } as const;

function modal(overrides: Partial<ModalView> = {}): ModalView {
  return {
    type: "modal",
    callback_id: "test_modal",
    private_metadata: "R1",
    title: { type: "plain_text", text: "Create a VM" },
    submit: { type: "plain_text", text: "Create" },
    blocks: [
      {
        type: "input",
        block_id: "name_block",
        label: { type: "plain_text", text: "Name" },
        element: { type: "plain_text_input", action_id: "name" },
      },
      {
        type: "input",
        block_id: "size_block",
        label: { type: "plain_text", text: "Size" },
        element: {
          type: "static_select",
          action_id: "size",
          initial_option: SMALL,
          options: [SMALL, LARGE],
        },
      },
    ],
    ...overrides,
  };
}

/** The `view.state.values` Slack sends for `modal()` filled in with this name and size. */
function modalState(name: string | null, size: typeof SMALL | typeof LARGE) {
  return {
    name_block: { name: { type: "plain_text_input", value: name } },
    size_block: { size: { type: "static_select", selected_option: size } },
  };
}

// ---------------------------------------------------------------------------
// The fake, through the real WebClient
// ---------------------------------------------------------------------------

describe("fake Slack Web API, through the real WebClient", () => {
  let fake: FakeSlack;
  let client: WebClient;

  beforeEach(async () => {
    fake = await startFakeSlack({ botToken: BOT_TOKEN });
    client = clientFor(fake);
  });

  afterEach(async () => {
    await fake.close();
  });

  it("reads messages back with conversations.history and .replies, metadata on request", async () => {
    const metadata = { event_type: "vmbot_request", event_payload: { request_id: "vm-1" } };
    const parent = await client.chat.postMessage({ channel: CHANNEL, text: "parent", metadata });
    const reply = await client.chat.postMessage({
      channel: CHANNEL,
      thread_ts: parent.ts!,
      text: "reply",
      metadata: { event_type: "vmbot_step", event_payload: { step: "applied" } },
    });
    await client.filesUploadV2({
      channel_id: CHANNEL,
      thread_ts: parent.ts!,
      filename: "plan.txt",
      content: "plan",
    });
    await client.chat.postMessage({ channel: CHANNEL, text: "later" });

    const history = await client.conversations.history({ channel: CHANNEL });
    expect(history.messages?.map((m) => m.text)).toEqual(["later", "parent"]);
    expect(history.messages?.[1]?.metadata).toBeUndefined();
    const withMetadata = await client.conversations.history({
      channel: CHANNEL,
      include_all_metadata: true,
      oldest: String(Number(parent.ts) - 1),
      limit: 1,
    });
    expect(withMetadata.messages?.map((m) => m.text)).toEqual(["later"]);
    expect(withMetadata.has_more).toBe(true);
    const next = await client.conversations.history({
      channel: CHANNEL,
      include_all_metadata: true,
      cursor: withMetadata.response_metadata?.next_cursor ?? "",
    });
    expect(next.messages?.[0]?.metadata).toEqual(metadata);

    const thread = await client.conversations.replies({
      channel: CHANNEL,
      ts: parent.ts!,
      include_all_metadata: true,
    });
    expect(thread.messages?.map((m) => m.ts)).toEqual([
      parent.ts,
      reply.ts,
      expect.any(String) as string,
    ]);
    expect(thread.messages?.[1]?.metadata?.event_type).toBe("vmbot_step");
    expect(thread.messages?.[2]?.files?.[0]?.name).toBe("plan.txt");
    await expect(
      client.conversations.replies({ channel: CHANNEL, ts: "1.000001" }),
    ).rejects.toMatchObject({
      data: { error: "thread_not_found" },
    });
  });

  it("answers auth.test with the bot's identity", async () => {
    const result = await client.auth.test();

    expect(result).toMatchObject({
      ok: true,
      url: `https://${fake.identity.teamDomain}.slack.com/`,
      team: fake.identity.teamName,
      user: fake.identity.botUserName,
      team_id: fake.identity.teamId,
      user_id: fake.identity.botUserId,
      bot_id: fake.identity.botId,
    });
    expect(fake.calls).toEqual([
      { method: "auth.test", args: {}, at: expect.any(Number) as number, ok: true },
    ]);
  });

  it("refuses a wrong token with invalid_auth", async () => {
    const error = await slackError(clientFor(fake, "xoxb-not-the-bot").auth.test());

    expect(error.error).toBe("invalid_auth");
    expect(fake.calls[0]).toMatchObject({ method: "auth.test", ok: false, error: "invalid_auth" });
  });

  it("takes the bot's other tokens (rotation) beside its own, and tells which token made each call", async () => {
    await fake.close();
    const rotated = `${BOT_TOKEN}-rotated`;
    fake = await startFakeSlack({ botToken: BOT_TOKEN, otherBotTokens: [rotated] });
    await clientFor(fake).auth.test();
    await clientFor(fake, rotated).auth.test();
    await slackError(clientFor(fake, "xoxb-not-the-bot").auth.test());

    expect(fake.calls.map((call) => [call.ok, fake.callerOf(call)])).toEqual([
      [true, BOT_TOKEN],
      [true, rotated],
      [false, "xoxb-not-the-bot"],
    ]);
  });

  it("refuses a call without a token with not_authed", async () => {
    const error = await slackError(clientFor(fake, "").auth.test());

    expect(error.error).toBe("not_authed");
  });

  it("answers an unknown method with unknown_method", async () => {
    const error = await slackError(client.apiCall("chat.teleport", { channel: CHANNEL }));

    expect(error.error).toBe("unknown_method");
  });

  it("posts a message and then updates it in place", async () => {
    const posted = await client.chat.postMessage({
      channel: CHANNEL,
      text: "Request R1 is queued",
      blocks: [section("*R1* queued", "status"), buttons("Approve")],
      metadata: { event_type: "vm_request", event_payload: { id: "R1" } },
    });

    expect(posted).toMatchObject({
      ok: true,
      channel: CHANNEL,
      message: { text: "Request R1 is queued" },
    });
    expect(posted.ts).toMatch(/^\d{10}\.\d{6}$/);
    const ts = posted.ts ?? "";
    expect(fake.callsTo("chat.postMessage")[0]?.args.blocks).toEqual([
      section("*R1* queued", "status"),
      buttons("Approve"),
    ]);
    expect(fake.message(CHANNEL, ts)).toMatchObject({
      text: "Request R1 is queued",
      metadata: { event_type: "vm_request", event_payload: { id: "R1" } },
      user: fake.identity.botUserId,
    });

    const updated = await client.chat.update({
      channel: CHANNEL,
      ts,
      text: "Request R1 is planning",
      blocks: [section("*R1* planning", "status-2")],
    });

    expect(updated).toMatchObject({
      ok: true,
      channel: CHANNEL,
      ts,
      text: "Request R1 is planning",
    });
    expect(fake.messages).toHaveLength(1);
    expect(fake.message(CHANNEL, ts)).toMatchObject({
      text: "Request R1 is planning",
      blocks: [section("*R1* planning", "status-2")],
      metadata: { event_type: "vm_request" },
    });
  });

  it("gives every message a later ts than the one before", async () => {
    const first = await client.chat.postMessage({ channel: CHANNEL, text: "one" });
    const second = await client.chat.postMessage({ channel: CHANNEL, text: "two" });

    expect(Number(second.ts)).toBeGreaterThan(Number(first.ts));
  });

  it("fills in the block_id Slack generates for a block that has none", async () => {
    await client.chat.postMessage({ channel: CHANNEL, text: "x", blocks: [section("no id")] });

    expect(fake.messages[0]?.blocks[0]?.block_id).toEqual(expect.any(String));
  });

  it("refuses to update a message that does not exist with message_not_found", async () => {
    const error = await slackError(
      client.chat.update({ channel: CHANNEL, ts: "1700000000.000100", text: "x" }),
    );

    expect(error.error).toBe("message_not_found");
  });

  it("refuses an empty channel with channel_not_found and an empty message with no_text", async () => {
    const noChannel = await slackError(client.chat.postMessage({ channel: "", text: "hi" }));
    const noText = await slackError(client.apiCall("chat.postMessage", { channel: CHANNEL }));

    expect(noChannel.error).toBe("channel_not_found");
    expect(noText.error).toBe("no_text");
    expect(fake.messages).toHaveLength(0);
  });

  it("refuses to post in a channel the bot is not a member of with not_in_channel", async () => {
    fake.addChannel({ id: "C0PRIVATE", name: "infra-private", isPrivate: true, isMember: false });

    const error = await slackError(client.chat.postMessage({ channel: "C0PRIVATE", text: "hi" }));

    expect(error.error).toBe("not_in_channel");
  });

  it("keeps ephemeral messages apart from channel messages", async () => {
    const result = await client.chat.postEphemeral({
      channel: CHANNEL,
      user: ALICE,
      text: "only you",
    });

    expect(result.message_ts).toMatch(/^\d{10}\.\d{6}$/);
    expect(fake.ephemerals).toEqual([
      {
        channel: CHANNEL,
        user: ALICE,
        message_ts: result.message_ts,
        text: "only you",
        blocks: [],
      },
    ]);
    expect(fake.messages).toHaveLength(0);
  });

  it("opens a modal with a fresh trigger_id and returns the view as Slack does", async () => {
    const result = await client.views.open({ trigger_id: fake.issueTriggerId(), view: modal() });

    expect(result.view).toMatchObject({
      id: expect.stringMatching(/^V[0-9A-Z]+$/) as string,
      team_id: fake.identity.teamId,
      type: "modal",
      callback_id: "test_modal",
      private_metadata: "R1",
      title: { type: "plain_text", text: "Create a VM" },
      submit: { type: "plain_text", text: "Create" },
      state: { values: {} },
      hash: expect.stringMatching(/^\d+\.[0-9a-f]+$/) as string,
      app_id: fake.identity.appId,
      bot_id: fake.identity.botId,
    });
    expect(fake.views).toHaveLength(1);
    expect(fake.callsTo("views.open")[0]?.args.view).toEqual(modal());
  });

  it("issues trigger_ids in Slack's format", () => {
    expect(fake.issueTriggerId()).toMatch(/^\d{13}\.\d{13}\.[0-9a-f]{32}$/);
  });

  it("refuses a trigger_id used twice with exchanged_trigger_id", async () => {
    const triggerId = fake.issueTriggerId();
    await client.views.open({ trigger_id: triggerId, view: modal() });

    const error = await slackError(client.views.open({ trigger_id: triggerId, view: modal() }));

    expect(error.error).toBe("exchanged_trigger_id");
    expect(fake.views).toHaveLength(1);
  });

  it("refuses a trigger_id older than its lifetime with expired_trigger_id", async () => {
    let now = Date.now();
    const shortLived = await startFakeSlack({ botToken: BOT_TOKEN, now: () => now });
    try {
      const triggerId = shortLived.issueTriggerId();
      now += 3_001;

      const error = await slackError(
        clientFor(shortLived).views.open({ trigger_id: triggerId, view: modal() }),
      );

      expect(error.error).toBe("expired_trigger_id");
    } finally {
      await shortLived.close();
    }
  });

  it("refuses a trigger_id it never issued with invalid_trigger_id", async () => {
    const error = await slackError(
      client.views.open({ trigger_id: "1234567890.987654321.abcdef", view: modal() }),
    );

    expect(error.error).toBe("invalid_trigger_id");
  });

  it("updates a view by id, refusing a stale hash with hash_conflict and an unknown id with not_found", async () => {
    const opened = await client.views.open({ trigger_id: fake.issueTriggerId(), view: modal() });
    const id = opened.view?.id ?? "";
    const hash = opened.view?.hash ?? "";

    const updated = await client.views.update({
      view_id: id,
      hash,
      view: modal({ title: { type: "plain_text", text: "Planning…" } }),
    });
    const stale = await slackError(client.views.update({ view_id: id, hash, view: modal() }));
    const unknown = await slackError(
      client.views.update({ view_id: "V0NOSUCHVIEW", view: modal() }),
    );

    expect(updated.view).toMatchObject({ id, title: { text: "Planning…" } });
    expect(updated.view?.hash).not.toBe(hash);
    expect(fake.view(id)?.title.text).toBe("Planning…");
    expect(stale.error).toBe("hash_conflict");
    expect(unknown.error).toBe("not_found");
  });

  it("pushes views onto the modal the trigger came from, at most three deep", async () => {
    const root = await client.views.open({ trigger_id: fake.issueTriggerId(), view: modal() });
    const rootId = root.view?.id ?? "";

    const pushed = await client.views.push({
      trigger_id: fake.issueTriggerId({ viewId: rootId }),
      view: modal({ callback_id: "second" }),
    });
    await client.views.push({
      trigger_id: fake.issueTriggerId({ viewId: rootId }),
      view: modal({ callback_id: "third" }),
    });
    const fourth = await slackError(
      client.views.push({ trigger_id: fake.issueTriggerId({ viewId: rootId }), view: modal() }),
    );

    expect(pushed.view).toMatchObject({ root_view_id: rootId, previous_view_id: rootId });
    expect(fourth.error).toBe("push_limit_reached");
  });

  it.each([
    {
      limit: "51 blocks in a message",
      blocks: Array.from({ length: 51 }, (_, i) => section(`line ${String(i)}`)),
      message: "[ERROR] no more than 50 items allowed [json-pointer:/blocks]",
    },
    {
      limit: "a section text of 3,001 characters",
      blocks: [section("x".repeat(3001))],
      message: "[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]",
    },
    {
      limit: "a section field of 2,001 characters",
      blocks: [
        {
          type: "section",
          fields: [{ type: "mrkdwn", text: "y".repeat(2001) }],
        } satisfies KnownBlock,
      ],
      message: "[ERROR] must be less than 2001 characters [json-pointer:/blocks/0/fields/0/text]",
    },
    {
      limit: "a button label of 76 characters",
      blocks: [buttons("z".repeat(76))],
      message:
        "[ERROR] must be less than 76 characters [json-pointer:/blocks/0/elements/0/text/text]",
    },
  ])("refuses $limit with invalid_blocks", async ({ blocks, message }) => {
    const error = await slackError(
      client.chat.postMessage({ channel: CHANNEL, text: "x", blocks }),
    );

    expect(error.error).toBe("invalid_blocks");
    expect(error.response_metadata?.messages).toContain(message);
    expect(fake.messages).toHaveLength(0);
  });

  it("accepts blocks exactly at Slack's limits", async () => {
    const atLimits: KnownBlock[] = [
      section("x".repeat(3000)),
      { type: "section", fields: [{ type: "mrkdwn", text: "y".repeat(2000) }] },
      buttons("z".repeat(75)),
      ...Array.from({ length: 47 }, (_, i) => section(`line ${String(i)}`)),
    ];

    await expect(
      client.chat.postMessage({ channel: CHANNEL, text: "x", blocks: atLimits }),
    ).resolves.toMatchObject({ ok: true });
  });

  it("refuses blocks in chat.update as in chat.postMessage", async () => {
    const posted = await client.chat.postMessage({ channel: CHANNEL, text: "x" });

    const error = await slackError(
      client.chat.update({ channel: CHANNEL, ts: posted.ts ?? "", blocks: [section("")] }),
    );

    expect(error.error).toBe("invalid_blocks");
    expect(error.response_metadata?.messages).toEqual([
      "[ERROR] must be more than 0 characters [json-pointer:/blocks/0/text/text]",
    ]);
  });

  it.each([
    {
      problem: "a title longer than 24 characters",
      view: modal({ title: { type: "plain_text", text: "A title that is too long!" } }),
      message: "[ERROR] must be less than 25 characters [json-pointer:/view/title/text]",
    },
    {
      problem: "private_metadata longer than 3,000 characters",
      view: modal({ private_metadata: "m".repeat(3001) }),
      message: "[ERROR] must be less than 3001 characters [json-pointer:/view/private_metadata]",
    },
    {
      problem: "input blocks and no submit button",
      view: modal({ submit: undefined }),
      message:
        "[ERROR] must provide a submit property when using input blocks [json-pointer:/view]",
    },
    {
      problem: "101 blocks",
      view: modal({ blocks: Array.from({ length: 101 }, (_, i) => section(String(i))) }),
      message: "[ERROR] no more than 100 items allowed [json-pointer:/view/blocks]",
    },
  ])("refuses a modal with $problem with invalid_arguments", async ({ view, message }) => {
    const error = await slackError(client.views.open({ trigger_id: fake.issueTriggerId(), view }));

    expect(error.error).toBe("invalid_arguments");
    expect(error.response_metadata?.messages).toContain(message);
    expect(fake.views).toHaveLength(0);
  });

  it("answers 429 with Retry-After when told to, then serves the next call", async () => {
    fake.failNext("chat.postMessage", { status: 429, retryAfter: 7 });
    const rateLimitedClient = new WebClient(BOT_TOKEN, {
      slackApiUrl: fake.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      logger: recordingLogger(),
    });

    const failure: unknown = await rateLimitedClient.chat
      .postMessage({ channel: CHANNEL, text: "hi" })
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(WebAPIRateLimitedError);
    expect(failure).toMatchObject({ retryAfter: 7 });
    expect(fake.calls[0]).toMatchObject({
      method: "chat.postMessage",
      ok: false,
      error: "ratelimited",
    });
    await expect(
      rateLimitedClient.chat.postMessage({ channel: CHANNEL, text: "hi" }),
    ).resolves.toMatchObject({ ok: true });
  });

  it("fails the next call with the Slack error it is told to, once", async () => {
    fake.failNext("chat.update", "edit_window_closed");
    const posted = await client.chat.postMessage({ channel: CHANNEL, text: "x" });

    const error = await slackError(
      client.chat.update({ channel: CHANNEL, ts: posted.ts ?? "", text: "y" }),
    );

    expect(error.error).toBe("edit_window_closed");
    await expect(
      client.chat.update({ channel: CHANNEL, ts: posted.ts ?? "", text: "y" }),
    ).resolves.toMatchObject({ ok: true });
  });

  it("lists a user group's members and refuses an unknown group with no_such_subteam", async () => {
    fake.addUsergroup("S0APPROVERS", [ALICE, "U0BOB"]);

    const members = await client.usergroups.users.list({ usergroup: "S0APPROVERS" });
    const unknown = await slackError(client.usergroups.users.list({ usergroup: "S0NOBODY" }));

    expect(members).toMatchObject({ ok: true, users: [ALICE, "U0BOB"] });
    expect(unknown.error).toBe("no_such_subteam");
  });

  it("opens the direct message with a user, the channel a post to the user's ID lands in", async () => {
    const opened = await client.conversations.open({ users: ALICE });
    const posted = await client.chat.postMessage({ channel: ALICE, text: "hello" });
    const missing = await slackError(client.conversations.open({ users: "not-a-user" }));
    expect(opened.channel?.id).toBe(`D${ALICE.slice(1)}`);
    expect(posted.channel).toBe(opened.channel?.id);
    expect(missing.error).toBe("user_not_found");
  });

  it("describes users and channels", async () => {
    fake.addUser({ id: ALICE, name: "alice", realName: "Alice Martin", isAdmin: true });

    const user = await client.users.info({ user: ALICE });
    const channel = await client.conversations.info({ channel: CHANNEL });
    const missing = await slackError(client.users.info({ user: "not-a-user" }));

    expect(user.user).toMatchObject({
      id: ALICE,
      name: "alice",
      real_name: "Alice Martin",
      is_admin: true,
    });
    expect(channel.channel).toMatchObject({ id: CHANNEL, is_member: true });
    expect(missing.error).toBe("user_not_found");
  });

  it("reads a JSON body with a bearer token as it reads a form body", async () => {
    const response = await fetch(`${fake.apiUrl}chat.postMessage`, {
      method: "POST",
      headers: {
        "content-type": "application/json; charset=utf-8",
        authorization: `Bearer ${BOT_TOKEN}`,
      },
      body: JSON.stringify({ channel: CHANNEL, text: "json", blocks: [section("json")] }),
    });

    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ok: true, channel: CHANNEL });
    expect(fake.calls[0]?.args).toEqual({
      channel: CHANNEL,
      text: "json",
      blocks: [section("json")],
    });
  });

  it("ignores a token inside a JSON body, as Slack does", async () => {
    const response = await fetch(`${fake.apiUrl}auth.test`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: BOT_TOKEN }),
    });

    expect(await response.json()).toEqual({ ok: false, error: "not_authed" });
  });

  it("resolves waitFor with a call made later, and explains a timeout with the calls made", async () => {
    const pending = fake.waitFor("chat.update", (call) => call.args.text === "later");
    const posted = await client.chat.postMessage({ channel: CHANNEL, text: "now" });
    await client.chat.update({ channel: CHANNEL, ts: posted.ts ?? "", text: "later" });

    await expect(pending).resolves.toMatchObject({ method: "chat.update", ok: true });
    await expect(fake.waitFor("views.open", undefined, 20)).rejects.toThrow(
      "No views.open call within 20 ms; calls so far: chat.postMessage, chat.update",
    );
  });

  it("stores a file uploaded with files.uploadV2", async () => {
    await client.filesUploadV2({
      channel_id: CHANNEL,
      content: "Plan: 1 to add, 0 to change, 0 to destroy.",
      filename: "tfplan.txt",
      title: "Terraform plan",
      initial_comment: "Full plan",
    });

    expect(fake.uploads).toEqual([
      {
        id: expect.stringMatching(/^F/) as string,
        filename: "tfplan.txt",
        title: "Terraform plan",
        length: 42,
        content: "Plan: 1 to add, 0 to change, 0 to destroy.",
        completed: true,
        channel: CHANNEL,
        initial_comment: "Full plan",
        thread_ts: undefined,
      },
    ]);
  });
});

// ---------------------------------------------------------------------------
// Block Kit validation
// ---------------------------------------------------------------------------

describe("validateBlocks", () => {
  it("accepts a message of every known block type", () => {
    const blocks = [
      { type: "header", text: { type: "plain_text", text: "VM request" } },
      section("*web-01*"),
      { type: "divider" },
      { type: "context", elements: [{ type: "mrkdwn", text: "requested by <@U0ALICE>" }] },
      buttons("Approve"),
      { type: "image", image_url: "https://example.com/a.png", alt_text: "graph" },
      { type: "rich_text", elements: [] },
      { type: "file", external_id: "plan", source: "remote" },
      {
        type: "input",
        label: { type: "plain_text", text: "Reason" },
        element: { type: "plain_text_input", action_id: "reason" },
      },
    ];

    expect(validateBlocks(blocks, { surface: "message" })).toEqual([]);
  });

  it.each([
    {
      rule: "a header longer than 150 characters",
      block: { type: "header", text: { type: "plain_text", text: "h".repeat(151) } },
      problem: { pointer: "/blocks/0/text/text", message: "must be less than 151 characters" },
    },
    {
      rule: "a header in mrkdwn",
      block: { type: "header", text: { type: "mrkdwn", text: "*h*" } },
      problem: { pointer: "/blocks/0/text/type", message: "must be a valid enum value" },
    },
    {
      rule: "a section with more than 10 fields",
      block: {
        type: "section",
        fields: Array.from({ length: 11 }, () => ({ type: "mrkdwn", text: "f" })),
      },
      problem: { pointer: "/blocks/0/fields", message: "no more than 10 items allowed" },
    },
    {
      rule: "a section with neither text nor fields",
      block: { type: "section" },
      problem: { pointer: "/blocks/0", message: "missing required field: text" },
    },
    {
      rule: "a button label longer than 75 characters in a section accessory",
      block: {
        ...section("pick"),
        accessory: {
          type: "button",
          action_id: "a",
          text: { type: "plain_text", text: "b".repeat(76) },
        },
      },
      problem: {
        pointer: "/blocks/0/accessory/text/text",
        message: "must be less than 76 characters",
      },
    },
    {
      rule: "an unknown block type",
      block: { type: "carousel" },
      problem: { pointer: "/blocks/0", message: "failed to match all allowed schemas" },
    },
    {
      rule: "a block_id longer than 255 characters",
      block: section("x", "b".repeat(256)),
      problem: { pointer: "/blocks/0/block_id", message: "must be less than 256 characters" },
    },
    {
      rule: "an actions block with more than 25 elements",
      block: {
        type: "actions",
        elements: Array.from({ length: 26 }, (_, i) => ({
          type: "button",
          action_id: `b${String(i)}`,
          text: { type: "plain_text", text: "b" },
        })),
      },
      problem: { pointer: "/blocks/0/elements", message: "no more than 25 items allowed" },
    },
    {
      rule: "two elements of an actions block sharing an action_id",
      block: {
        type: "actions",
        elements: [
          { type: "button", action_id: "same", text: { type: "plain_text", text: "1" } },
          { type: "button", action_id: "same", text: { type: "plain_text", text: "2" } },
        ],
      },
      problem: { pointer: "/blocks/0/elements/1/action_id", message: 'duplicate action_id "same"' },
    },
    {
      rule: "an input block without a label",
      block: { type: "input", element: { type: "plain_text_input", action_id: "n" } },
      problem: { pointer: "/blocks/0", message: "missing required field: label" },
    },
    {
      rule: "an input block without an element",
      block: { type: "input", label: { type: "plain_text", text: "Name" } },
      problem: { pointer: "/blocks/0", message: "missing required field: element" },
    },
  ])("reports $rule", ({ block, problem }) => {
    expect(validateBlocks([block], { surface: "message" })).toEqual([problem]);
  });

  it("reports a block_id used twice in the same message", () => {
    const problems = validateBlocks([section("a", "same"), section("b", "same")], {
      surface: "message",
    });

    expect(problems).toEqual([
      { pointer: "/blocks/1/block_id", message: 'duplicate block_id "same"' },
    ]);
  });

  it("allows 100 blocks in a modal but only 50 in a message", () => {
    const hundred = Array.from({ length: 100 }, (_, i) => section(String(i)));

    expect(validateBlocks(hundred, { surface: "modal" })).toEqual([]);
    expect(validateBlocks(hundred, { surface: "message" })).toEqual([
      { pointer: "/blocks", message: "no more than 50 items allowed" },
    ]);
  });

  it("formats a problem the way Slack reports it", () => {
    expect(
      formatProblem({
        pointer: "/blocks/0/text/text",
        message: "must be less than 3001 characters",
      }),
    ).toBe("[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]");
  });
});

describe("validateModalView", () => {
  it("accepts a complete modal", () => {
    expect(validateModalView(modal())).toEqual([]);
  });

  it("locates block problems under /view/blocks", () => {
    const problems = validateModalView(modal({ blocks: [section("x".repeat(3001))] }));

    expect(problems).toEqual([
      { pointer: "/view/blocks/0/text/text", message: "must be less than 3001 characters" },
    ]);
  });

  it("reports a missing title and a close button longer than 24 characters", () => {
    const untitled: Record<string, unknown> = {
      ...modal({ close: { type: "plain_text", text: "c".repeat(25) } }),
    };
    delete untitled.title;

    expect(validateModalView(untitled)).toEqual([
      { pointer: "/view", message: "missing required field: title" },
      { pointer: "/view/close/text", message: "must be less than 25 characters" },
    ]);
  });
});

// ---------------------------------------------------------------------------
// The request signer
// ---------------------------------------------------------------------------

describe("Slack request signer", () => {
  let fake: FakeSlack;
  /** Stands in for the bot's request URL and records what the signer sends it. */
  let receiver: FakeServer;
  let requests: RecordedRequest[];
  let signer: SlackSigner;

  beforeEach(async () => {
    fake = await startFakeSlack({ botToken: BOT_TOKEN });
    requests = [];
    receiver = await startFakeServer((req, res) => {
      requests.push(req);
      res.writeHead(200).end();
    });
    signer = createSlackSigner({
      eventsUrl: `${receiver.url}/slack/events`,
      signingSecret: SIGNING_SECRET,
      slack: fake,
    });
  });

  afterEach(async () => {
    await receiver.close();
    await fake.close();
  });

  it("signs a slash command so that Slack's verification algorithm accepts it", async () => {
    const delivery = await signer.slashCommand({
      text: "create web-01",
      userId: ALICE,
      channelId: CHANNEL,
    });

    const request = requests[0];
    const timestamp = String(request?.headers["x-slack-request-timestamp"]);
    const expected = `v0=${createHmac("sha256", SIGNING_SECRET)
      .update(`v0:${timestamp}:${request?.body ?? ""}`)
      .digest("hex")}`;
    expect(request?.headers["x-slack-signature"]).toBe(expected);
    expect(request?.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(5);
    expect(slackSignature(SIGNING_SECRET, timestamp, request?.body ?? "")).toBe(expected);
    expect(Object.fromEntries(new URLSearchParams(request?.body))).toEqual({
      token: expect.any(String) as string,
      team_id: fake.identity.teamId,
      team_domain: fake.identity.teamDomain,
      channel_id: CHANNEL,
      channel_name: expect.any(String) as string,
      user_id: ALICE,
      user_name: expect.any(String) as string,
      command: "/vm",
      text: "create web-01",
      api_app_id: fake.identity.appId,
      is_enterprise_install: "false",
      response_url: delivery.responseUrl,
      trigger_id: delivery.triggerId,
    });
  });

  it("sends interactions as a form-encoded payload, with retry headers when asked", async () => {
    const view = (
      await clientFor(fake).views.open({ trigger_id: fake.issueTriggerId(), view: modal() })
    ).view;

    await signer.viewSubmission({
      view: fake.view(view?.id ?? "") ?? {},
      values: stateValuesFor(fake.views[0] ?? { blocks: [] }, { name: "web-01" }),
      userId: ALICE,
      retryNum: 1,
      retryReason: "http_timeout",
    });

    const request = requests[0];
    const payload: unknown = JSON.parse(
      new URLSearchParams(request?.body).get("payload") ?? "null",
    );
    expect(request?.headers["x-slack-retry-num"]).toBe("1");
    expect(request?.headers["x-slack-retry-reason"]).toBe("http_timeout");
    expect(payload).toMatchObject({
      type: "view_submission",
      team: { id: fake.identity.teamId },
      user: { id: ALICE, team_id: fake.identity.teamId },
      api_app_id: fake.identity.appId,
      trigger_id: expect.any(String) as string,
      response_urls: [],
      is_enterprise_install: false,
      view: {
        id: view?.id,
        callback_id: "test_modal",
        private_metadata: "R1",
        state: { values: modalState("web-01", SMALL) },
      },
    });
  });
});

describe("stateValuesFor", () => {
  it("fills inputs by action_id and keeps initial values of the others", () => {
    expect(stateValuesFor(modal(), { size: "l" })).toEqual(modalState(null, LARGE));
  });

  it("refuses an option the element does not offer and an action_id the view lacks", () => {
    expect(() => stateValuesFor(modal(), { size: "xl" })).toThrow(
      '"xl" is not one of its options ("s", "l")',
    );
    expect(() => stateValuesFor(modal(), { colour: "red" })).toThrow(
      'no input with action_id "colour"',
    );
  });
});

// ---------------------------------------------------------------------------
// A real Bolt app behind HTTPReceiver
// ---------------------------------------------------------------------------

describe("a real Bolt app receiving signed requests", () => {
  let fake: FakeSlack;
  let app: App;
  let logger: ReturnType<typeof recordingLogger>;
  let eventsUrl: string;
  let closeServer: () => Promise<void>;

  beforeEach(async () => {
    fake = await startFakeSlack({ botToken: BOT_TOKEN });
    logger = recordingLogger();
    const receiver = new HTTPReceiver({ signingSecret: SIGNING_SECRET, logger });
    app = new App({
      token: BOT_TOKEN,
      receiver,
      logger,
      clientOptions: { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } },
    });
    const server = createServer(receiver.requestListener);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    eventsUrl = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/slack/events`;
    closeServer = () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      });
  });

  afterEach(async () => {
    await closeServer();
    await fake.close();
  });

  function signer() {
    return createSlackSigner({ eventsUrl, signingSecret: SIGNING_SECRET, slack: fake });
  }

  it("accepts a signed slash command, and the trigger_id it carries opens a modal", async () => {
    app.command("/vm", async ({ ack, body, client }) => {
      await ack();
      await client.views.open({ trigger_id: body.trigger_id, view: modal() });
    });

    const delivery = await signer().slashCommand({
      text: "create",
      userId: ALICE,
      channelId: CHANNEL,
    });

    expect(delivery.status).toBe(200);
    const opened = await fake.waitFor("views.open");
    expect(opened).toMatchObject({ ok: true, args: { trigger_id: delivery.triggerId } });
    expect(fake.views).toHaveLength(1);
    expect(logger.errors).toEqual([]);
  });

  /** Sends `/vm create` with the given signature or timestamp; reports whether the listener ran. */
  async function slashCommandWith(
    options: DeliveryOptions,
  ): Promise<{ status: number; handled: boolean }> {
    let handled = false;
    app.command("/vm", async ({ ack }) => {
      handled = true;
      await ack();
    });
    const delivery = await signer().slashCommand({
      text: "create",
      userId: ALICE,
      channelId: CHANNEL,
      ...options,
    });
    return { status: delivery.status, handled };
  }

  it("refuses (401) a slash command whose signature was tampered with", async () => {
    const signature = slackSignature(SIGNING_SECRET, "1", "another body");

    const { status, handled } = await slashCommandWith({ signature });

    expect(status).toBe(401);
    expect(handled).toBe(false);
  });

  it("refuses (401) a slash command signed more than five minutes ago", async () => {
    const sixMinutesAgo = Math.floor(Date.now() / 1000) - 6 * 60;

    const { status, handled } = await slashCommandWith({ timestamp: sixMinutesAgo });

    expect(status).toBe(401);
    expect(handled).toBe(false);
  });

  it("passes the retry headers on to the listener's context", async () => {
    let retry: unknown;
    app.command("/vm", async ({ ack, context }) => {
      retry = { num: context.retryNum, reason: context.retryReason };
      await ack();
    });

    await signer().slashCommand({
      text: "help",
      userId: ALICE,
      channelId: CHANNEL,
      retryNum: 2,
      retryReason: "http_timeout",
    });

    expect(retry).toEqual({ num: 2, reason: "http_timeout" });
  });

  it("records what the listener sends to the slash command's response_url", async () => {
    app.command("/vm", async ({ ack, respond }) => {
      await ack();
      await respond({ response_type: "ephemeral", text: "Usage: /vm create" });
    });

    const delivery = await signer().slashCommand({
      text: "help",
      userId: ALICE,
      channelId: CHANNEL,
    });

    await expect(fake.waitForResponse()).resolves.toMatchObject({
      url: delivery.responseUrl,
      body: { response_type: "ephemeral", text: "Usage: /vm create" },
    });
  });

  it("returns the listener's errors ack for a view submission", async () => {
    app.view("test_modal", async ({ ack, view }) => {
      const name = view.state.values.name_block?.name?.value;
      await ack({ response_action: "errors", errors: { name_block: `${String(name)} is taken` } });
    });
    await clientFor(fake).views.open({ trigger_id: fake.issueTriggerId(), view: modal() });
    const opened = fake.views[0] ?? modal();

    const delivery = await signer().viewSubmission({
      view: opened,
      values: stateValuesFor(opened, { name: "web-01" }),
      userId: ALICE,
    });

    expect(delivery.status).toBe(200);
    expect(delivery.json).toEqual({
      response_action: "errors",
      errors: { name_block: "web-01 is taken" },
    });
  });

  it("delivers a button click on a posted message with a trigger_id that opens a modal", async () => {
    app.action("approve", async ({ ack, body, client }) => {
      await ack();
      if (body.type === "block_actions") {
        await client.views.open({ trigger_id: body.trigger_id, view: modal() });
      }
    });
    const posted = await clientFor(fake).chat.postMessage({
      channel: CHANNEL,
      text: "R1",
      blocks: [buttons("Approve")],
    });
    const message = fake.message(CHANNEL, posted.ts ?? "");
    if (message === undefined) throw new Error("the fake lost the message");

    const delivery = await signer().blockAction({ message, userId: ALICE, actionId: "approve" });

    expect(delivery.status).toBe(200);
    expect(delivery.payload).toMatchObject({
      type: "block_actions",
      container: { type: "message", message_ts: message.ts, channel_id: CHANNEL },
      channel: { id: CHANNEL },
      message: { ts: message.ts, blocks: message.blocks },
      actions: [{ action_id: "approve", block_id: "decision", value: "R1", type: "button" }],
    });
    await expect(fake.waitFor("views.open")).resolves.toMatchObject({ ok: true });
  });

  it("refuses to click a button the message does not have", async () => {
    const posted = await clientFor(fake).chat.postMessage({ channel: CHANNEL, text: "plain" });
    const message = fake.message(CHANNEL, posted.ts ?? "");
    if (message === undefined) throw new Error("the fake lost the message");

    await expect(
      signer().blockAction({ message, userId: ALICE, actionId: "approve" }),
    ).rejects.toThrow('No element with action_id "approve" to click');
  });
});

describe("fake Slack: onChange", () => {
  let fake: FakeSlack;

  beforeEach(async () => {
    fake = await startFakeSlack({ botToken: BOT_TOKEN });
  });

  afterEach(async () => {
    await fake.close();
  });

  /** POSTs a JSON body to a response_url, as Bolt's `respond()` does. */
  async function respond(url: string, body: object): Promise<Response> {
    return fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  it("fires after every Web API call, failed ones too, with the call already recorded", async () => {
    const client = clientFor(fake);
    const seen: string[] = [];
    fake.onChange(() => {
      seen.push(fake.calls.map((call) => call.method).join(","));
    });

    await client.chat.postMessage({ channel: CHANNEL, text: "hello" });
    expect(seen).toStrictEqual(["chat.postMessage"]);
    expect(fake.messages).toHaveLength(1);

    await slackError(
      clientFor(fake, "xoxb-wrong").chat.postMessage({ channel: CHANNEL, text: "x" }),
    );
    expect(seen).toStrictEqual(["chat.postMessage", "chat.postMessage,chat.postMessage"]);
    expect(fake.calls[1]).toMatchObject({ ok: false, error: "invalid_auth" });
  });

  it("fires after a response_url post, with the post already recorded, but not for an unknown URL", async () => {
    let fired = 0;
    let postsWhenFired = -1;
    fake.onChange(() => {
      fired += 1;
      postsWhenFired = fake.responses.length;
    });
    const url = fake.issueResponseUrl();
    expect(fired).toBe(0); // issuing a URL changes nothing a user sees

    const response = await respond(url, { response_type: "ephemeral", text: "Working on it" });
    expect(response.status).toBe(200);
    expect(fired).toBe(1);
    expect(postsWhenFired).toBe(1);
    expect(fake.responses[0]).toMatchObject({
      url,
      body: { response_type: "ephemeral", text: "Working on it" },
    });

    const unknown = await respond(`${url}x`, { text: "nobody issued this" });
    expect(unknown.status).toBe(404);
    expect(fired).toBe(1);
  });

  it("stops firing once its stop function is called, leaving other listeners subscribed", async () => {
    const client = clientFor(fake);
    let stopped = 0;
    let kept = 0;
    const stop = fake.onChange(() => {
      stopped += 1;
    });
    fake.onChange(() => {
      kept += 1;
    });
    const url = fake.issueResponseUrl();

    await client.chat.postMessage({ channel: CHANNEL, text: "one" });
    await respond(url, { text: "first" });
    expect([stopped, kept]).toStrictEqual([2, 2]);

    stop();
    await client.chat.postMessage({ channel: CHANNEL, text: "two" });
    await respond(url, { text: "second" });
    expect([stopped, kept]).toStrictEqual([2, 4]);
    expect(fake.responses).toHaveLength(2);
    expect(fake.messages).toHaveLength(2);
    stop(); // stopping twice is harmless
  });
});
