import {
  App,
  HTTPReceiver,
  SocketModeReceiver,
  type Middleware,
  type AnyMiddlewareArgs,
} from "@slack/bolt";
import type { RequestListener } from "node:http";
import { createAccess, type Access } from "./access.js";
import { registerCreateSubmission } from "./actions/create-submit.js";
import { registerPlanDecisions } from "./actions/plan-decision.js";
import { registerDestroyApprove } from "./actions/destroy-approve.js";
import { registerDestroyActions } from "./commands/destroy.js";
import { registerLeaseActions } from "./actions/lease.js";
import { registerReject } from "./actions/reject.js";
import { registerRetryConfigure } from "./actions/retry-configure.js";
import { registerPlanAgain } from "./actions/plan-again.js";
import { registerWithdraw } from "./actions/withdraw.js";
import { answerStoreFailures } from "./actions/store-failure.js";
import { registerUnlockActions } from "./commands/unlock.js";
import { registerVmCommand } from "./commands/vm.js";
import type { Config } from "./config.js";
import type { Effects } from "./effects.js";
import type { GitlabPort } from "./gitlab/gitlab.js";
import { boltLevel, boltLogger, type Logger } from "./logger.js";
import type { NodeDirectory } from "./proxmox/directory.js";
import { createRedactor, type Redactor } from "./redact.js";
import { redactAcks, redactingFetch } from "./slack/outgoing.js";
import type { Store } from "./store/store.js";
import { createRequestStarter, type RequestStarter } from "./tracker/starter.js";

export interface AppDeps {
  config: Config;
  log: Logger;
  store: Store;
  gitlab: GitlabPort;
  /** Records every outside effect's intent and result, for exactly-once across crashes. */
  effects: Effects;
  /** Live nodes from Proxmox; undefined when PROXMOX_URL is not set. */
  nodes?: NodeDirectory | undefined;
  /** Who may do what; built over the app's Slack client when not given. */
  access?: Access;
  /** What every text sent to Slack passes; shapes only when not given. */
  redact?: Redactor;
}

export interface VmbotApp {
  app: App;
  /** HTTP mode: the handler for `POST /slack/events`. Undefined in Socket Mode. */
  slackEvents: RequestListener | undefined;
  socket: SocketModeReceiver | undefined;
  /** Posts request messages and creates pipelines (also for requests a crash interrupted). */
  starter: RequestStarter;
  /** Resolves when every event being handled has finished. */
  drain(): Promise<void>;
}

/**
 * Web API client settings: a bounded number of retries and a timeout on every call, so that a
 * slow or failing Slack is answered in seconds, not the client's default half hour; and a `fetch`
 * that redacts every request's body, so no secret reaches Slack whichever call sends it.
 */
export function slackClientOptions(config: Config, redact: Redactor) {
  return {
    ...(config.slack.apiUrl === undefined ? {} : { slackApiUrl: config.slack.apiUrl }),
    fetch: redactingFetch(redact),
    timeout: 10_000,
    retryConfig: { retries: 3, factor: 2, minTimeout: 500, maxTimeout: 4_000, randomize: true },
  };
}

/** Builds the Bolt app with every listener registered; starts nothing. */
export function createApp(deps: AppDeps): VmbotApp {
  const { config, log } = deps;
  const redact = deps.redact ?? createRedactor();
  const logger = boltLogger(log);
  const socket = config.slack.appToken
    ? new SocketModeReceiver({
        appToken: config.slack.appToken,
        logger,
        // apps.connections.open is a Web API call: it goes to SLACK_API_URL like every other.
        // Only the base URL: the Socket Mode client keeps its own, longer retries for reconnecting.
        installerOptions: {
          clientOptions:
            config.slack.apiUrl === undefined ? {} : { slackApiUrl: config.slack.apiUrl },
        },
      })
    : undefined;
  const http = socket
    ? undefined
    : new HTTPReceiver({
        signingSecret: config.slack.signingSecret ?? "",
        endpoints: "/slack/events",
        logger,
      });
  const app = new App({
    token: config.slack.botToken,
    receiver: socket ?? http,
    logger,
    logLevel: boltLevel(config.logLevel),
    // start.ts checks the token itself, once, with a clear message when Slack refuses it.
    tokenVerificationEnabled: false,
    clientOptions: slackClientOptions(config, redact),
  });
  redactAcks(app, redact);

  const inflight = new Set<Promise<void>>();
  const track: Middleware<AnyMiddlewareArgs> = async ({ next }) => {
    const work = next();
    inflight.add(work);
    try {
      await work;
    } finally {
      inflight.delete(work);
    }
  };
  app.use(track);
  app.use(answerStoreFailures(log));

  app.error(async (error) => {
    log.error({ err: error }, "unhandled error in a Slack listener");
    return Promise.resolve();
  });

  const access = deps.access ?? createAccess({ lists: config.access, client: app.client, log });
  const starter = createRequestStarter({
    config,
    store: deps.store,
    gitlab: deps.gitlab,
    client: app.client,
    effects: deps.effects,
    log,
  });
  const listenerDeps = { ...deps, access, starter };
  registerVmCommand(app, listenerDeps);
  registerCreateSubmission(app, listenerDeps);
  registerPlanDecisions(app, listenerDeps);
  registerReject(app, listenerDeps);
  registerWithdraw(app, listenerDeps);
  registerRetryConfigure(app, listenerDeps);
  registerPlanAgain(app, listenerDeps);
  registerUnlockActions(app, listenerDeps);
  registerDestroyActions(app, listenerDeps);
  registerDestroyApprove(app, listenerDeps);
  registerLeaseActions(app, listenerDeps);

  return {
    app,
    slackEvents: http?.requestListener,
    socket,
    starter,
    drain: async () => {
      await Promise.allSettled([...inflight]);
    },
  };
}
