/**
 * The led work's Slack client on PostgreSQL, against the fake Slack: what changes what people see
 * is sent only once the fence confirms that this replica leads; reading goes straight through.
 */
import { WebClient } from "@slack/web-api";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { fencedSlackClient } from "../../src/slack/fenced-client.js";
import { FencedError } from "../../src/store/postgres/leader.js";
import { TEST_SECRETS } from "../support/secrets.js";

const CHANNEL = "C0VMBOT01";

/** A fence the test turns: the replica leads, or another has taken over (epoch 4). */
function turnedFence() {
  const state = { leads: true, asked: [] as string[] };
  return {
    state,
    confirm(what: string) {
      state.asked.push(what);
      return state.leads ? Promise.resolve() : Promise.reject(new FencedError(what, 4));
    },
  };
}

let slack: FakeSlack | undefined;
afterEach(async () => {
  await slack?.close();
  slack = undefined;
});

async function fencedAgainstFake() {
  slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  const fence = turnedFence();
  const client = fencedSlackClient(
    new WebClient(TEST_SECRETS.botToken, {
      slackApiUrl: slack.apiUrl,
      retryConfig: { retries: 0 },
    }),
    fence,
  );
  return { slack, fence, client };
}

describe("the led work's Slack client", () => {
  it("posts, updates and deletes while this replica leads, confirming before each", async () => {
    const { slack, fence, client } = await fencedAgainstFake();
    const posted = await client.chat.postMessage({ channel: CHANNEL, text: "plan ready" });
    const ts = posted.ts ?? "";
    await client.chat.update({ channel: CHANNEL, ts, text: "awaiting approval" });
    await client.chat.delete({ channel: CHANNEL, ts });
    expect(slack.calls.map((call) => call.method)).toEqual([
      "chat.postMessage",
      "chat.update",
      "chat.delete",
    ]);
    expect(fence.state.asked).toEqual([
      "post a message to Slack",
      "update a message in Slack",
      "delete a message in Slack",
    ]);
  });

  it("sends nothing once another replica leads, refusing with the fence's error", async () => {
    const { slack, fence, client } = await fencedAgainstFake();
    const posted = await client.chat.postMessage({ channel: CHANNEL, text: "plan ready" });
    const before = slack.calls.length;
    fence.state.leads = false;

    await expect(client.chat.postMessage({ channel: CHANNEL, text: "again" })).rejects.toThrow(
      FencedError,
    );
    await expect(
      client.chat.update({ channel: CHANNEL, ts: posted.ts ?? "", text: "stale" }),
    ).rejects.toThrow("refused to update a message in Slack");
    await expect(client.chat.delete({ channel: CHANNEL, ts: posted.ts ?? "" })).rejects.toThrow(
      FencedError,
    );
    await expect(
      client.chat.postEphemeral({ channel: CHANNEL, user: "U0ALICE", text: "psst" }),
    ).rejects.toThrow(FencedError);
    await expect(
      client.files.completeUploadExternal({ files: [{ id: "F0NOPE" }], channel_id: CHANNEL }),
    ).rejects.toThrow("refused to share a file in Slack");
    expect(slack.calls.slice(before)).toEqual([]);
  });

  it("reads without asking the fence, leading or not", async () => {
    const { slack, fence, client } = await fencedAgainstFake();
    fence.state.leads = false;
    const opened = await client.conversations.open({ users: "U0ALICE" });
    expect(opened.ok).toBe(true);
    const url = await client.files.getUploadURLExternal({ filename: "plan.txt", length: 4 });
    expect(url.ok).toBe(true);
    expect(slack.calls.map((call) => call.method)).toEqual([
      "conversations.open",
      "files.getUploadURLExternal",
    ]);
    expect(fence.state.asked).toEqual([]);
  });
});
