/**
 * The bot's Web API client against the fake Slack when an answer does not come: a call that posts
 * is sent once (Slack may have taken it: sent again, it posts twice), one that changes something
 * in place is sent again, and a 429, which Slack did not take, is waited out and sent again.
 */
import { WebClient } from "@slack/web-api";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { slackClientOptions } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { createRedactor } from "../../src/redact.js";
import { answerKeepingFetch, answerLost } from "../../src/slack/lost-answers.js";
import { FencedError } from "../../src/store/postgres/leader.js";
import { fakeBotEnv } from "../support/harness.js";
import { TEST_SECRETS } from "../support/secrets.js";

const CHANNEL = "C0VMBOT01";

let slack: FakeSlack | undefined;
afterEach(async () => {
  await slack?.close();
  slack = undefined;
});

/** The fake Slack, and a client built as the bot builds its own. */
async function botClient() {
  slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  const config = loadConfig(
    fakeBotEnv({ slack, gitlab: { url: "http://127.0.0.1:9" } }, ":memory:"),
  );
  const client = new WebClient(TEST_SECRETS.botToken, slackClientOptions(config, createRedactor()));
  return { slack, client };
}

const callsTo = (slack: FakeSlack, method: string) =>
  slack.calls.filter((call) => call.method === method);

describe("a Web API call whose answer is lost", () => {
  it.each([
    ["the connection reset", "reset"],
    ["a 500 from Slack's edge", 500],
    ["a 503", 503],
  ] as const)(
    "posts a message once, its answer lost to %s, and says the answer was lost",
    async (_, lost) => {
      const { slack, client } = await botClient();
      slack.failNext("chat.postMessage", { afterEffect: lost });
      const posting = client.chat.postMessage({ channel: CHANNEL, text: "VM web-01 — Queued" });
      const error = await posting.then(
        () => undefined,
        (failed: unknown) => failed,
      );
      expect(answerLost(error)).toBe(true);
      expect(callsTo(slack, "chat.postMessage")).toHaveLength(1);
      expect(slack.messages.filter((m) => m.text === "VM web-01 — Queued")).toHaveLength(1);
    },
  );

  it("sends a message update again: the same update twice changes nothing", async () => {
    const { slack, client } = await botClient();
    const { ts } = await client.chat.postMessage({ channel: CHANNEL, text: "Queued" });
    slack.failNext("chat.update", { afterEffect: 500 });
    await client.chat.update({ channel: CHANNEL, ts: ts ?? "", text: "Planning" });
    expect(callsTo(slack, "chat.update")).toHaveLength(2);
    expect(slack.messages.map((m) => m.text)).toEqual(["Planning"]);
  });

  it("waits out a 429 on a post and sends it again: Slack did not take it", async () => {
    const { slack, client } = await botClient();
    slack.failNext("chat.postMessage", { status: 429, retryAfter: 1 });
    await client.chat.postMessage({ channel: CHANNEL, text: "Queued" });
    expect(callsTo(slack, "chat.postMessage")).toHaveLength(2);
    expect(slack.messages.map((m) => m.text)).toEqual(["Queued"]);
  });

  it("answers a platform error at once, as Slack gave it, and is no lost answer", async () => {
    const { slack, client } = await botClient();
    slack.failNext("chat.postMessage", "not_in_channel");
    const error = await client.chat.postMessage({ channel: CHANNEL, text: "Queued" }).then(
      () => undefined,
      (failed: unknown) => failed,
    );
    expect(error).toMatchObject({ data: { error: "not_in_channel" } });
    expect(answerLost(error)).toBe(false);
    expect(callsTo(slack, "chat.postMessage")).toHaveLength(1);
  });

  it("gives a request refused before it was written as the refusal: nothing was sent, no answer lost", async () => {
    const refused = new FencedError("post a message to Slack", 4);
    const send = answerKeepingFetch(() =>
      Promise.reject(new TypeError("fetch failed", { cause: refused })),
    );
    const sent = send("https://slack.com/api/chat.postMessage", { method: "POST" });
    await expect(sent).rejects.toBe(refused);
    expect(answerLost(await sent.catch((error: unknown) => error))).toBe(false);
  });
});
