import { createHmac } from "node:crypto";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { createRequestTurns, type RequestTurns } from "../../src/slack/after-ack.js";
import { createSlackEventsHandler } from "../../src/slack/request.js";
import { openConnection } from "../support/raw-http.js";

/**
 * Which requests to `POST /slack/events` hold back the work after acknowledgements
 * (src/slack/after-ack.ts): only signed ones, until they are answered. The turns wait a minute at
 * most here, so work held back shows as work that has not run after many turns.
 */

const SECRET = "signing-secret-for-turn-tests";
const BODY = "command=%2Fvm&text=create";

let server: Server;
let port: number;
let turns: RequestTurns;
/** Responses Bolt would answer: held until the test ends them. */
let held: ServerResponse[];

beforeEach(async () => {
  turns = createRequestTurns(60_000);
  held = [];
  const handler = createSlackEventsHandler({
    signingSecret: SECRET,
    bolt: (_req, res) => held.push(res),
    log: createLogger({ level: "silent", redactor: createRedactor() }),
    maxBodyBytes: 64 * 1024,
    turns,
  });
  server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterEach(async () => {
  for (const res of held) res.end();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function head(body: string, { signed = true, length = Buffer.byteLength(body) } = {}): string {
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = `v0=${createHmac("sha256", SECRET).update(`v0:${timestamp}:${body}`).digest("hex")}`;
  return [
    "POST /slack/events HTTP/1.1",
    "Host: 127.0.0.1",
    "Content-Type: application/x-www-form-urlencoded",
    `Content-Length: ${length}`,
    ...(signed
      ? [`X-Slack-Signature: ${signature}`, `X-Slack-Request-Timestamp: ${timestamp}`]
      : []),
    "",
    "",
  ].join("\r\n");
}

/** Whether the work after an acknowledgement runs within `count` turns of the event loop. */
async function runsWithin(count: number): Promise<boolean> {
  const work = { ran: false };
  void turns.afterPending().then(() => {
    work.ran = true;
  });
  for (let i = 0; i < count && !work.ran; i += 1) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  return work.ran;
}

/** Resolves once the server has seen the next request's head. */
const nextRequest = () =>
  new Promise<void>((resolve) => {
    server.once("request", () => {
      resolve();
    });
  });

describe("the Slack requests whose turn comes first", () => {
  it("holds the work while a signed request is with Bolt, and lets it run once it is answered", async () => {
    const seen = nextRequest();
    const { socket } = await openConnection(port, `${head(BODY)}${BODY}`);
    await seen;
    while (held.length === 0) await new Promise((resolve) => setImmediate(resolve));
    expect(await runsWithin(50)).toBe(false);
    held[0]?.end();
    expect(await runsWithin(50)).toBe(true);
    socket.destroy();
  });

  it("holds nothing for a request whose body is still coming, or one that is not signed", async () => {
    const slow = nextRequest();
    const { socket: slowSocket } = await openConnection(port, `${head(BODY)}${BODY.slice(0, 5)}`);
    await slow;
    expect(await runsWithin(50)).toBe(true);

    const unsigned = nextRequest();
    const { socket, closed } = await openConnection(
      port,
      `${head(BODY, { signed: false })}${BODY}`,
    );
    await unsigned;
    expect(await closed).toMatch(/^HTTP\/1\.1 401/);
    expect(await runsWithin(50)).toBe(true);
    expect(held).toHaveLength(0);
    slowSocket.destroy();
    socket.destroy();
  });
});
