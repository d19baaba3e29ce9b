/**
 * The led work's Slack client on PostgreSQL, against the fake Slack: what changes what people see
 * is sent only once the fence confirms that this replica leads; reading goes straight through.
 */
import type { WebClientOptions } from "@slack/web-api";
import { Agent, type Dispatcher } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { checkedAsItLeaves, fencedSlackClient } from "../../src/slack/fenced-client.js";
import { FencedError } from "../../src/store/postgres/leader.js";
import { TEST_SECRETS } from "../support/secrets.js";

const CHANNEL = "C0VMBOT01";

/**
 * A fence the test turns: the replica leads, or another has taken over (epoch 4); `holds` is
 * this replica's own reckoning of its lease as a request leaves.
 */
function turnedFence() {
  const state = { leads: true, holds: true, asked: [] as string[], checked: [] as string[] };
  return {
    state,
    confirm(what: string) {
      state.asked.push(what);
      return state.leads ? Promise.resolve() : Promise.reject(new FencedError(what, 4));
    },
    stillHolds(what: string) {
      state.checked.push(what);
      if (!state.holds) throw new FencedError(what, 4);
    },
  };
}

let slack: FakeSlack | undefined;
afterEach(async () => {
  await slack?.close();
  slack = undefined;
});

async function fencedAgainstFake(options: WebClientOptions = {}) {
  slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  const fence = turnedFence();
  const apiUrl = slack.apiUrl;
  const client = fencedSlackClient(
    TEST_SECRETS.botToken,
    (base) => ({ slackApiUrl: apiUrl, retryConfig: { retries: 0 }, fetch: base, ...options }),
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
    const what = [
      "post a message to Slack",
      "update a message in Slack",
      "delete a message in Slack",
    ];
    expect(fence.state.asked).toEqual(what);
    expect(fence.state.checked).toEqual(what);
  });

  it("uploads a file's bytes as they are, through its own connection", async () => {
    const { slack, client } = await fencedAgainstFake();
    const content = "Plan: 1 to add, 0 to change, 0 to destroy.\n  # ü and ✓ stay as they are\n";
    await client.filesUploadV2({ channel_id: CHANNEL, content, filename: "plan.txt" });
    expect(slack.uploads).toEqual([
      expect.objectContaining({ filename: "plan.txt", content, completed: true, channel: CHANNEL }),
    ]);
  });

  it("sends nothing when the lease ran out after the fence answered, before the call left", async () => {
    const { slack, fence, client } = await fencedAgainstFake();
    const posted = await client.chat.postMessage({ channel: CHANNEL, text: "plan ready" });
    const before = slack.calls.length;
    // The lease row still names this replica (it was read in time); then the process stood
    // still past its lease, and another took over.
    fence.state.holds = false;

    const update = client.chat.update({ channel: CHANNEL, ts: posted.ts ?? "", text: "stale" });
    await expect(update).rejects.toThrow(FencedError);
    await expect(update).rejects.toThrow("refused to update a message in Slack");
    // A post refused as it left was never sent: not an answer lost, to be looked for and sent again.
    await expect(client.chat.postMessage({ channel: CHANNEL, text: "again" })).rejects.toThrow(
      FencedError,
    );
    const upload = client.files.completeUploadExternal({
      files: [{ id: "F0NOPE" }],
      channel_id: CHANNEL,
    });
    await expect(upload).rejects.toThrow(FencedError);
    expect(slack.calls.slice(before)).toEqual([]);
  });

  it("sends no retry once the lease ran out during the client's wait before it", async () => {
    const failed: string[] = [];
    const { slack, fence, client } = await fencedAgainstFake({
      retryConfig: {
        retries: 3,
        minTimeout: 5,
        onFailedAttempt: (error: Error) => {
          // The lease runs out while the client waits to send the call again.
          failed.push(error.message);
          fence.state.holds = false;
        },
      } as WebClientOptions["retryConfig"],
    });
    const posted = await client.chat.postMessage({ channel: CHANNEL, text: "plan ready" });
    slack.failNext("chat.update", { status: 503 });

    await expect(
      client.chat.update({ channel: CHANNEL, ts: posted.ts ?? "", text: "stale" }),
    ).rejects.toThrow(FencedError);
    // The first attempt reached Slack and was refused there; the second never left.
    expect(failed).toHaveLength(1);
    expect(slack.calls.filter((call) => call.method === "chat.update")).toHaveLength(1);
    expect(slack.message(CHANNEL, posted.ts ?? "")?.text).toBe("plan ready");
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
    expect(fence.state.checked).toEqual([]);
  });
});

describe("a request checked as it leaves, on undici's own dispatcher", () => {
  /** Dispatches a POST to the fake Slack, checked by `check`: its status, or its error. */
  async function dispatched(check: () => void): Promise<{ status?: number; error?: Error }> {
    slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
    const url = new URL(`${slack.apiUrl}auth.test`);
    const agent = new Agent();
    const ended = await new Promise<{ status?: number; error?: Error }>((resolve) => {
      let status: number | undefined;
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart: () => undefined,
        onResponseStart: (_controller, code) => {
          status = code;
        },
        onResponseEnd: () => {
          resolve({ status });
        },
        onResponseError: (_controller, error) => {
          resolve({ error });
        },
      };
      agent.dispatch(
        { origin: url.origin, path: url.pathname, method: "POST", body: "" },
        checkedAsItLeaves(handler, check),
      );
    });
    await agent.close();
    return ended;
  }

  it("is written while the check passes, and never once it throws", async () => {
    expect(await dispatched(() => undefined)).toEqual({ status: 200 });
    await slack?.close();
    const refused = new FencedError("post a message to Slack", 4);
    const ended = await dispatched(() => {
      throw refused;
    });
    expect(ended.error).toBe(refused);
    expect(slack?.calls).toEqual([]);
  });
});
