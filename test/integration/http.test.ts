import { createServer as createNetServer, type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createEffects } from "../../src/effects.js";
import { createApp } from "../../src/app.js";
import { loadConfig, type Config } from "../../src/config.js";
import { startVmbot } from "../../src/start.js";
import { createGitlab } from "../../src/gitlab/gitlab.js";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { asAsyncStore } from "../../src/store/async.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { captureLogs } from "../support/logs.js";
import { CHANNEL, harnessPerTest, REQUESTER, type Harness } from "../support/harness.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { waitFor } from "../support/wait.js";

const start = harnessPerTest();

/**
 * What proves the bot had its chance to act on a refused request: a good one sent after it is
 * acted on (its form opens). The refused one's effect, had there been one, came before.
 */
async function barrier(harness: Harness): Promise<void> {
  const delivery = await harness.signer.slashCommand({
    text: "create web-02",
    userId: REQUESTER,
    channelId: CHANNEL,
  });
  expect(delivery.status).toBe(200);
  await harness.slack.waitFor("views.open", (call) => call.args.trigger_id === delivery.triggerId);
}

describe("POST /slack/events", () => {
  it("refuses a request with a bad signature with 401 and changes nothing", async () => {
    const harness = await start();
    const delivery = await harness.signer.slashCommand({
      text: "create web-01",
      userId: REQUESTER,
      channelId: CHANNEL,
      signature: "v0=" + "0".repeat(64),
    });
    expect(delivery.status).toBe(401);
    await barrier(harness);
    expect(harness.slack.callsTo("views.open")).toHaveLength(1);
    expect(await harness.bot.store.listAudit()).toHaveLength(0);
  });

  it("refuses a correctly signed request older than five minutes with 401", async () => {
    const harness = await start();
    const delivery = await harness.signer.slashCommand({
      text: "create web-01",
      userId: REQUESTER,
      channelId: CHANNEL,
      timestamp: Math.floor(Date.now() / 1000) - 6 * 60,
    });
    expect(delivery.status).toBe(401);
    await barrier(harness);
    expect(harness.slack.callsTo("views.open")).toHaveLength(1);
    expect(await harness.bot.store.listAudit()).toHaveLength(0);
    expect(harness.gitlabSinceStart()).toHaveLength(0);
  });

  it("refuses a replayed form submission signed with another secret", async () => {
    const harness = await start();
    const delivery = await harness.signer.send("payload=%7B%7D", {
      contentType: "application/x-www-form-urlencoded",
      signature: "v0=deadbeef",
    });
    expect(delivery.status).toBe(401);
    expect(await harness.bot.store.listAudit()).toHaveLength(0);
  });
});

describe("GET /healthz", () => {
  it("is 200 when the store is open and Slack accepted the token, and names the store's engine", async () => {
    const harness = await start();
    const response = await fetch(`${harness.baseUrl}/healthz`);
    expect(response.status).toBe(200);
    // The harness's engine: SQLite, or PostgreSQL (npm run test:postgres), where the one
    // replica also says that it leads.
    const postgres = process.env.VMBOT_TEST_DB === "postgres";
    expect(await response.json()).toEqual({
      status: "ok",
      database: { engine: postgres ? "postgres" : "sqlite", reachable: true },
      ...(postgres ? { leader: true, replica: expect.any(String) as string } : {}),
    });
  });

  it("is 503 with the reason while Slack cannot be reached", async () => {
    const harness = await start();
    await harness.slack.close();
    // A fresh bot against a Slack that is gone stays up but reports why it is not healthy.
    const bot = await startAnother(harness, {});
    try {
      const response = await fetch(`http://127.0.0.1:${bot.port}/healthz`);
      expect(response.status).toBe(503);
      const body = (await response.json()) as { status: string; reason: string };
      expect(body.status).toBe("unavailable");
      expect(body.reason).toMatch(/^Slack is not reachable \(.+\); retrying$/);
    } finally {
      await bot.stop(1_000);
    }
  });

  it("stops retrying, and says what failed, when Slack reached again refuses the token", async () => {
    const harness = await start();
    const asked = harness.slack.callsTo("auth.test").length;
    // Slack down at start, then back, saying the token was revoked meanwhile.
    harness.slack.failNext("auth.test", { status: 500 });
    harness.slack.failNext("auth.test", "token_revoked");
    const logs = captureLogs();
    const bot = await startVmbot(
      { ...harness.config, dbPath: anotherStore(harness) },
      { logDestination: logs.stream, slackRetryMs: 20 },
    );
    try {
      const refused =
        "Slack refused SLACK_BOT_TOKEN (token_revoked): reinstall the app and copy its Bot User OAuth Token.";
      await waitFor(
        async () => ((await bot.health()).reason === refused ? true : undefined),
        "the health check to say Slack refused the token",
      );
      const response = await fetch(`http://127.0.0.1:${bot.port}/healthz`);
      expect(response.status).toBe(503);
      // On PostgreSQL this bot is a second replica beside the harness's, which leads.
      const postgres = process.env.VMBOT_TEST_DB === "postgres";
      expect(await response.json()).toEqual({
        status: "unavailable",
        reason: refused,
        database: { engine: postgres ? "postgres" : "sqlite", reachable: true },
        ...(postgres ? { leader: false, replica: expect.any(String) as string } : {}),
      });
      expect(logs.lines.some((line) => line.includes("no longer retrying"))).toBe(true);
      expect(harness.slack.callsTo("auth.test").length - asked).toBe(2);
    } finally {
      await bot.stop(1_000);
    }
  });

  it("answers 404 for anything else", async () => {
    const harness = await start();
    expect((await fetch(`${harness.baseUrl}/admin`)).status).toBe(404);
  });
});

/** A loopback port nothing listens on: one the system gave a moment ago, closed again. */
async function unusedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The store of a second bot beside the harness's: on PostgreSQL the harness's own database, which
 * replicas share; a SQLite store serves one bot, so that bot has one in memory.
 */
function anotherStore(h: Harness): string {
  return process.env.VMBOT_TEST_DB === "postgres" ? h.config.dbPath : ":memory:";
}

/** A second bot beside the harness's, with some of its configuration changed. */
function startAnother(h: Harness, change: Partial<Config>) {
  return startVmbot(
    { ...h.config, dbPath: anotherStore(h), ...change },
    { logDestination: captureLogs().stream },
  );
}

describe("start-up mode", () => {
  it("stops with a clear message when Slack refuses the bot token", async () => {
    const harness = await start();
    await expect(
      startAnother(harness, {
        slack: { ...harness.config.slack, botToken: "xoxb-0000-0000-SomeoneElsesToken" },
      }),
    ).rejects.toThrow(
      "Slack refused SLACK_BOT_TOKEN (invalid_auth): reinstall the app and copy its Bot User OAuth Token.",
    );
  });

  it("stops with a clear message when its port is taken", async () => {
    const harness = await start();
    await expect(startAnother(harness, { port: harness.bot.port })).rejects.toThrow(
      `port ${harness.bot.port} is already in use: stop what uses it or set PORT to another port.`,
    );
  });

  it("stops with a clear message when the store cannot be opened", async () => {
    const harness = await start();
    await expect(startAnother(harness, { dbPath: "/dev/null/vmbot/store.sqlite" })).rejects.toThrow(
      "the store at VMBOT_DB (/dev/null/vmbot/store.sqlite) cannot be opened: ENOTDIR: not a directory",
    );
  });

  it("stops with a clear message, its password hidden, when VMBOT_DB names a PostgreSQL database it cannot reach", async () => {
    const harness = await start();
    const port = await unusedPort();
    const refusal = startAnother(harness, {
      dbPath: `postgres://vmbot:Pg-Hidden-0002@127.0.0.1:${port}/vmbot`,
    });
    await expect(refusal).rejects.toThrow(
      `the store at VMBOT_DB cannot be opened: the database postgres://vmbot:***@127.0.0.1:${port}/vmbot cannot be used: the database server cannot be reached (ECONNREFUSED)`,
    );
    await expect(refusal).rejects.not.toThrow("Pg-Hidden-0002");
  });

  it("uses Socket Mode, with no /slack/events endpoint, when SLACK_APP_TOKEN is set", async () => {
    const config = loadConfig({
      SLACK_BOT_TOKEN: TEST_SECRETS.botToken,
      SLACK_APP_TOKEN: TEST_SECRETS.appToken,
      GITLAB_TOKEN: TEST_SECRETS.gitlabToken,
      GITLAB_PROJECT: "infra/vms",
      APPROVERS: "U0APPROVER",
      ADMINS: "U0ADMIN",
    });
    const log = createLogger({ level: "silent", redactor: createRedactor() });
    const store = asAsyncStore(openSqliteStore(":memory:"));
    const vmbot = createApp({
      config,
      log,
      store,
      gitlab: createGitlab({ ...config.gitlab, token: TEST_SECRETS.gitlabToken }),
      effects: createEffects({ store }),
    });
    expect(vmbot.socket).toBeDefined();
    expect(vmbot.slackEvents).toBeUndefined();
    await store.close();
  });
});
