import { createServer, type RequestListener, type Server } from "node:http";

export interface Health {
  ok: boolean;
  /** Why not, when not ok. */
  reason?: string;
}

export interface HttpRoutes {
  /** `POST /slack/events`, HTTP mode only. */
  slackEvents: RequestListener | undefined;
  /** `POST /gitlab/webhook`, when GITLAB_WEBHOOK_SECRET is set. */
  gitlabWebhook: RequestListener | undefined;
  health: () => Health;
}

function sendJson(res: Parameters<RequestListener>[1], status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(text);
}

/** What `GET /healthz` answers for `health`: 200 when ready, else 503 with the reason. */
export function healthAnswer(health: Health): {
  status: 200 | 503;
  body: { status: "ok" } | { status: "unavailable"; reason: string };
} {
  return health.ok
    ? { status: 200, body: { status: "ok" } }
    : { status: 503, body: { status: "unavailable", reason: health.reason ?? "not ready" } };
}

/** The bot's HTTP surface (SPEC section 6): Slack events, health, and nothing else by accident. */
export function createHttpServer(routes: HttpRoutes): Server {
  return createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://vmbot").pathname;
    if (path === "/healthz" && (req.method === "GET" || req.method === "HEAD")) {
      const answer = healthAnswer(routes.health());
      sendJson(res, answer.status, answer.body);
      return;
    }
    if (path === "/slack/events" && routes.slackEvents) {
      routes.slackEvents(req, res);
      return;
    }
    if (path === "/gitlab/webhook" && routes.gitlabWebhook) {
      routes.gitlabWebhook(req, res);
      return;
    }
    sendJson(res, 404, { error: "not found" });
  });
}
