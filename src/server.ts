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

/** The bot's HTTP surface (SPEC section 6): Slack events, health, and nothing else by accident. */
export function createHttpServer(routes: HttpRoutes): Server {
  return createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://vmbot").pathname;
    if (path === "/healthz" && (req.method === "GET" || req.method === "HEAD")) {
      const health = routes.health();
      sendJson(
        res,
        health.ok ? 200 : 503,
        health.ok ? { status: "ok" } : { status: "unavailable", reason: health.reason },
      );
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
