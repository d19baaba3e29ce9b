/**
 * Slack's side of Socket Mode, beside the fake Web API, for integration tests.
 *
 * The app calls `apps.connections.open` with its app-level (`xapp-`) token, in the
 * Authorization header, and gets a single-use WebSocket URL. When it connects, the fake
 * says `hello`; a test then delivers envelopes (`slash_commands`, `interactive`) and gets
 * back the app's acknowledgement `{ envelope_id, payload? }`, or an error when none comes
 * within Slack's three seconds. `disconnect(reason)` sends Slack's `disconnect` message
 * (`warning`, `refresh_requested`, `link_disabled`). Pings are answered with pongs, as
 * Slack's servers do.
 *
 * trigger_ids and response_urls in the payloads come from the fake Web API, so a modal the
 * app opens with them is checked against the same rules Slack applies.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";

import { WebSocketServer, type RawData, type WebSocket } from "ws";

import { isObject, type FakeSlack, type JsonObject } from "../../sandbox/simulators/slack/index.js";

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

export interface FakeSlackSocketOptions {
  /** The fake Web API that serves `apps.connections.open` and issues trigger_ids. */
  slack: FakeSlack;
  /** The app-level token `apps.connections.open` accepts. */
  appToken: string;
  /** How long a delivery waits for the app's acknowledgement; Slack waits 3 seconds. */
  ackTimeoutMs?: number;
}

/** Why Slack tells a connection to go away. */
export type DisconnectReason = "warning" | "refresh_requested" | "link_disabled";

/** What the app sent back for an envelope. */
export interface SocketAck {
  envelope_id: string;
  payload?: JsonObject;
}

/** One envelope delivered over the socket and the app's answer to it. */
export interface EnvelopeDelivery {
  /** The envelope as sent. */
  envelope: JsonObject;
  ack: SocketAck;
  /** Time until the app acknowledged. */
  elapsedMs: number;
}

export interface SocketSlashCommandDelivery extends EnvelopeDelivery {
  triggerId: string;
  responseUrl: string;
}

/** One WebSocket connection an app opened, kept for assertions. */
export interface SocketConnection {
  id: number;
  ticket: string;
  openedAt: number;
  /** Set once the socket has closed, with the close code the app or the fake sent. */
  closedAt?: number;
  closeCode?: number;
  /** Every message the app sent, parsed; text that is not JSON is kept as a string. */
  received: (JsonObject | string)[];
}

export interface SlashCommandEnvelopeInput {
  text: string;
  userId: string;
  channelId: string;
  /** Defaults to `/vm`. */
  command?: string;
  userName?: string;
  channelName?: string;
  /** Defaults to a fresh trigger_id from the fake Web API. */
  triggerId?: string;
  /** Defaults to a fresh response_url served by the fake Web API. */
  responseUrl?: string;
}

export interface FakeSlackSocket {
  /** Every connection opened, in order, open or closed. */
  readonly connections: readonly SocketConnection[];
  /** The first connection matching `predicate`, already opened or still to come. */
  waitForConnection(
    predicate?: (connection: SocketConnection) => boolean,
    timeoutMs?: number,
  ): Promise<SocketConnection>;
  /** Resolves when `connection` has closed. */
  waitForClose(connection: SocketConnection, timeoutMs?: number): Promise<void>;
  /** Delivers a `slash_commands` envelope on the newest open connection. */
  sendSlashCommand(input: SlashCommandEnvelopeInput): Promise<SocketSlashCommandDelivery>;
  /** Delivers an `interactive` envelope (view_submission, block_actions, …) with this payload. */
  sendInteractive(payload: JsonObject): Promise<EnvelopeDelivery>;
  /** Sends `disconnect` with `reason` on every open connection and waits for them to close. */
  disconnect(reason: DisconnectReason, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------

const LINK_PATH = "/link/";
const DEFAULT_ACK_TIMEOUT_MS = 3000;
const DEBUG_HOST = "applink-fake-slack";
/** The deprecated verification token Slack still puts in payloads. */
const VERIFICATION_TOKEN = "fakeVerificationToken0001";
/** Slack refreshes a connection after a few hours; the hello says roughly when. */
const APPROXIMATE_CONNECTION_SECONDS = 18_060;

interface PendingAck {
  resolve(ack: SocketAck): void;
  reject(error: Error): void;
}

interface LiveConnection {
  record: SocketConnection;
  socket: WebSocket;
}

/** Waiters for something to appear in a list, as in the fake Web API. */
class Watchers {
  private readonly listeners = new Set<() => void>();

  notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  until<T>(find: () => T | undefined, timeoutMs: number, explain: () => string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = (): boolean => {
        const found = find();
        if (found === undefined) return false;
        stop();
        resolve(found);
        return true;
      };
      const stop = (): void => {
        clearTimeout(timer);
        this.listeners.delete(listener);
      };
      const listener = (): void => {
        check();
      };
      const timer = setTimeout(() => {
        stop();
        reject(new Error(explain()));
      }, timeoutMs);
      this.listeners.add(listener);
      check();
    });
  }
}

function parseMessage(data: RawData): JsonObject | string {
  const text = Buffer.isBuffer(data)
    ? data.toString("utf8")
    : Array.isArray(data)
      ? Buffer.concat(data).toString("utf8")
      : Buffer.from(data).toString("utf8");
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : text;
  } catch {
    return text;
  }
}

function rejectUpgrade(socket: Duplex, status: number, reason: string): void {
  socket.end(
    `HTTP/1.1 ${String(status)} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
  );
}

/** Starts the Socket Mode side of the fake Slack and registers `apps.connections.open` on it. */
export async function startFakeSlackSocket(
  options: FakeSlackSocketOptions,
): Promise<FakeSlackSocket> {
  const { slack } = options;
  const ackTimeoutMs = options.ackTimeoutMs ?? DEFAULT_ACK_TIMEOUT_MS;
  const tickets = new Set<string>();
  const live: LiveConnection[] = [];
  const connections: SocketConnection[] = [];
  const pending = new Map<string, PendingAck>();
  const watchers = new Watchers();

  const http = createServer((_req, res) => {
    res.writeHead(426, { "content-type": "text/plain" }).end("Upgrade Required");
  });
  const wss = new WebSocketServer({ noServer: true });

  http.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const ticket = url.searchParams.get("ticket") ?? "";
    if (url.pathname !== LINK_PATH) {
      rejectUpgrade(socket, 404, "Not Found");
      return;
    }
    // A ticket is good for one connection, as a URL from apps.connections.open is.
    if (!tickets.delete(ticket)) {
      rejectUpgrade(socket, 401, "Unauthorized");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      accept(ws, ticket);
    });
  });

  const accept = (ws: WebSocket, ticket: string): void => {
    const record: SocketConnection = {
      id: connections.length + 1,
      ticket,
      openedAt: Date.now(),
      received: [],
    };
    const connection = { record, socket: ws };
    connections.push(record);
    live.push(connection);
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      const message = parseMessage(data);
      record.received.push(message);
      if (isObject(message) && typeof message.envelope_id === "string") {
        const waiting = pending.get(message.envelope_id);
        if (waiting === undefined) return;
        pending.delete(message.envelope_id);
        const ack: SocketAck = { envelope_id: message.envelope_id };
        if (isObject(message.payload)) ack.payload = message.payload;
        waiting.resolve(ack);
      }
    });
    ws.on("close", (code) => {
      record.closedAt = Date.now();
      record.closeCode = code;
      live.splice(live.indexOf(connection), 1);
      watchers.notify();
    });
    ws.send(
      JSON.stringify({
        type: "hello",
        num_connections: live.length,
        debug_info: {
          host: DEBUG_HOST,
          build_number: 1,
          approximate_connection_time: APPROXIMATE_CONNECTION_SECONDS,
        },
        connection_info: { app_id: slack.identity.appId },
      }),
    );
    watchers.notify();
  };

  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;

  // apps.connections.open takes the app-level token only, in the Authorization header.
  slack.addMethod("apps.connections.open", ({ token }) => {
    if (token === undefined || token === "") return { ok: false, error: "missing_args" };
    if (token !== options.appToken) {
      // A bot or user token is refused for its kind; anything else is simply not known.
      const otherKind = /^xox[a-z]-/.test(token);
      return { ok: false, error: otherKind ? "not_allowed_token_type" : "invalid_auth" };
    }
    const ticket = randomUUID();
    tickets.add(ticket);
    return {
      ok: true,
      url: `ws://127.0.0.1:${String(port)}${LINK_PATH}?ticket=${ticket}&app_id=${slack.identity.appId}`,
    };
  });

  const deliver = (
    type: string,
    payload: JsonObject,
    acceptsResponsePayload: boolean,
  ): Promise<EnvelopeDelivery> => {
    const connection = live.at(-1);
    if (connection === undefined) {
      return Promise.reject(new Error(`No open Socket Mode connection to deliver ${type} on`));
    }
    const envelopeId = randomUUID();
    const envelope: JsonObject = {
      envelope_id: envelopeId,
      type,
      accepts_response_payload: acceptsResponsePayload,
      payload,
    };
    const started = performance.now();
    return new Promise<EnvelopeDelivery>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(envelopeId);
        reject(
          new Error(
            `No acknowledgement for ${type} envelope ${envelopeId} within ${String(ackTimeoutMs)} ms`,
          ),
        );
      }, ackTimeoutMs);
      pending.set(envelopeId, {
        resolve: (ack) => {
          clearTimeout(timer);
          resolve({ envelope, ack, elapsedMs: performance.now() - started });
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      connection.socket.send(JSON.stringify(envelope), (error) => {
        // ws reports success as null, whatever its types say.
        if (!error) return;
        pending.delete(envelopeId);
        clearTimeout(timer);
        reject(error);
      });
    });
  };

  const waitForClose = (connection: SocketConnection, timeoutMs = 5000): Promise<void> =>
    watchers
      .until(
        () => (connection.closedAt === undefined ? undefined : true),
        timeoutMs,
        () =>
          `Socket Mode connection ${String(connection.id)} still open after ${String(timeoutMs)} ms`,
      )
      .then(() => undefined);

  return {
    connections,
    waitForConnection: (predicate, timeoutMs = 5000) =>
      watchers.until(
        () => connections.find((connection) => predicate?.(connection) ?? true),
        timeoutMs,
        () =>
          `No Socket Mode connection${predicate === undefined ? "" : " matching the predicate"} within ${String(timeoutMs)} ms; ${String(connections.length)} opened`,
      ),
    waitForClose,
    async sendSlashCommand(input) {
      const triggerId = input.triggerId ?? slack.issueTriggerId();
      const responseUrl = input.responseUrl ?? slack.issueResponseUrl();
      const { identity } = slack;
      // The same fields, all strings, as the form body of an HTTP slash command.
      const payload: JsonObject = {
        token: VERIFICATION_TOKEN,
        team_id: identity.teamId,
        team_domain: identity.teamDomain,
        channel_id: input.channelId,
        channel_name: input.channelName ?? input.channelId.toLowerCase(),
        user_id: input.userId,
        user_name: input.userName ?? slack.user(input.userId).name,
        command: input.command ?? "/vm",
        text: input.text,
        api_app_id: identity.appId,
        is_enterprise_install: "false",
        response_url: responseUrl,
        trigger_id: triggerId,
      };
      const delivery = await deliver("slash_commands", payload, true);
      return { ...delivery, triggerId, responseUrl };
    },
    // Slack takes a response body (response_action) for view submissions, not for clicks.
    sendInteractive: (payload) =>
      deliver("interactive", payload, payload.type === "view_submission"),
    async disconnect(reason, timeoutMs = 5000) {
      const open = [...live];
      const message = JSON.stringify({
        type: "disconnect",
        reason,
        debug_info: { host: DEBUG_HOST },
      });
      for (const connection of open) connection.socket.send(message);
      await Promise.all(open.map(({ record }) => waitForClose(record, timeoutMs)));
    },
    async close() {
      for (const waiting of pending.values())
        waiting.reject(new Error("The fake Slack socket closed"));
      pending.clear();
      for (const { socket } of live) socket.terminate();
      await new Promise<void>((resolve) => {
        wss.close(() => {
          resolve();
        });
      });
      http.closeAllConnections();
      await new Promise<void>((resolve) => {
        http.close(() => {
          resolve();
        });
      });
    },
  };
}
