import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { webApi } from "@slack/bolt";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig, type Config } from "../../src/config.js";
import { CREATE_MODAL } from "../../src/ids.js";
import { startVmbot, StartupError, type RunningVmbot } from "../../src/start.js";
import {
  startFakeGitlab,
  VM_PIPELINE_INPUTS,
  type FakeGitlab,
} from "../../sandbox/simulators/gitlab/index.js";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import { startFakeSlackSocket, type FakeSlackSocket } from "../support/slack-socket.js";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { CHANNEL, fakeBotEnv, PROJECT_PATH, REQUESTER } from "../support/harness.js";
import { captureLogs } from "../support/logs.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { storeLocation } from "../support/store-at.js";

/** The real bot in Socket Mode (SLACK_APP_TOKEN, no signing secret) against the fakes. */
interface SocketHarness {
  slack: FakeSlack;
  socket: FakeSlackSocket;
  gitlab: FakeGitlab;
  config: Config;
  bot: RunningVmbot | undefined;
  close(): Promise<void>;
}

let harness: SocketHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function startFakes(): Promise<SocketHarness> {
  const slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  const socket = await startFakeSlackSocket({ slack, appToken: TEST_SECRETS.appToken });
  const gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, inputs: VM_PIPELINE_INPUTS }],
  });
  const dir = mkdtempSync(join(tmpdir(), "vmbot-socket-"));
  const store = await storeLocation(dir);
  const config = loadConfig(
    fakeBotEnv({ slack, gitlab }, store.db, {
      SLACK_SIGNING_SECRET: undefined,
      SLACK_APP_TOKEN: TEST_SECRETS.appToken,
    }),
  );
  harness = {
    slack,
    socket,
    gitlab,
    config,
    bot: undefined,
    async close() {
      await this.bot?.stop(2_000);
      await Promise.all([socket.close(), slack.close(), gitlab.close()]);
      await store.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return harness;
}

async function start(): Promise<SocketHarness & { bot: RunningVmbot }> {
  const h = await startFakes();
  const bot = await startVmbot(h.config, { logDestination: captureLogs().stream });
  h.bot = bot;
  return Object.assign(h, { bot });
}

async function health(bot: RunningVmbot): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`http://127.0.0.1:${bot.port}/healthz`);
  return { status: response.status, body: await response.json() };
}

describe("Socket Mode", () => {
  it("connects through apps.connections.open with the app-level token and is healthy once Slack says hello", async () => {
    const h = await start();
    const opened = h.slack.callsTo("apps.connections.open");
    expect(opened).toHaveLength(1);
    expect(opened[0]?.ok).toBe(true);
    const connection = await h.socket.waitForConnection();
    expect(connection.closedAt).toBeUndefined();
    // The run's engine: on PostgreSQL the one replica also says that it leads.
    const postgres = process.env.VMBOT_TEST_DB === "postgres";
    expect(await health(h.bot)).toEqual({
      status: 200,
      body: {
        status: "ok",
        database: { engine: postgres ? "postgres" : "sqlite", reachable: true },
        ...(postgres ? { leader: true, replica: expect.any(String) as string } : {}),
      },
    });
  });

  it("has no /slack/events endpoint", async () => {
    const h = await start();
    const response = await fetch(`http://127.0.0.1:${h.bot.port}/slack/events`, {
      method: "POST",
    });
    expect(response.status).toBe(404);
  });

  it("acknowledges a /vm create envelope with its envelope_id and opens the form with its trigger_id", async () => {
    const h = await start();
    const delivery = await h.socket.sendSlashCommand({
      text: "create web-01",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    expect(delivery.ack.envelope_id).toBe(delivery.envelope.envelope_id);
    expect(delivery.elapsedMs).toBeLessThan(3_000);
    const call = await h.slack.waitFor("views.open");
    expect(call.ok).toBe(true);
    expect(call.args.trigger_id).toBe(delivery.triggerId);
    expect(h.slack.views.at(-1)?.callback_id).toBe(CREATE_MODAL);
  });

  it("answers /vm help in the acknowledgement itself", async () => {
    const h = await start();
    const delivery = await h.socket.sendSlashCommand({
      text: "help",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    expect(delivery.ack.envelope_id).toBe(delivery.envelope.envelope_id);
    expect(delivery.ack.payload?.response_type).toBe("ephemeral");
    expect(delivery.ack.payload?.text).toContain("/vm create [name]");
    expect(h.slack.responses).toHaveLength(0);
  });

  it("answers an invalid form submission on its field in the acknowledgement and triggers nothing", async () => {
    const h = await start();
    const command = await h.socket.sendSlashCommand({
      text: "create web-01",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    await h.slack.waitFor("views.open", (call) => call.args.trigger_id === command.triggerId);
    const view = h.slack.views.at(-1);
    if (view === undefined) throw new Error("no form was opened");
    const values = stateValuesFor(view, { vm_name: "web-01", vm_ip: "not-an-address" });
    const delivery = await h.socket.sendInteractive({
      type: "view_submission",
      team: { id: h.slack.identity.teamId, domain: h.slack.identity.teamDomain },
      user: {
        id: REQUESTER,
        username: "requester",
        name: "requester",
        team_id: h.slack.identity.teamId,
      },
      api_app_id: h.slack.identity.appId,
      token: "fakeVerificationToken0001",
      trigger_id: h.slack.issueTriggerId({ viewId: view.id }),
      view: { ...view, state: { values } },
      response_urls: [],
      is_enterprise_install: false,
      enterprise: null,
    });
    expect(delivery.envelope.accepts_response_payload).toBe(true);
    expect(delivery.ack.envelope_id).toBe(delivery.envelope.envelope_id);
    expect(delivery.ack.payload?.response_action).toBe("errors");
    expect(Object.keys(delivery.ack.payload?.errors as object)).toEqual(["vm_ip"]);
    expect(h.gitlab.requests.filter((request) => request.method === "POST")).toHaveLength(0);
    expect(h.slack.callsTo("chat.postMessage")).toHaveLength(0);
  });

  it("reconnects with a fresh URL when Slack asks for a refresh", async () => {
    const h = await start();
    const first = await h.socket.waitForConnection();
    await h.socket.disconnect("refresh_requested");
    expect(first.closedAt).toBeDefined();
    const second = await h.socket.waitForConnection((connection) => connection.id === 2, 15_000);
    expect(second.ticket).not.toBe(first.ticket);
    expect(h.slack.callsTo("apps.connections.open")).toHaveLength(2);
    const delivery = await h.socket.sendSlashCommand({
      text: "help",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    expect(delivery.ack.envelope_id).toBe(delivery.envelope.envelope_id);
    expect((await health(h.bot)).status).toBe(200);
  }, 20_000);

  it("closes the socket when the bot stops", async () => {
    const h = await start();
    const connection = await h.socket.waitForConnection();
    await h.bot.stop(1_000);
    await h.socket.waitForClose(connection);
    expect(connection.closeCode).toBe(1000);
    expect(h.socket.connections).toHaveLength(1);
  });

  it("stops with a clear message when Slack refuses the app token", async () => {
    const h = await startFakes();
    const config: Config = {
      ...h.config,
      slack: { ...h.config.slack, appToken: "xapp-1-A0000000001-0000000000-SomeoneElsesToken" },
    };
    const started = startVmbot(config, { logDestination: captureLogs().stream });
    await expect(started).rejects.toBeInstanceOf(StartupError);
    await expect(started).rejects.toThrow(/^Socket Mode could not connect \(invalid_auth\)/);
    expect(h.socket.connections).toHaveLength(0);
  });
});

describe("the fake's apps.connections.open", () => {
  it("takes only the app-level token", async () => {
    const h = await startFakes();
    const open = (token: string) =>
      new webApi.WebClient(token, { slackApiUrl: h.slack.apiUrl, retryConfig: { retries: 0 } })
        .apiCall("apps.connections.open")
        .catch((error: unknown) => (error as { data: unknown }).data);
    expect(await open(TEST_SECRETS.botToken)).toMatchObject({
      ok: false,
      error: "not_allowed_token_type",
    });
    expect(await open("xapp-1-A0000000001-0000000000-SomeoneElsesToken")).toMatchObject({
      ok: false,
      error: "invalid_auth",
    });
    const good = (await open(TEST_SECRETS.appToken)) as { ok: boolean; url: string };
    expect(good.ok).toBe(true);
    expect(good.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/link\/\?ticket=[\w-]+&app_id=A0000VMBOT$/);
  });
});
