import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { App, HTTPReceiver, LogLevel, type Logger } from "@slack/bolt";
import { WebAPIPlatformError, WebClient, type KnownBlock } from "@slack/web-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createSlackSigner } from "../../../../sandbox/simulators/slack/signer.js";
import { startFakeSlack, type FakeSlack } from "../../../../sandbox/simulators/slack/index.js";
import { TEST_SECRETS } from "../../../support/secrets.js";
import { waitFor } from "../../../support/wait.js";

/**
 * The fake Slack's Home tab: views.publish with Slack's rules (user_id required, a `home` view
 * of at most 100 blocks, an optional hash that must match, `not_enabled` when the tab is off),
 * and `app_home_opened` delivered as a signed Events API envelope a real Bolt app accepts.
 */

const ALICE = "U0ALICE";
const section = (text: string): KnownBlock => ({
  type: "section",
  text: { type: "mrkdwn", text },
});
const home = (blocks: KnownBlock[] = [section("Hello")]) => ({ type: "home" as const, blocks });

async function slackError(call: Promise<unknown>): Promise<WebAPIPlatformError["data"]> {
  try {
    await call;
  } catch (error) {
    if (error instanceof WebAPIPlatformError) return error.data;
    throw error;
  }
  throw new Error("expected the call to fail with a Slack error");
}

describe("views.publish", () => {
  let fake: FakeSlack;
  let client: WebClient;

  beforeEach(async () => {
    fake = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
    client = new WebClient(TEST_SECRETS.botToken, {
      slackApiUrl: fake.apiUrl,
      retryConfig: { retries: 0 },
    });
  });
  afterEach(async () => {
    await fake.close();
  });

  it("publishes a user's Home and replaces it in place on the next publish", async () => {
    const first = await client.views.publish({ user_id: ALICE, view: home() });
    expect(first.view).toMatchObject({ type: "home", blocks: [{ type: "section" }] });
    const second = await client.views.publish({
      user_id: ALICE,
      view: home([section("Again")]),
    });
    expect(second.view?.id).toBe(first.view?.id);
    expect(second.view?.hash).not.toBe(first.view?.hash);
    expect(JSON.stringify(fake.home(ALICE)?.blocks)).toContain("Again");
    expect(fake.home("U0BOB")).toBeUndefined();
  });

  it("requires user_id, and refuses a view that is not a home or holds over 100 blocks", async () => {
    const noUser = await slackError(
      client.apiCall("views.publish", { view: JSON.stringify(home()) }),
    );
    expect(noUser.error).toBe("invalid_arguments");
    const modal = await slackError(
      client.views.publish({
        user_id: ALICE,
        view: { type: "modal", title: { type: "plain_text", text: "x" }, blocks: [] },
      }),
    );
    expect(modal.error).toBe("invalid_arguments");
    const blocks = Array.from({ length: 101 }, (_, i) => section(`line ${i}`));
    const tooMany = await slackError(client.views.publish({ user_id: ALICE, view: home(blocks) }));
    expect(tooMany.error).toBe("invalid_arguments");
    expect(JSON.stringify(tooMany.response_metadata)).toContain("no more than 100 items allowed");
    // 100 is fine.
    await client.views.publish({ user_id: ALICE, view: home(blocks.slice(0, 100)) });
  });

  it("refuses a stale hash with hash_conflict, and takes the current one", async () => {
    const first = await client.views.publish({ user_id: ALICE, view: home() });
    const hash = first.view!.hash!;
    await client.views.publish({ user_id: ALICE, view: home([section("Moved on")]) });
    const stale = await slackError(client.views.publish({ user_id: ALICE, hash, view: home() }));
    expect(stale.error).toBe("hash_conflict");
    const current = fake.home(ALICE)!.hash;
    await client.views.publish({ user_id: ALICE, hash: current, view: home() });
  });

  it("answers not_enabled when the app's Home tab is off", async () => {
    const off = await startFakeSlack({ botToken: TEST_SECRETS.botToken, homeTabEnabled: false });
    try {
      const offClient = new WebClient(TEST_SECRETS.botToken, {
        slackApiUrl: off.apiUrl,
        retryConfig: { retries: 0 },
      });
      const refused = await slackError(offClient.views.publish({ user_id: ALICE, view: home() }));
      expect(refused.error).toBe("not_enabled");
    } finally {
      await off.close();
    }
  });
});

function quietLogger(): Logger {
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: () => undefined,
    setLevel: () => undefined,
    getLevel: () => LogLevel.ERROR,
    setName: () => undefined,
  };
}

describe("app_home_opened", () => {
  it("reaches a real Bolt app signed, as an event_callback with the Home's current view", async () => {
    const fake = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
    const logger = quietLogger();
    const receiver = new HTTPReceiver({ signingSecret: TEST_SECRETS.signingSecret, logger });
    const app = new App({
      token: TEST_SECRETS.botToken,
      receiver,
      logger,
      clientOptions: { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } },
    });
    const seen: { user: string; tab: string | undefined; viewId: string | undefined }[] = [];
    app.event("app_home_opened", async ({ event, client }) => {
      // Slack sends the view with its id; the event's type leaves the id out.
      const view = z.object({ id: z.string() }).optional().parse(event.view);
      seen.push({ user: event.user, tab: event.tab, viewId: view?.id });
      await client.views.publish({ user_id: event.user, view: home() });
    });
    const server = createServer(receiver.requestListener);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const signer = createSlackSigner({
        eventsUrl: `http://127.0.0.1:${String(port)}/slack/events`,
        signingSecret: TEST_SECRETS.signingSecret,
        slack: fake,
      });
      const first = await signer.appHomeOpened({ userId: ALICE });
      expect(first.status).toBe(200);
      const envelope = JSON.parse(first.request.body) as Record<string, unknown>;
      expect(envelope).toMatchObject({
        type: "event_callback",
        team_id: fake.identity.teamId,
        api_app_id: fake.identity.appId,
        event: { type: "app_home_opened", user: ALICE, tab: "home" },
      });
      expect(String(envelope.event_id)).toMatch(/^Ev/);
      expect(first.request.headers["content-type"]).toBe("application/json");
      await fake.waitFor("views.publish");

      // Opened again: Slack sends the Home as it was last published.
      await signer.appHomeOpened({ userId: ALICE });
      await waitFor(() => (seen.length === 2 ? true : undefined), "the second event");
      expect(seen).toEqual([
        { user: ALICE, tab: "home", viewId: undefined },
        { user: ALICE, tab: "home", viewId: fake.home(ALICE)!.id },
      ]);

      // A wrong signature is refused like any delivery.
      const forged = await signer.appHomeOpened({ userId: ALICE, signature: "v0=bad" });
      expect(forged.status).toBe(401);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
      await fake.close();
    }
  });
});
