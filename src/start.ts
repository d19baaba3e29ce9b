import { createApp, type VmbotApp } from "./app.js";
import { systemClock, type Clock } from "./clock.js";
import { configSecrets, type Config } from "./config.js";
import { createEffects } from "./effects.js";
import { createGitlab, type GitlabPort } from "./gitlab/gitlab.js";
import type { HomePublisher } from "./home/publisher.js";
import { createLogger, type Logger } from "./logger.js";
import { createPolicySource, policyRefusedNote, type PolicySource } from "./policy/source.js";
import { createRedactor, type Redactor } from "./redact.js";
import type { Health } from "./server.js";
import { StartupError } from "./startup/errors.js";
import { checkGitlab } from "./startup/gitlab-check.js";
import { withDatabase } from "./startup/health.js";
import {
  fencedLedWork,
  postgresLeadership,
  sqliteLeadership,
  type Leadership,
} from "./startup/leadership.js";
import type { StartOptions } from "./startup/options.js";
import { connectPlatform, type Platform } from "./startup/platform.js";
import { connectSocket, createServer, listen, stopServing } from "./startup/serve.js";
import { createSlackLink, type SlackLink } from "./startup/slack-link.js";
import { StoreOwnedError } from "./store/owner.js";
import { newReplicaName, openPostgresStore, type PostgresStore } from "./store/postgres/store.js";
import { isPostgresUrl, parsePostgresUrl } from "./store/postgres/url.js";
import { openSqliteStore } from "./store/sqlite.js";
import { asAsyncStore, type AsyncStore } from "./store/async.js";
import { createInventoryCheck, type InventoryCheck } from "./tracker/inventory-check.js";
import { createRequestStarter } from "./tracker/starter.js";
import { createTracker, type Tracker } from "./tracker/tracker.js";

export { StartupError } from "./startup/errors.js";
export type { StartOptions } from "./startup/options.js";

export interface RunningVmbot {
  /** The port the HTTP server listens on (useful when PORT=0). */
  port: number;
  log: Logger;
  health(): Promise<Health>;
  /** The open store, for inspection (tests, tooling). */
  store: AsyncStore;
  /** The pipeline tracker, e.g. to run a pass now. */
  tracker: Tracker;
  /** The comparison of the VMs vmbot made with GitLab's Terraform states, e.g. to run one now. */
  inventory: InventoryCheck;
  /** The Home tabs' publisher, e.g. to publish what is due now. */
  home: HomePublisher;
  /** Stops taking work, finishes what is in flight (up to `graceMs`), closes the store. */
  stop(graceMs?: number): Promise<void>;
}

/** How often the VMs are compared with GitLab's Terraform states, and the first time. */
const INVENTORY_CHECK_MS = 10 * 60_000;
const FIRST_INVENTORY_CHECK_MS = 60_000;

/** The open store, and what only a store several replicas share offers. */
interface OpenStore {
  store: AsyncStore;
  /** PostgreSQL: the store several replicas share, for their leadership (leadership.ts). */
  shared?: PostgresStore;
  /** PostgreSQL: claims an effect for this replica (effects.ts). */
  claim?: PostgresStore["claim"];
  /** Which engine and database, for the log: a PostgreSQL password never appears. */
  engine: "sqlite" | "postgresql";
  shown: string;
}

/**
 * The store first: a second bot on the same store, or a damaged one, stops here, before anything
 * is asked of Vault, Slack or GitLab. A `postgres://` VMBOT_DB is a PostgreSQL database (its
 * migrations applied once, whichever replica starts first); anything else a SQLite file.
 */
async function openStore(
  config: Config,
  clock: Clock,
  log: Logger,
  replica: string | undefined,
): Promise<OpenStore> {
  if (isPostgresUrl(config.dbPath)) {
    const shown = parsePostgresUrl(config.dbPath).shown;
    try {
      const store = await openPostgresStore(config.dbPath, {
        clock,
        ...(replica === undefined ? {} : { replica }),
      });
      log.info({ engine: "postgresql", db: shown, replica: store.replica }, "store opened");
      return { store, shared: store, claim: store.claim, engine: "postgresql", shown };
    } catch (error) {
      throw new StartupError(
        `the store at VMBOT_DB cannot be opened: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
  const store = openSqlite(config, clock);
  log.info({ engine: "sqlite", db: config.dbPath }, "store opened");
  return { store, engine: "sqlite", shown: config.dbPath };
}

function openSqlite(config: Config, clock: Clock): AsyncStore {
  try {
    return asAsyncStore(openSqliteStore(config.dbPath, { clock }));
  } catch (error) {
    throw new StartupError(
      error instanceof StoreOwnedError
        ? error.message
        : `the store at VMBOT_DB (${config.dbPath}) cannot be opened: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** The GitLab client, over the token the platform gave, checked once against GitLab. */
async function connectGitlab(
  config: Config,
  platform: Platform,
  options: StartOptions,
  log: Logger,
): Promise<GitlabPort> {
  const gitlab = createGitlab({
    url: config.gitlab.url,
    token: platform.gitlabToken,
    project: config.gitlab.project,
    ref: config.gitlab.ref,
    pipelineParams: config.gitlab.pipelineParams,
    tagRequests: config.gitlab.requestIdVariable,
    ...(options.gitlabTimeoutMs === undefined ? {} : { timeoutMs: options.gitlabTimeoutMs }),
    now: options.clock ?? systemClock,
  });
  await checkGitlab(gitlab, config, log);
  return gitlab;
}

interface Parts {
  vmbot: VmbotApp;
  tracker: Tracker;
  inventory: InventoryCheck;
  /** PostgreSQL: the fence of the led work's store, which the leader takes (leadership.ts). */
  fence?: ReturnType<typeof fencedLedWork>["fence"];
}

/** The Bolt app with every listener, the pipeline tracker and the inventory check; starts nothing. */
function buildParts(
  config: Config,
  connected: {
    store: AsyncStore;
    claim?: PostgresStore["claim"] | undefined;
    shared?: PostgresStore | undefined;
    gitlab: GitlabPort;
    platform: Platform;
    policy: PolicySource;
  },
  options: StartOptions,
  log: Logger,
  redactor: Redactor,
): Parts {
  const { store, gitlab, platform, policy, shared } = connected;
  const crashPoint =
    options.onCrashPoint === undefined ? {} : { onCrashPoint: options.onCrashPoint };
  const effects = createEffects({
    store,
    ...(connected.shared === undefined
      ? {}
      : {
          claim: connected.shared.claim,
          release: connected.shared.release,
          renew: connected.shared.renew,
        }),
    ...crashPoint,
  });
  // PostgreSQL: the led work writes only while this replica's epoch is the current one.
  const led =
    shared === undefined
      ? undefined
      : fencedLedWork(shared, options.clock ?? systemClock, crashPoint);
  const ledEffects = led?.app.ledEffects ?? effects;
  const vmbot = createApp({
    config,
    log,
    store,
    gitlab,
    effects,
    nodes: platform.nodes,
    redact: redactor,
    policy,
    now: options.clock ?? systemClock,
    ...(options.home === undefined ? {} : { home: options.home }),
    ...led?.app,
  });
  const ledDeps = { config, gitlab, client: vmbot.ledClient, log };
  const starter =
    led === undefined
      ? vmbot.starter
      : createRequestStarter({ ...ledDeps, store: vmbot.ledStore, effects: ledEffects });
  const tracker = createTracker({
    config,
    store: vmbot.ledStore,
    gitlab,
    client: vmbot.ledClient,
    log: log.child({ component: "tracker" }),
    redact: redactor,
    effects: ledEffects,
    starter,
    access: vmbot.access,
    nodes: platform.nodes,
    now: options.clock ?? systemClock,
  });
  const inventory = createInventoryCheck({
    store: vmbot.ledStore,
    gitlab,
    log: log.child({ component: "inventory" }),
    sharedState: config.tfStateName,
    intervalMs: INVENTORY_CHECK_MS,
    firstMs: FIRST_INVENTORY_CHECK_MS,
  });
  return { vmbot, tracker, inventory, ...(led === undefined ? {} : { fence: led.fence }) };
}

/**
 * `/healthz`: the bot is connected to Slack (whether the store takes a write is the database's
 * part, health.ts); a changed policy file that was refused (the one before it still deciding) is
 * named alongside.
 */
function healthOf(
  store: AsyncStore,
  slack: SlackLink,
  policy: PolicySource,
  stopping: () => boolean,
): () => Promise<Health> {
  const now = async (): Promise<Health> => {
    if (stopping()) return { ok: false, reason: "shutting down" };
    if (!(await store.isOpen())) return { ok: false, reason: "the store is closed" };
    const link = slack.state();
    return link.connected ? { ok: true } : { ok: false, reason: link.reason };
  };
  return async () => {
    const refused = policy.refused();
    const health = await now();
    return refused === undefined ? health : { ...health, policy: policyRefusedNote(refused) };
  };
}

/** The request policy (VMBOT_POLICY): a file that does not pass stops the start, every problem named. */
function openPolicy(config: Config, log: Logger): PolicySource {
  try {
    return createPolicySource({
      path: config.policyPath,
      lists: config.access,
      log: log.child({ component: "policy" }),
    });
  } catch (error) {
    throw new StartupError((error as Error).message, { cause: error });
  }
}

/** What start-up undoes, last first, when a later step fails. */
function undoList() {
  const steps: (() => void | Promise<void>)[] = [];
  return {
    push: (step: () => void | Promise<void>) => {
      steps.push(step);
    },
    async run() {
      for (const step of steps.reverse()) await Promise.resolve(step()).catch(() => undefined);
    },
  };
}

/**
 * The bot's log. Every line names the replica where several share PostgreSQL (the name the store
 * is to take); SQLite's store has one process, with nothing to tell apart.
 */
function startLog(config: Config, options: StartOptions, redactor: Redactor) {
  const replica = isPostgresUrl(config.dbPath) ? newReplicaName() : undefined;
  const log = createLogger({
    level: config.logLevel,
    redactor,
    replica,
    ...(options.logDestination ? { destination: options.logDestination } : {}),
  });
  return { replica, log };
}

/**
 * Wires every part from a validated configuration and starts serving: the store, Vault and
 * Proxmox, GitLab, the app, Slack, the HTTP server, then the background work.
 */
export async function startVmbot(
  config: Config,
  options: StartOptions = {},
): Promise<RunningVmbot> {
  const redactor = createRedactor(configSecrets(config));
  const { replica, log } = startLog(config, options, redactor);
  const undo = undoList();
  let stopping = false;
  try {
    const policy = openPolicy(config, log);
    undo.push(() => {
      policy.stop();
    });
    const opened = await openStore(config, options.clock ?? systemClock, log, replica);
    const { store } = opened;
    undo.push(async () => {
      await store.close();
    });
    const platform = await connectPlatform(config, options, log, redactor);
    undo.push(() => {
      platform.vault?.stop();
    });
    const gitlab = await connectGitlab(config, platform, options, log);
    const connected = { ...opened, gitlab, platform, policy };
    const parts = buildParts(config, connected, options, log, redactor);
    const { vmbot, tracker, inventory } = parts;
    const slack = createSlackLink({
      config,
      redactor,
      log,
      socket: vmbot.socket,
      ...(options.slackRetryMs === undefined ? {} : { retryMs: options.slackRetryMs }),
    });
    undo.push(() => {
      slack.stop();
    });
    const leadership = leadershipOf(config, opened, parts, options, log);
    const health = withDatabase(
      healthOf(store, slack, policy, () => stopping),
      leadership.database,
    );
    const { wake } = leadership;
    const server = createServer(
      { config, log, vmbot, health, wake },
      { httpLimits: options.httpLimits },
    );
    await slack.verify();
    undo.push(async () => {
      if (vmbot.socket) await vmbot.app.stop();
    });
    await connectSocket(vmbot);
    const port = await listen(server, config.port, options.host);
    undo.push(() => leadership.stop());
    await leadership.start();
    log.info(
      { port, mode: vmbot.socket ? "socket" : "http", engine: opened.engine, db: opened.shown },
      "vmbot is running",
    );
    const stop = async (graceMs = 8_000) => {
      if (stopping) return;
      stopping = true;
      slack.stop();
      log.info("stopping: finishing in-flight work");
      await leadership.stop();
      await vmbot.home.stop();
      await stopServing(server, vmbot, graceMs, log);
      platform.vault?.stop();
      policy.stop();
      await store.close();
      log.info("stopped");
      log.flush();
    };
    const home = vmbot.home;
    return { port, log, health, store: vmbot.store, tracker, inventory, home, stop };
  } catch (error) {
    await undo.run();
    throw error;
  }
}

/**
 * Who does the work that must run once (the tracker, the inventory check, interrupted unlocks):
 * the one process on SQLite, the replica that leads on PostgreSQL.
 */
function leadershipOf(
  config: Config,
  opened: OpenStore,
  parts: Parts,
  options: StartOptions,
  log: Logger,
): Leadership {
  const { vmbot, tracker, inventory } = parts;
  const work = { tracker, inventory, resumeUnlocks: () => vmbot.unlock.resume() };
  if (opened.shared === undefined) return sqliteLeadership(opened.store, work, log);
  const clock = options.clock ?? systemClock;
  return postgresLeadership(
    opened.shared,
    {
      url: config.dbPath,
      ttlMs: config.leaderTtlMs,
      clock,
      ...(parts.fence === undefined ? {} : { fence: parts.fence }),
      ...(options.leaderSchedule === undefined ? {} : { schedule: options.leaderSchedule }),
    },
    work,
    log,
  );
}
