import { WebClient } from "@slack/web-api";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { createAccess } from "../../src/access.js";
import { loadConfig } from "../../src/config.js";
import { watchStore } from "../../src/home/changes.js";
import { createHomePublisher, type HomePublisher } from "../../src/home/publisher.js";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { asAsyncStore, type AsyncStore } from "../../src/store/async.js";
import { fakeBotEnv } from "../support/harness.js";
import { captureLogs } from "../support/logs.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { waitFor } from "../support/wait.js";
import { SAMPLE_SPEC } from "../support/requests.js";

/**
 * The Home publisher over a real Slack client and the fake Slack: a burst of changes publishes
 * once per person, only for people who opened their Home, and a refused publish is tried again.
 */

const ALICE = "U0ALICE";
const APPROVER = "U0APPROVER";

let slack: FakeSlack;
let store: AsyncStore;
let publisher: HomePublisher;
let publisherOver: (client: WebClient) => HomePublisher;

const publishes = (user: string) =>
  slack.callsTo("views.publish").filter((call) => call.args.user_id === user);

beforeEach(async () => {
  slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  const client = new WebClient(TEST_SECRETS.botToken, {
    slackApiUrl: slack.apiUrl,
    retryConfig: { retries: 0 },
  });
  const config = loadConfig(
    fakeBotEnv({ slack, gitlab: { url: "http://127.0.0.1:9" } }, ":memory:", {
      APPROVERS: APPROVER,
    }),
  );
  const log = createLogger({
    level: "debug",
    redactor: createRedactor(),
    destination: captureLogs().stream,
  });
  const raw = openSqliteStore(":memory:");
  store = watchStore(asAsyncStore(raw), (change) => {
    publisher.changed(change);
  });
  publisherOver = (over) =>
    createHomePublisher({
      store,
      client: over,
      access: createAccess({ lists: config.access, client, log }),
      config,
      log,
      now: () => new Date(),
      debounceMs: 40,
      retryMs: 60,
    });
  publisher = publisherOver(client);
});

afterEach(async () => {
  await publisher.stop();
  await store.close();
  await slack.close();
});

const ask = async (requester: string, key: string) =>
  (
    await store.createRequest({
      requester,
      spec: { ...SAMPLE_SPEC, name: key },
      notes: [],
      channel: "C0CHAN",
      submissionKey: key,
    })
  ).request;

describe("the Home publisher", () => {
  it("publishes once for a burst of changes, and only to people who opened their Home", async () => {
    await publisher.opened(ALICE);
    expect(publishes(ALICE)).toHaveLength(1);
    const request = await ask(ALICE, "web-01");
    for (let i = 0; i < 10; i += 1) await store.updateRequest(request.id, { notes: [`note ${i}`] });
    await ask("U0BOB", "web-02");
    await publisher.flush();
    expect(publishes(ALICE)).toHaveLength(2);
    expect(JSON.stringify(publishes(ALICE)[1]?.args.view)).toContain("web-01");
    // Bob never opened his Home: nothing is published to him.
    expect(publishes("U0BOB")).toHaveLength(0);
  });

  it("publishes an approver's Home when a request enters their queue", async () => {
    await publisher.opened(APPROVER);
    const request = await ask(ALICE, "web-01");
    await store.transition(request.id, ["queued"], "planning");
    await store.transition(request.id, ["planning"], "awaiting_approval");
    await publisher.flush();
    const last = publishes(APPROVER).at(-1);
    expect(JSON.stringify(last?.args.view)).toContain("Waiting for your approval (1)");
  });

  it("tries a refused publish again later, and publishes once Slack takes it", async () => {
    await publisher.opened(ALICE);
    slack.failNext("views.publish", "internal_error");
    slack.failNext("views.publish", "internal_error");
    await ask(ALICE, "web-01");
    await publisher.flush();
    expect(publishes(ALICE).at(-1)?.error).toBe("internal_error");
    // Retried on its own, later and later, until Slack takes it.
    await waitFor(
      () =>
        publishes(ALICE).at(-1)?.ok === true && publishes(ALICE).length === 4 ? true : undefined,
      "the Home published after two refusals",
    );
    expect(publishes(ALICE).map((call) => call.ok)).toEqual([true, false, false, true]);
  });

  it("keeps what was due when the store cannot say whose Home is due, and publishes it on the retry", async () => {
    await publisher.opened(ALICE);
    await publisher.opened(APPROVER);
    const request = await ask(ALICE, "web-01");
    await store.transition(request.id, ["queued"], "planning");
    await store.transition(request.id, ["planning"], "awaiting_approval");
    // The approvers' queues cannot be read once.
    vi.spyOn(store, "listByStatus").mockRejectedValueOnce(new Error("the database is gone"));
    await publisher.flush();
    expect(vi.mocked(store.listByStatus)).toHaveBeenCalled();
    await waitFor(
      () =>
        JSON.stringify(publishes(APPROVER).at(-1)?.args.view).includes(
          "Waiting for your approval (1)",
        ) && publishes(ALICE).length === 2
          ? true
          : undefined,
      "both Homes published on the retry",
    );
  });

  /**
   * A client whose next publish, once `hold()` is called, waits on its way to Slack (its Home
   * read already) until `release()`; `held()` tells whether one is waiting.
   */
  function holdingClient() {
    const client = new WebClient(TEST_SECRETS.botToken, {
      slackApiUrl: slack.apiUrl,
      retryConfig: { retries: 0 },
    });
    let hold: Promise<void> | undefined;
    let held = false;
    let release: () => void = () => undefined;
    const publish = async (args: Parameters<WebClient["views"]["publish"]>[0]) => {
      const waiting = hold;
      hold = undefined;
      if (waiting !== undefined) {
        held = true;
        await waiting;
      }
      return client.views.publish(args);
    };
    const slow = new Proxy(client, {
      get: (target, key, receiver): unknown =>
        key === "views" ? { ...target.views, publish } : Reflect.get(target, key, receiver),
    });
    return {
      client: slow,
      hold() {
        hold = new Promise<void>((resolve) => (release = resolve));
      },
      held: () => (held ? true : undefined),
      release: () => {
        release();
      },
    };
  }

  it("puts the newest Home last when the Home is opened while a slower publish is under way", async () => {
    const slow = holdingClient();
    await publisher.stop();
    publisher = publisherOver(slow.client);
    await publisher.opened(ALICE);
    slow.hold();
    await ask(ALICE, "web-01");
    await waitFor(slow.held, "the burst's publish to be on its way");
    await ask(ALICE, "web-02");
    const opened = publisher.opened(ALICE);
    // The held publish goes on once the opening's has reached Slack, or after half a second in
    // which it did not (it waits its turn): either way the opening's Home must land last.
    await Promise.race([
      expect.poll(() => publishes(ALICE).length, { timeout: 500 }).toBe(2),
      new Promise((resolve) => setTimeout(resolve, 500)),
    ]).catch(() => undefined);
    slow.release();
    await opened;
    await publisher.flush();
    const last = JSON.stringify(publishes(ALICE).at(-1)?.args.view);
    expect(last).toContain("web-01");
    expect(last).toContain("web-02");
  });

  it("puts the newest Home last when another replica's publish overtakes a slower one: Slack refuses the older, which reads the store again", async () => {
    // Two replicas on one store, each told of its own writes: this one's publish waits on its
    // way to Slack, its Home read; the other writes, and its publish lands first.
    const slow = holdingClient();
    await publisher.stop();
    const mine = publisherOver(slow.client);
    const other = publisherOver(
      new WebClient(TEST_SECRETS.botToken, {
        slackApiUrl: slack.apiUrl,
        retryConfig: { retries: 0 },
      }),
    );
    publisher = mine;
    await mine.opened(ALICE);
    slow.hold();
    await ask(ALICE, "web-01");
    await waitFor(slow.held, "this replica's publish to be on its way");
    publisher = other;
    await ask(ALICE, "web-02");
    await other.opened(ALICE);
    expect(JSON.stringify(slack.home(ALICE)?.blocks)).toContain("web-02");
    slow.release();
    await mine.flush();
    await mine.stop();

    const home = JSON.stringify(slack.home(ALICE)?.blocks);
    expect(home).toContain("web-01");
    expect(home).toContain("web-02");
    // The held publish was refused, and the one after it took.
    expect(publishes(ALICE).map((call) => call.ok)).toEqual([true, true, false, true]);
    expect(await store.homes.viewHash(ALICE)).toBe(slack.home(ALICE)?.hash);
  });

  it("publishes without the hash once the hash it holds is refused twice: a Home published elsewhere left it out of date", async () => {
    await publisher.opened(ALICE);
    const client = new WebClient(TEST_SECRETS.botToken, {
      slackApiUrl: slack.apiUrl,
      retryConfig: { retries: 0 },
    });
    // Published by something else (an older vmbot, say): the stored hash is no longer Slack's.
    await client.views.publish({ user_id: ALICE, view: { type: "home", blocks: [] } });
    await ask(ALICE, "web-01");
    await publisher.flush();

    expect(JSON.stringify(slack.home(ALICE)?.blocks)).toContain("web-01");
    expect(publishes(ALICE).map((call) => call.ok)).toEqual([true, true, false, true]);
    expect(publishes(ALICE).at(-1)?.args.hash).toBeUndefined();
    expect(await store.homes.viewHash(ALICE)).toBe(slack.home(ALICE)?.hash);
  });
});
