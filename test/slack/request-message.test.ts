/**
 * The request message's one renderer, against the fake Slack and a real store: a render read
 * before a newer change of the request sends nothing (whoever made the change shows it), so a
 * replica paused between reading and sending, or an update overtaken by a later one, never sets
 * the message back to an older state.
 */
import { WebClient } from "@slack/web-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { FRESH_ANSWER_MS, renderRequestMessage } from "../../src/slack/request-message.js";
import { asAsyncStore, type AsyncStore } from "../../src/store/async.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { RequestRecord } from "../../src/store/store.js";
import { SAMPLE_SPEC } from "../support/requests.js";
import { TEST_SECRETS } from "../support/secrets.js";

const CHANNEL = "C0VMBOT01";

let slack: FakeSlack;
let store: AsyncStore;
let client: WebClient;
const log = createLogger({ level: "silent", redactor: createRedactor() });

beforeEach(async () => {
  slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  store = asAsyncStore(openSqliteStore(":memory:"));
  client = new WebClient(TEST_SECRETS.botToken, {
    slackApiUrl: slack.apiUrl,
    retryConfig: { retries: 0 },
  });
});
afterEach(async () => {
  await store.close();
  await slack.close();
});

/** A request with its message posted in the channel. */
async function posted(): Promise<RequestRecord> {
  const { request } = await store.createRequest({
    requester: "U0REQ",
    spec: SAMPLE_SPEC,
    notes: [],
    channel: CHANNEL,
    submissionKey: "view:V1",
  });
  const message = await client.chat.postMessage({ channel: CHANNEL, text: "Queued" });
  return store.updateRequest(request.id, { messageTs: message.ts ?? null });
}

describe("rendering a request's message", () => {
  it("updates the message and records the revision it shows", async () => {
    const request = await posted();
    const mark = slack.calls.length;
    expect(await renderRequestMessage(client, store, request, log)).toBe(true);
    expect(slack.calls.slice(mark).map((call) => call.method)).toEqual(["chat.update"]);
    expect((await store.getRequest(request.id))?.renderedRevision).toBe(request.revision);
  });

  it("sends nothing for a state the store has moved on from, and leaves the newer one to be shown", async () => {
    const older = await posted();
    const newer = await store.transition(older.id, [older.status], "planning");
    expect(newer?.revision).toBeGreaterThan(older.revision);
    const mark = slack.calls.length;

    expect(await renderRequestMessage(client, store, older, log)).toBe(true);
    expect(slack.calls.slice(mark)).toEqual([]);
    // Still behind the store: the leader's next pass renders the newer state.
    const now = await store.getRequest(older.id);
    expect(now?.renderedRevision ?? 0).toBeLessThan(now?.revision ?? 0);
    expect((await store.listBehind(10)).map((r) => r.id)).toContain(older.id);

    if (newer === undefined) throw new Error("the request did not move");
    expect(await renderRequestMessage(client, store, newer, log)).toBe(true);
    expect(slack.calls.slice(mark).map((call) => call.method)).toEqual(["chat.update"]);
    expect((await store.getRequest(older.id))?.renderedRevision).toBe(newer.revision);
  });

  it("asks again when the store's answer came late, and sends nothing once it has moved on", async () => {
    const older = await posted();
    // The first answer is read as it was when asked, after a pause of five seconds in which
    // another replica moved the request on: as a process stopped with the answer in its socket.
    let now = 0;
    let asked = 0;
    const paused: AsyncStore = {
      ...store,
      getRequest: async (id) => {
        asked += 1;
        const answer = await store.getRequest(id);
        if (asked === 1) {
          now += 5_000;
          await store.transition(older.id, [older.status], "planning");
        }
        return answer;
      },
    };
    const mark = slack.calls.length;
    expect(await renderRequestMessage(client, paused, older, log, () => now)).toBe(true);
    expect(asked).toBe(2);
    expect(slack.calls.slice(mark)).toEqual([]);
  });

  it("sends after a late answer once asked again in time, and after three late answers", async () => {
    const request = await posted();
    for (const [late, asks] of [
      [1, 2],
      [5, 3],
    ] as const) {
      let now = 0;
      let asked = 0;
      const slow: AsyncStore = {
        ...store,
        getRequest: (id) => {
          asked += 1;
          if (asked <= late) now += FRESH_ANSWER_MS;
          return store.getRequest(id);
        },
      };
      const mark = slack.calls.length;
      expect(await renderRequestMessage(client, slow, request, log, () => now)).toBe(true);
      expect(asked).toBe(asks);
      expect(slack.calls.slice(mark).map((call) => call.method)).toEqual(["chat.update"]);
    }
  });

  it("still sends when the store cannot say whether the request moved on", async () => {
    const request = await posted();
    const failing: AsyncStore = {
      ...store,
      getRequest: () => Promise.reject(new Error("the database is unreachable")),
    };
    const mark = slack.calls.length;
    expect(await renderRequestMessage(client, failing, request, log)).toBe(true);
    expect(slack.calls.slice(mark).map((call) => call.method)).toEqual(["chat.update"]);
  });
});
