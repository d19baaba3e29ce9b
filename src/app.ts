import {
  App,
  HTTPReceiver,
  SocketModeReceiver,
  type Middleware,
  type AnyMiddlewareArgs,
  type webApi,
} from "@slack/bolt";
import type { RequestListener } from "node:http";
import { createAccess, type Access } from "./access.js";
import { answerListenerFailures } from "./actions/store-failure.js";
import type { Clock } from "./clock.js";
import type { Config } from "./config.js";
import type { Effects } from "./effects.js";
import type { GitlabPort } from "./gitlab/gitlab.js";
import { watchStore } from "./home/changes.js";
import { createHomePublisher, type HomePublisher } from "./home/publisher.js";
import { registerListeners } from "./listeners/index.js";
import { createRequestTurns, type RequestTurns } from "./slack/after-ack.js";
import { boltLevel, boltLogger, type Logger } from "./logger.js";
import type { PolicySource } from "./policy/source.js";
import type { NodeDirectory } from "./proxmox/directory.js";
import { createRedactor, type Redactor } from "./redact.js";
import { redactAcks, redactingFetch } from "./slack/outgoing.js";
import { answerKeepingFetch, notRepeated } from "./slack/lost-answers.js";
import type { AsyncStore } from "./store/async.js";
import { createRequestStarter, type RequestStarter } from "./tracker/starter.js";
import { createUnlockService, type UnlockService } from "./unlock/service.js";

export interface AppDeps {
  config: Config;
  log: Logger;
  store: AsyncStore;
  gitlab: GitlabPort;
  /** Records every outside effect's intent and result, for exactly-once across crashes. */
  effects: Effects;
  /** Live nodes from Proxmox; undefined when PROXMOX_URL is not set. */
  nodes?: NodeDirectory | undefined;
  /** Who may do what; built over the app's Slack client when not given. */
  access?: Access;
  /** What every text sent to Slack passes; shapes only when not given. */
  redact?: Redactor;
  /** What time it is; the machine's clock by default. */
  now?: Clock;
  /** The request policy in force; the access lists when not given. */
  policy?: PolicySource;
  /** How the Home tabs are published again after changes (tests make it quicker). */
  home?: { debounceMs?: number; retryMs?: number };
  /** The store the led work writes through (PostgreSQL: fenced by the leader); `store` unless said. */
  ledStore?: AsyncStore;
  /** The led work's effects, recorded through `ledStore`; `effects` unless said. */
  ledEffects?: Effects;
  /** The led work's Slack client, made with the app's token and client options (PostgreSQL: fenced by the leader). */
  ledClient?: (
    token: string,
    options: (base: typeof fetch) => webApi.WebClientOptions,
  ) => App["client"];
}

export interface VmbotApp {
  app: App;
  /** HTTP mode: the handler for `POST /slack/events`. Undefined in Socket Mode. */
  slackEvents: RequestListener | undefined;
  socket: SocketModeReceiver | undefined;
  /** Posts request messages and creates pipelines (also for requests a crash interrupted). */
  starter: RequestStarter;
  /** Unlocking Terraform state, with the unlocks a crash interrupted to finish. */
  unlock: UnlockService;
  /** Who may do what, and the policy in force. */
  access: Access;
  /**
   * The store as every part must use it: each change that concerns someone's Home tab has it
   * published again.
   */
  store: AsyncStore;
  /**
   * The led work's store (the tracker, the inventory check, the unlocks a crash interrupted),
   * watched as `store` is.
   */
  ledStore: AsyncStore;
  /** The led work's Slack client: the app's, or on PostgreSQL one that posts only while leading. */
  ledClient: App["client"];
  /** Publishes the Home tabs. */
  home: HomePublisher;
  /** The Slack requests received and unanswered, whose turn comes before the work after an ack. */
  turns: RequestTurns;
  /** Resolves when every event being handled has finished. */
  drain(): Promise<void>;
}

/**
 * Web API client settings: a bounded number of retries and a timeout on every call, so that a
 * slow or failing Slack is answered in seconds, not the client's default half hour, but no call
 * that posts sent twice; and a `fetch` that redacts every request's body, so no secret reaches
 * Slack whichever call sends it, over `base` (the led work's client sends through its own).
 */
export function slackClientOptions(
  config: Config,
  redact: Redactor,
  base: typeof fetch = globalThis.fetch,
) {
  return {
    ...(config.slack.apiUrl === undefined ? {} : { slackApiUrl: config.slack.apiUrl }),
    fetch: redactingFetch(redact, answerKeepingFetch(base)),
    timeout: 10_000,
    retryConfig: {
      retries: 3,
      factor: 2,
      minTimeout: 500,
      maxTimeout: 4_000,
      randomize: true,
      // A call that posts is not sent again when its answer is lost (./slack/lost-answers.ts).
      onFailedAttempt: notRepeated,
    },
  };
}

/** The receiver: Socket Mode when SLACK_APP_TOKEN is set, else HTTP at `/slack/events`. */
function createReceiver(config: Config, logger: ReturnType<typeof boltLogger>) {
  if (config.slack.appToken) {
    const socket = new SocketModeReceiver({
      appToken: config.slack.appToken,
      logger,
      // apps.connections.open is a Web API call: it goes to SLACK_API_URL like every other.
      // Only the base URL: the Socket Mode client keeps its own, longer retries for reconnecting.
      installerOptions: {
        clientOptions:
          config.slack.apiUrl === undefined ? {} : { slackApiUrl: config.slack.apiUrl },
      },
    });
    return { socket, http: undefined };
  }
  const http = new HTTPReceiver({
    signingSecret: config.slack.signingSecret ?? "",
    endpoints: "/slack/events",
    logger,
  });
  return { socket: undefined, http };
}

/** Counts the events being handled, so that a stop can wait for them. */
function trackInflight(app: App): () => Promise<void> {
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
  return async () => {
    await Promise.allSettled([...inflight]);
  };
}

/** Who may do what, asking Slack for user groups through the app's client. */
function accessOver(app: App, deps: AppDeps): Access {
  return createAccess({
    lists: deps.config.access,
    client: app.client,
    log: deps.log,
    ...(deps.now === undefined ? {} : { clock: deps.now }),
    ...(deps.policy === undefined ? {} : { policy: deps.policy.current }),
    audit: async (entry) => {
      await deps.store.audit(entry);
    },
  });
}

/** Unlocking Terraform state; finishing the unlocks a crash interrupted is the led work's. */
function unlockOver(
  app: App,
  deps: AppDeps & { store: AsyncStore },
  access: Access,
  led: { store: AsyncStore; client: App["client"] },
): UnlockService {
  return createUnlockService({
    gitlab: deps.gitlab,
    store: deps.store,
    effects: deps.effects,
    access,
    log: deps.log.child({ component: "unlock" }),
    sharedState: deps.config.tfStateName,
    project: deps.config.gitlab.project,
    ...(deps.now === undefined ? {} : { now: deps.now }),
    announce: async (channel, message) => {
      await app.client.chat.postMessage({ channel, ...message });
    },
    approvals: { access, store: deps.store },
    // Written through the leader's fence, posted only while this replica leads.
    led: {
      store: led.store,
      effects: deps.ledEffects ?? deps.effects,
      announce: async (channel, message) => {
        await led.client.chat.postMessage({ channel, ...message });
      },
    },
  });
}

/** Builds the Bolt app with every listener registered; starts nothing. */
export function createApp(appDeps: AppDeps): VmbotApp {
  const { config, log } = appDeps;
  // The publisher needs the app's client, made below; the store tells it through this.
  const changes: { sink?: HomePublisher["changed"] } = {};
  const sink = (change: Parameters<HomePublisher["changed"]>[0]) => {
    changes.sink?.(change);
  };
  const store = watchStore(appDeps.store, sink);
  const ledStore = appDeps.ledStore === undefined ? store : watchStore(appDeps.ledStore, sink);
  const deps = { ...appDeps, store };
  const redact = deps.redact ?? createRedactor();
  const logger = boltLogger(log);
  const { socket, http } = createReceiver(config, logger);
  const app = new App({
    token: config.slack.botToken,
    receiver: socket ?? http,
    logger,
    logLevel: boltLevel(config.logLevel),
    // start.ts checks the token itself, once, with a clear message when Slack refuses it.
    tokenVerificationEnabled: false,
    clientOptions: slackClientOptions(config, redact),
  });
  const ledClient =
    deps.ledClient?.(config.slack.botToken, (base) => ({
      ...slackClientOptions(config, redact, base),
      logger,
    })) ?? app.client;
  redactAcks(app, redact);
  const drain = trackInflight(app);
  app.use(answerListenerFailures(log));
  app.error(async (error) => {
    log.error({ err: error }, "unhandled error in a Slack listener");
    return Promise.resolve();
  });

  const access = deps.access ?? accessOver(app, deps);
  const starter = createRequestStarter({
    config,
    store: deps.store,
    gitlab: deps.gitlab,
    client: app.client,
    effects: deps.effects,
    log,
  });
  const unlock = unlockOver(app, deps, access, { store: ledStore, client: ledClient });
  const home = createHomePublisher({
    store,
    client: app.client,
    access,
    config,
    log: log.child({ component: "home" }),
    now: deps.now ?? (() => new Date()),
    ...deps.home,
  });
  changes.sink = (change) => {
    home.changed(change);
  };
  const turns = createRequestTurns();
  registerListeners(app, { ...deps, access, starter, unlock, home, turns });
  return {
    app,
    slackEvents: http?.requestListener,
    socket,
    starter,
    unlock,
    access,
    store,
    ledStore,
    ledClient,
    home,
    turns,
    drain,
  };
}
