/**
 * The bot's HTTP surface under whatever a client may send: every method on every route,
 * malformed request-targets, bodies Bolt cannot read, bodies too large or too slow, too many
 * connections, signatures from the future and replayed commands. After each, the bot still
 * answers /healthz with 200.
 */
import { describe, expect, it } from "vitest";
import { request } from "node:http";
import { CHANNEL, harnessPerTest, REQUESTER, type Harness } from "../support/harness.js";
import { MALFORMED_REQUESTS, openConnection, rawRequest } from "../support/raw-http.js";

const start = harnessPerTest();
const WEBHOOK_SECRET = "webhook-secret-for-tests";
const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"] as const;
const FORM = "application/x-www-form-urlencoded";

async function expectHealthy(h: Harness): Promise<void> {
  const response = await fetch(`${h.baseUrl}/healthz`);
  expect(response.status).toBe(200);
}

/** Signed bodies that are no Slack request, each with the status the bot answers. */
const UNREADABLE_BODIES: readonly { body: string; contentType: string; status: number }[] = [
  { body: "payload=null", contentType: FORM, status: 400 },
  { body: "payload=%5B%5D", contentType: FORM, status: 400 },
  { body: "payload=%22text%22", contentType: FORM, status: 400 },
  { body: "payload=42", contentType: FORM, status: 400 },
  { body: "payload=%7B&payload=%7D", contentType: FORM, status: 400 },
  { body: "payload=not-json", contentType: FORM, status: 400 },
  { body: "null", contentType: "application/json", status: 400 },
  { body: "[]", contentType: "application/json", status: 400 },
  { body: '"text"', contentType: "application/json", status: 400 },
  { body: "{", contentType: "application/json", status: 400 },
  { body: "payload=null", contentType: `${FORM}; charset=utf-8`, status: 400 },
  { body: "payload=%7B%7D", contentType: "text/plain", status: 415 },
  { body: "payload=%7B%7D", contentType: "multipart/form-data; boundary=x", status: 415 },
];

describe("every method on every route", () => {
  it("answers only the methods each route takes, and 405 with Allow for the others", async () => {
    const h = await start({ env: { GITLAB_WEBHOOK_SECRET: WEBHOOK_SECRET } });
    const expected: Record<string, (method: string) => [number, string | null]> = {
      "/slack/events": (m) => (m === "POST" ? [401, null] : [405, "POST"]),
      "/gitlab/webhook": (m) => (m === "POST" ? [401, null] : [405, "POST"]),
      "/healthz": (m) => (m === "GET" || m === "HEAD" ? [200, null] : [405, "GET, HEAD"]),
      "/admin": () => [404, null],
      "/slack/events/../admin": () => [404, null],
    };
    for (const [path, answer] of Object.entries(expected)) {
      for (const method of METHODS) {
        const response = await fetch(`${h.baseUrl}${path}`, { method });
        const [status, allow] = answer(method);
        expect({ path, method, status: response.status }).toEqual({ path, method, status });
        expect(response.headers.get("allow")).toBe(allow);
        await response.arrayBuffer();
      }
    }
    await expectHealthy(h);
    expect(h.slack.callsTo("views.open")).toHaveLength(0);
    expect(h.slack.callsTo("chat.postMessage")).toHaveLength(0);
  });

  it("answers 400 to malformed request-targets and request lines sent over a raw socket", async () => {
    const h = await start();
    for (const text of MALFORMED_REQUESTS) {
      const answer = await rawRequest(h.bot.port, text);
      expect({ text, status: answer.status }).toEqual({ text, status: 400 });
      await expectHealthy(h);
    }
  });
});

describe("bodies Bolt cannot read", () => {
  it("refuses each signed body that is no Slack request, before Bolt sees it", async () => {
    const h = await start();
    for (const { body, contentType, status } of UNREADABLE_BODIES) {
      const delivery = await h.signer.send(body, { contentType });
      expect({ body, contentType, status: delivery.status }).toEqual({ body, contentType, status });
      await expectHealthy(h);
    }
    // A real command afterwards still works: the bot had its chance to act on the others.
    await h.signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
    await h.slack.waitFor("views.open", () => true);
    expect(h.slack.callsTo("views.open")).toHaveLength(1);
    expect(await h.bot.store.listAudit()).toHaveLength(0);
  });

  it("answers Slack's unsigned SSL check and refuses any other unsigned body", async () => {
    const h = await start();
    const check = await fetch(`${h.baseUrl}/slack/events`, {
      method: "POST",
      headers: { "content-type": FORM },
      body: "ssl_check=1&token=x",
    });
    expect(check.status).toBe(200);
    const unsigned = await fetch(`${h.baseUrl}/slack/events`, {
      method: "POST",
      headers: { "content-type": FORM },
      body: "payload=null",
    });
    expect(unsigned.status).toBe(401);
    await expectHealthy(h);
  });
});

/** Posts `chunks` to /slack/events with a signature (wrong, but present) and chunked encoding. */
function postChunked(
  port: number,
  chunks: readonly Buffer[],
): Promise<{ status: number | undefined; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/slack/events",
      headers: {
        "content-type": FORM,
        "x-slack-signature": `v0=${"0".repeat(64)}`,
        "x-slack-request-timestamp": String(Math.floor(Date.now() / 1000)),
      },
    });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => {
        resolve({ status: res.statusCode, closed: res.headers.connection === "close" });
      });
    });
    req.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE" && error.code !== "ECONNRESET") reject(error);
    });
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe("bounds", () => {
  it("refuses a body declared over 1 MB with 413 before reading it", async () => {
    const h = await start();
    const answer = await rawRequest(
      h.bot.port,
      [
        "POST /slack/events HTTP/1.1",
        "Host: x",
        `Content-Type: ${FORM}`,
        `X-Slack-Signature: v0=${"0".repeat(64)}`,
        `X-Slack-Request-Timestamp: ${Math.floor(Date.now() / 1000)}`,
        `Content-Length: ${4 * 1024 * 1024}`,
        "",
        "payload=",
      ].join("\r\n"),
    );
    expect(answer.status).toBe(413);
    await expectHealthy(h);
  });

  it("refuses a body that grows over 1 MB as it streams with 413 and closes the connection", async () => {
    const h = await start();
    const chunk = Buffer.alloc(256 * 1024, "a");
    const answer = await postChunked(h.bot.port, [chunk, chunk, chunk, chunk, chunk]);
    expect(answer).toEqual({ status: 413, closed: true });
    await expectHealthy(h);
  });

  it("cuts a connection whose body never finishes at the request timeout", async () => {
    const h = await start({ httpLimits: { requestTimeoutMs: 1_000, headersTimeoutMs: 1_000 } });
    const slow = await openConnection(
      h.bot.port,
      [
        "POST /slack/events HTTP/1.1",
        "Host: x",
        `Content-Type: ${FORM}`,
        `X-Slack-Signature: v0=${"0".repeat(64)}`,
        `X-Slack-Request-Timestamp: ${Math.floor(Date.now() / 1000)}`,
        "Content-Length: 1000",
        "",
        "payload=",
      ].join("\r\n"),
    );
    expect(await slow.closed).toMatch(/^HTTP\/1\.1 408/);
    await expectHealthy(h);
  });

  it("closes a client's connections beyond its bound and serves it again once some close", async () => {
    const h = await start({ httpLimits: { maxConnectionsPerClient: 3 } });
    const held = await Promise.all([1, 2, 3].map(() => openConnection(h.bot.port)));
    const extra = await openConnection(h.bot.port);
    expect(await extra.closed).toBe("");
    held[0]!.socket.destroy();
    await held[0]!.closed;
    // The server sees the close a moment after the client: wait for a connection it keeps.
    const started = Date.now();
    for (;;) {
      const answer = await fetch(`${h.baseUrl}/healthz`).catch(() => undefined);
      if (answer?.status === 200) break;
      if (Date.now() - started > 5_000) throw new Error("no connection served after one closed");
    }
    for (const { socket } of held) socket.destroy();
  });
});

describe("signatures and replays", () => {
  it("refuses a command signed more than five minutes in the future, like a stale one", async () => {
    const h = await start();
    const now = Math.floor(Date.now() / 1000);
    for (const timestamp of [now + 6 * 60, now + 365 * 24 * 60 * 60]) {
      const delivery = await h.signer.slashCommand({
        text: "create web-01",
        userId: REQUESTER,
        channelId: CHANNEL,
        timestamp,
      });
      expect(delivery.status).toBe(401);
    }
    // Barrier: one signed now opens the form, so the others had their chance and did nothing.
    const fresh = await h.signer.slashCommand({
      text: "create web-02",
      userId: REQUESTER,
      channelId: CHANNEL,
      timestamp: now + 60,
    });
    expect(fresh.status).toBe(200);
    await h.slack.waitFor("views.open", () => true);
    expect(h.slack.callsTo("views.open")).toHaveLength(1);
  });

  it("posts `/vm capacity public` once when the same signed command is replayed or retried", async () => {
    const h = await start({ proxmox: true });
    const first = await h.signer.slashCommand({
      text: "capacity public",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    expect(first.status).toBe(200);
    // The same bytes again, as an attacker who saw them would send them.
    const replay = await fetch(`${h.baseUrl}/slack/events`, {
      method: "POST",
      headers: first.request.headers,
      body: first.request.body,
    });
    expect(replay.status).toBe(200);
    // Slack trying again: the same body, signed anew, with its retry headers.
    const retry = await h.signer.send(first.request.body, {
      contentType: FORM,
      retryNum: 1,
      retryReason: "http_timeout",
    });
    expect(retry.status).toBe(200);
    // Barrier: another command typed afterwards is answered, so the repeats had their chance.
    const second = await h.signer.slashCommand({
      text: "capacity public",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    await h.slack.waitForResponse((post) => post.url === second.responseUrl);
    const posted = h.slack.responses.filter((post) => post.body.response_type === "in_channel");
    expect(posted.map((post) => post.url)).toEqual([first.responseUrl, second.responseUrl]);
  });
});
