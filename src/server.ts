import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "./logger.js";

export interface Health {
  ok: boolean;
  /** Why not, when not ok. */
  reason?: string;
  /** Set while a changed policy file is refused and the one before it still decides. */
  policy?: string;
}

/** A route's handler: whatever it throws or rejects with is answered 500 and logged. */
export type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface HttpRoutes {
  /** `POST /slack/events`, HTTP mode only. */
  slackEvents: Handler | undefined;
  /** `POST /gitlab/webhook`, when GITLAB_WEBHOOK_SECRET is set. */
  gitlabWebhook: RequestListener | undefined;
  health: () => Health | Promise<Health>;
}

/**
 * What one HTTP server accepts. Slack's requests are a few kilobytes, sent at once, and Slack
 * gives up after three seconds, so the bounds sit far above any real request.
 */
export interface ServerLimits {
  /** Largest request body; larger ones get 413 before more is read. */
  maxBodyBytes: number;
  /** Time for a client to send its headers. */
  headersTimeoutMs: number;
  /** Time for a client to send its whole request, headers and body; a slow body is cut. */
  requestTimeoutMs: number;
  /** How long an idle kept-alive connection stays open. */
  keepAliveTimeoutMs: number;
  /** Open connections from one client address; more are closed at once. */
  maxConnectionsPerClient: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  maxBodyBytes: 1024 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 15_000,
  keepAliveTimeoutMs: 5_000,
  maxConnectionsPerClient: 256,
};

function sendJson(res: ServerResponse, status: number, body: unknown, headers = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    ...headers,
  });
  res.end(text);
}

/** What `GET /healthz` answers for `health`: 200 when ready, else 503 with the reason. */
export function healthAnswer(health: Health): {
  status: 200 | 503;
  body: ({ status: "ok" } | { status: "unavailable"; reason: string }) & { policy?: string };
} {
  const policy = health.policy === undefined ? {} : { policy: health.policy };
  return health.ok
    ? { status: 200, body: { status: "ok", ...policy } }
    : {
        status: 503,
        body: { status: "unavailable", reason: health.reason ?? "not ready", ...policy },
      };
}

/** The path of a request-target, or undefined when it is not one (`//%`). */
export function requestPath(req: IncomingMessage): string | undefined {
  try {
    return new URL(req.url ?? "/", "http://vmbot").pathname;
  } catch {
    return undefined;
  }
}

/** Answers 405 with the methods a route takes, unless `req`'s is one of them. */
export function allowOnly(req: IncomingMessage, res: ServerResponse, methods: string[]): boolean {
  if (methods.includes(req.method ?? "")) return true;
  // Its body is not read: the connection is not reused.
  sendJson(
    res,
    405,
    { error: `use ${methods.join(" or ")}` },
    { allow: methods.join(", "), connection: "close" },
  );
  return false;
}

/**
 * Runs `handler` so that nothing it throws, synchronously or not, leaves the request listener:
 * the error is logged and the client gets 500 (or its connection is closed, when the answer had
 * begun).
 */
export function guarded(handler: Handler, log: Logger): RequestListener {
  return (req, res) => {
    const fail = (error: unknown) => {
      log.error({ err: error, method: req.method }, "could not answer an HTTP request");
      if (!res.headersSent)
        sendJson(res, 500, { error: "internal error" }, { connection: "close" });
      else res.destroy();
    };
    try {
      const done = handler(req, res);
      if (done instanceof Promise) done.catch(fail);
    } catch (error) {
      fail(error);
    }
  };
}

/**
 * Applies `limits` to `server`: header, request and keep-alive timeouts (checked every second,
 * so a slow body is cut close to its deadline), and a bound on each client address's open
 * connections. Requests Node cannot parse get its own 400 (408 on a timeout, 431 for headers too
 * large) and their connection closed.
 */
export function applyLimits(server: Server, limits: ServerLimits, log: Logger): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  const open = new Map<string, number>();
  // One warning per client while it is over its bound, not one per connection refused.
  const warned = new Set<string>();
  server.on("connection", (socket: Socket) => {
    const client = socket.remoteAddress ?? "unknown";
    const count = (open.get(client) ?? 0) + 1;
    if (count > limits.maxConnectionsPerClient) {
      if (!warned.has(client)) {
        warned.add(client);
        log.warn(
          { client, limit: limits.maxConnectionsPerClient },
          "a client has too many connections open; closing its new ones",
        );
      }
      socket.destroy();
      return;
    }
    open.set(client, count);
    socket.once("close", () => {
      const left = (open.get(client) ?? 1) - 1;
      warned.delete(client);
      if (left === 0) open.delete(client);
      else open.set(client, left);
    });
  });
}

/** A server whose timeouts are checked every second rather than Node's 30 seconds. */
export function createLimitedServer(
  listener: RequestListener,
  limits: ServerLimits,
  log: Logger,
): Server {
  const server = createServer({ connectionsCheckingInterval: 1_000 }, listener);
  applyLimits(server, limits, log);
  return server;
}

/**
 * The bot's HTTP surface (SPEC section 6): Slack events, the GitLab webhook and health, each
 * with its methods; nothing a client sends makes it throw.
 */
export function createHttpServer(
  routes: HttpRoutes,
  log: Logger,
  limits: ServerLimits = DEFAULT_LIMITS,
): Server {
  const route: Handler = async (req, res) => {
    const path = requestPath(req);
    if (path === undefined) {
      sendJson(res, 400, { error: "malformed request-target" });
      return;
    }
    if (path === "/healthz") {
      if (!allowOnly(req, res, ["GET", "HEAD"])) return;
      const answer = healthAnswer(await routes.health());
      sendJson(res, answer.status, answer.body);
      return;
    }
    if (path === "/slack/events" && routes.slackEvents) {
      if (!allowOnly(req, res, ["POST"])) return;
      await routes.slackEvents(req, res);
      return;
    }
    if (path === "/gitlab/webhook" && routes.gitlabWebhook) {
      if (!allowOnly(req, res, ["POST"])) return;
      routes.gitlabWebhook(req, res);
      return;
    }
    sendJson(res, 404, { error: "not found" });
  };
  return createLimitedServer(guarded(route, log), limits, log);
}
