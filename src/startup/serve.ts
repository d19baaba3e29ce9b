import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import { createWebhookHandler } from "../gitlab/webhook.js";
import type { Logger } from "../logger.js";
import { createHttpServer, DEFAULT_LIMITS, type Health, type ServerLimits } from "../server.js";
import { createSlackEventsHandler } from "../slack/request.js";
import type { VmbotApp } from "../app.js";
import { StartupError } from "./errors.js";
import { withDatabase, type DatabaseHealth } from "./health.js";

export interface ServeDeps {
  config: Config;
  log: Logger;
  vmbot: VmbotApp;
  health: () => Health | Promise<Health>;
  /** The store's database, for `/healthz` to report (health.ts); without it, `health` alone. */
  database?: DatabaseHealth | undefined;
  /** A GitLab hook arrived for this pipeline: look at it now. */
  wake: (pipelineId: number | undefined) => void;
}

export interface ServeOptions {
  httpLimits?: Partial<ServerLimits> | undefined;
  /** What time it is, for signed requests' five minutes; the machine's clock by default. */
  clock?: Clock | undefined;
}

/** The HTTP server: Slack's events (HTTP mode), GitLab's webhook when configured, `/healthz`. */
export function createServer(deps: ServeDeps, options: ServeOptions = {}): Server {
  const { config, log } = deps;
  const secret = config.gitlab.webhookSecret;
  const gitlabWebhook =
    secret === undefined
      ? undefined
      : createWebhookHandler({ secret, wake: deps.wake, log: log.child({ component: "webhook" }) });
  const limits = { ...DEFAULT_LIMITS, ...options.httpLimits };
  const bolt = deps.vmbot.slackEvents;
  const slackEvents =
    bolt === undefined
      ? undefined
      : createSlackEventsHandler({
          signingSecret: config.slack.signingSecret ?? "",
          bolt,
          log: log.child({ component: "http" }),
          maxBodyBytes: limits.maxBodyBytes,
          turns: deps.vmbot.turns,
          ...(options.clock === undefined ? {} : { clock: options.clock }),
        });
  const health =
    deps.database === undefined ? deps.health : withDatabase(deps.health, deps.database);
  return createHttpServer(
    { slackEvents, gitlabWebhook, health },
    log.child({ component: "http" }),
    limits,
  );
}

/** Listens on PORT (and `host`), resolving with the port taken; a port in use stops the start. */
export async function listen(server: Server, port: number, host?: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        new StartupError(
          error.code === "EADDRINUSE"
            ? `port ${port} is already in use: stop what uses it or set PORT to another port.`
            : `the HTTP server cannot listen on port ${port}: ${error.message}`,
          { cause: error },
        ),
      );
    });
    server.listen(port, host, () => {
      server.removeAllListeners("error");
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Socket Mode connects; a refused app token stops the start with what to change. */
export async function connectSocket(vmbot: VmbotApp): Promise<void> {
  if (!vmbot.socket) return;
  try {
    await vmbot.app.start();
  } catch (error) {
    throw new StartupError(
      `Socket Mode could not connect (${(error as { data?: { error?: string } }).data?.error ?? (error as Error).message}): check SLACK_APP_TOKEN, an app-level token with connections:write.`,
      { cause: error },
    );
  }
}

/**
 * Stops serving: no new events (Socket Mode disconnects, the server accepts no more), then the
 * events in hand get up to `graceMs` to finish.
 */
export async function stopServing(
  server: Server,
  vmbot: VmbotApp,
  graceMs: number,
  log: Logger,
): Promise<void> {
  if (vmbot.socket) await vmbot.app.stop().catch(() => undefined);
  const closed = new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  server.closeIdleConnections();
  const grace = new Promise<"timeout">((resolve) => {
    setTimeout(() => {
      resolve("timeout");
    }, graceMs).unref();
  });
  const outcome = await Promise.race([vmbot.drain().then(() => "drained" as const), grace]);
  if (outcome === "timeout") log.warn("in-flight work did not finish in time; stopping anyway");
  server.closeAllConnections();
  await closed;
}
