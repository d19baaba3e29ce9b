import type { AddressInfo } from "node:net";
import type { DestinationStream } from "pino";
import { webApi } from "@slack/bolt";
import { createApp, slackClientOptions } from "./app.js";
import { resumeUnlocks } from "./commands/unlock.js";
import { configSecrets, type Config } from "./config.js";
import { createEffects, type CrashPoint } from "./effects.js";
import { userMessage, VmbotError } from "./errors.js";
import { createGitlab, type GitlabPort } from "./gitlab/gitlab.js";
import { judgeGitlab } from "./gitlab/preflight.js";
import { createWebhookHandler } from "./gitlab/webhook.js";
import { boltLogger, createLogger, type Logger } from "./logger.js";
import { createNodeDirectory, type NodeDirectory } from "./proxmox/directory.js";
import { createPolicySource, policyRefusedNote, type PolicySource } from "./policy/source.js";
import { createProxmox } from "./proxmox/proxmox.js";
import { createRedactor, type Redactor } from "./redact.js";
import { fixedSecret, type SecretSource } from "./secrets.js";
import { createHttpServer, DEFAULT_LIMITS, type Health, type ServerLimits } from "./server.js";
import { createSlackEventsHandler } from "./slack/request.js";
import { createTracker, type Tracker } from "./tracker/tracker.js";
import { createInventoryCheck, type InventoryCheck } from "./tracker/inventory-check.js";
import { StoreOwnedError } from "./store/owner.js";
import { openSqliteStore } from "./store/sqlite.js";
import type { Store } from "./store/store.js";
import { createVault, type Vault } from "./vault/vault.js";

export interface StartOptions {
  /** The address the HTTP server listens on; every interface by default. */
  host?: string;
  /** Where log lines go; stdout by default. */
  logDestination?: DestinationStream;
  gitlabTimeoutMs?: number;
  vaultTimeoutMs?: number;
  proxmoxTimeoutMs?: number;
  /** How long a Proxmox node list is reused (15 seconds by default). */
  nodeListMaxAgeMs?: number;
  /** The HTTP server's bounds, where they differ from DEFAULT_LIMITS (tests). */
  httpLimits?: Partial<ServerLimits>;
  /** Fault injection for crash tests, called at every effect's crash points. */
  onCrashPoint?: (point: CrashPoint) => void;
}

export interface RunningVmbot {
  /** The port the HTTP server listens on (useful when PORT=0). */
  port: number;
  log: Logger;
  health(): Health;
  /** The open store, for inspection (tests, tooling). */
  store: Store;
  /** The pipeline tracker, e.g. to run a pass now. */
  tracker: Tracker;
  /** The comparison of the VMs vmbot made with GitLab's Terraform states, e.g. to run one now. */
  inventory: InventoryCheck;
  /** Stops taking work, finishes what is in flight (up to `graceMs`), closes the store. */
  stop(graceMs?: number): Promise<void>;
}

/** Slack errors that mean the bot token itself is wrong: no point in retrying. */
const FATAL_AUTH_ERRORS = new Set([
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "token_expired",
]);

/** How often the VMs are compared with GitLab's Terraform states, and the first time. */
const INVENTORY_CHECK_MS = 10 * 60_000;
const FIRST_INVENTORY_CHECK_MS = 60_000;

export class StartupError extends Error {
  override name = "StartupError";
}

/** How long start-up waits for GitLab to say its version and the token's role. */
const GITLAB_CHECK_BUDGET_MS = 10_000;

/**
 * GitLab's version and the token's role, checked once at start: what cannot work stops the
 * start, what will fail later is logged with what to change. A GitLab that does not answer in
 * time is only a warning: the bot starts and says so when a request reaches GitLab.
 */
async function checkGitlab(gitlab: GitlabPort, config: Config, log: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      resolve(undefined);
    }, GITLAB_CHECK_BUDGET_MS);
  });
  const about = await Promise.race([gitlab.about(), late])
    .catch((error: unknown) => {
      log.warn(
        { err: error, words: userMessage(error) },
        "could not check GitLab's version and the token's role; starting all the same",
      );
      return undefined;
    })
    .finally(() => {
      clearTimeout(timer);
    });
  if (about === undefined) return;
  const { fatal, warnings } = judgeGitlab(about, {
    url: config.gitlab.url,
    project: config.gitlab.project,
    ref: config.gitlab.ref,
    pipelineParams: config.gitlab.pipelineParams,
    sendsVariables: config.gitlab.sizingParams === "variables" || config.gitlab.requestIdVariable,
  });
  for (const warning of warnings) log.warn({ gitlabVersion: about.version }, warning);
  if (fatal.length > 0) throw new StartupError(fatal.join(" "));
  log.info({ gitlabVersion: about.version, accessLevel: about.accessLevel }, "GitLab checked");
}

/** PVE API tokens: `user@realm!tokenid=secret`. */
const PVE_TOKEN = /^[^@\s]+@[^!\s]+![^=\s]+=\S+$/;

/**
 * The Proxmox API token from Vault, checked for its shape before it is sent anywhere. `paths`
 * are tried in order while Vault has no such secret; the first found is kept. A token found
 * only at a later path (the older default, which holds the pipeline's provisioning token) is
 * used with a warning: vmbot only reads, and should get a read-only token.
 */
function proxmoxTokenFromVault(
  vault: Vault,
  mount: string,
  paths: readonly string[],
  log: Logger,
): SecretSource {
  const candidates = paths.map((path) => ({ path, source: vault.source(path, "api_token") }));
  const [preferred] = candidates;
  if (preferred === undefined) throw new StartupError("no Vault path for the Proxmox token");
  let chosen: (typeof candidates)[number] | undefined;
  /** Vault answers these for a secret that is not there, or that this role may not read. */
  const elsewhere = (error: unknown) =>
    error instanceof VmbotError &&
    (error.code === "vault_missing" || error.code === "vault_denied");
  const read = async (): Promise<string> => {
    if (chosen !== undefined) return chosen.source.get();
    let first: unknown;
    for (const candidate of candidates) {
      try {
        const token = await candidate.source.get();
        if (candidate !== preferred) {
          log.warn(
            `vmbot reads the Proxmox token at ${mount}/${candidate.path}, not at ${mount}/${preferred.path}: that secret usually holds the pipeline's provisioning token. Give vmbot a read-only (PVEAuditor) token at ${mount}/${preferred.path} (see the README).`,
          );
        }
        chosen = candidate;
        return token;
      } catch (error) {
        if (!elsewhere(error)) throw error;
        first ??= error;
      }
    }
    // Not found anywhere: the first path is where it belongs, so its answer says what to do.
    throw first;
  };
  return {
    async get() {
      const token = await read();
      if (!PVE_TOKEN.test(token)) {
        throw new VmbotError(
          "vault_missing",
          `The \`api_token\` in the Vault secret \`${mount}/${(chosen ?? preferred).path}\` does not look like a Proxmox API token (user@realm!tokenid=secret).`,
        );
      }
      return token;
    },
    refresh: (used) => (chosen ?? preferred).source.refresh(used),
  };
}

interface Platform {
  vault: Vault | undefined;
  gitlabToken: SecretSource;
  nodes: NodeDirectory | undefined;
}

/**
 * Vault first (a bot that cannot read its GitLab token cannot work), then the Proxmox client.
 * A Proxmox token that cannot be read now is not fatal: the form falls back to VM_NODES and
 * `/vm capacity` says why.
 */
async function connectPlatform(
  config: Config,
  options: StartOptions,
  log: Logger,
  redactor: Redactor,
): Promise<Platform> {
  let vault: Vault | undefined;
  let gitlabToken = fixedSecret(config.gitlab.token ?? "");
  if (config.vault) {
    const settings = config.vault;
    vault = createVault({
      addr: settings.addr,
      auth: settings.auth,
      kvMount: settings.kvMount,
      log: log.child({ component: "vault" }),
      redactor,
      ...(options.vaultTimeoutMs === undefined ? {} : { timeoutMs: options.vaultTimeoutMs }),
    });
    try {
      await vault.start();
      if (settings.gitlabPath !== undefined) {
        gitlabToken = vault.source(settings.gitlabPath, "token");
        await gitlabToken.get();
      }
    } catch (error) {
      if (settings.gitlabPath !== undefined) {
        vault.stop();
        throw new StartupError(`Vault: ${userMessage(error)}`, { cause: error });
      }
      // Vault holds only the Proxmox token: vmbot works without it, and keeps trying.
      log.warn(
        { err: error },
        "could not log in to Vault; the form offers VM_NODES and /vm capacity says why until it can",
      );
      vault.retryInBackground();
    }
  }
  if (config.proxmox.url === undefined) return { vault, gitlabToken, nodes: undefined };
  let proxmoxToken: SecretSource;
  if (config.proxmox.token !== undefined) {
    proxmoxToken = fixedSecret(config.proxmox.token);
  } else if (vault && config.vault) {
    proxmoxToken = proxmoxTokenFromVault(
      vault,
      config.vault.kvMount,
      config.vault.proxmoxPaths,
      log.child({ component: "vault" }),
    );
    await proxmoxToken.get().catch((error: unknown) => {
      log.warn(
        { err: error },
        "could not read the Proxmox API token from Vault; /vm capacity and the form's node list will say why until it can",
      );
    });
  } else {
    throw new StartupError("PROXMOX_URL needs PROXMOX_TOKEN or Vault");
  }
  try {
    const proxmox = createProxmox({
      url: config.proxmox.url,
      token: proxmoxToken,
      caFile: config.proxmox.caFile,
      insecure: config.proxmox.insecure,
      log: log.child({ component: "proxmox" }),
      ...(options.proxmoxTimeoutMs === undefined ? {} : { timeoutMs: options.proxmoxTimeoutMs }),
    });
    return {
      vault,
      gitlabToken,
      nodes: createNodeDirectory(
        proxmox,
        options.nodeListMaxAgeMs === undefined ? {} : { maxAgeMs: options.nodeListMaxAgeMs },
      ),
    };
  } catch (error) {
    vault?.stop();
    throw new StartupError(userMessage(error), { cause: error });
  }
}

/** Wires every part from a validated configuration and starts serving. */
export async function startVmbot(
  config: Config,
  options: StartOptions = {},
): Promise<RunningVmbot> {
  const redactor = createRedactor(configSecrets(config));
  const log = createLogger({
    level: config.logLevel,
    redactor,
    ...(options.logDestination ? { destination: options.logDestination } : {}),
  });
  // A policy file that does not pass stops the start, with every problem named.
  let policy: PolicySource;
  try {
    policy = createPolicySource({
      path: config.policyPath,
      lists: config.access,
      log: log.child({ component: "policy" }),
    });
  } catch (error) {
    throw new StartupError((error as Error).message, { cause: error });
  }
  // The store first: a second bot on the same store, or a damaged one, stops here, before
  // anything is asked of Vault, Slack or GitLab.
  let store: Store;
  try {
    store = openSqliteStore(config.dbPath);
  } catch (error) {
    throw new StartupError(
      error instanceof StoreOwnedError
        ? error.message
        : `the store at VMBOT_DB (${config.dbPath}) cannot be opened: ${(error as Error).message}`,
      { cause: error },
    );
  }
  let platform: Platform;
  try {
    platform = await connectPlatform(config, options, log, redactor);
  } catch (error) {
    store.close();
    policy.stop();
    throw error;
  }
  const gitlab = createGitlab({
    url: config.gitlab.url,
    token: platform.gitlabToken,
    project: config.gitlab.project,
    ref: config.gitlab.ref,
    pipelineParams: config.gitlab.pipelineParams,
    tagRequests: config.gitlab.requestIdVariable,
    ...(options.gitlabTimeoutMs === undefined ? {} : { timeoutMs: options.gitlabTimeoutMs }),
  });
  try {
    await checkGitlab(gitlab, config, log);
  } catch (error) {
    store.close();
    policy.stop();
    platform.vault?.stop();
    throw error;
  }
  const effects = createEffects({
    store,
    ...(options.onCrashPoint === undefined ? {} : { onCrashPoint: options.onCrashPoint }),
  });
  const vmbot = createApp({
    config,
    log,
    store,
    gitlab,
    effects,
    nodes: platform.nodes,
    redact: redactor,
    policy,
  });
  const tracker = createTracker({
    config,
    store,
    gitlab,
    client: vmbot.app.client,
    log: log.child({ component: "tracker" }),
    redact: redactor,
    effects,
    starter: vmbot.starter,
    nodes: platform.nodes,
  });

  const inventory = createInventoryCheck({
    store,
    gitlab,
    log: log.child({ component: "inventory" }),
    sharedState: config.tfStateName,
    intervalMs: INVENTORY_CHECK_MS,
    firstMs: FIRST_INVENTORY_CHECK_MS,
  });

  const slack = { connected: false, reason: "connecting to Slack" };
  let stopping = false;
  const health = (): Health => {
    const refused = policy.refused();
    if (refused !== undefined) return { ...healthNow(), policy: policyRefusedNote(refused) };
    return healthNow();
  };
  const healthNow = (): Health => {
    if (stopping) return { ok: false, reason: "shutting down" };
    if (!store.isOpen()) return { ok: false, reason: "the store is closed" };
    const writable = store.writable();
    if (!writable.ok) return { ok: false, reason: writable.reason };
    if (!slack.connected) return { ok: false, reason: slack.reason };
    return { ok: true };
  };

  let retryTimer: NodeJS.Timeout | undefined;
  // One attempt per check, so start-up is never held up by the client's retries.
  const probe = new webApi.WebClient(config.slack.botToken, {
    ...slackClientOptions(config, redactor),
    retryConfig: { retries: 0 },
    timeout: 5_000,
    logger: boltLogger(log),
  });
  const verify = async (): Promise<void> => {
    try {
      const auth = await probe.auth.test();
      if (!vmbot.socket) slack.connected = true;
      log.info({ team: auth.team, botUser: auth.user_id }, "Slack accepted the bot token");
    } catch (error) {
      const code = (error as { data?: { error?: string } }).data?.error;
      if (code !== undefined && FATAL_AUTH_ERRORS.has(code)) {
        throw new StartupError(
          `Slack refused SLACK_BOT_TOKEN (${code}): reinstall the app and copy its Bot User OAuth Token.`,
        );
      }
      slack.connected = false;
      slack.reason = `Slack is not reachable (${code ?? (error as Error).message}); retrying`;
      log.warn({ err: error }, "could not reach Slack; retrying in 30 seconds");
      retryTimer = setTimeout(() => void verify().catch(() => undefined), 30_000);
      retryTimer.unref();
    }
  };

  const gitlabWebhook =
    config.gitlab.webhookSecret === undefined
      ? undefined
      : createWebhookHandler({
          secret: config.gitlab.webhookSecret,
          wake: (pipelineId) => {
            tracker.wake(pipelineId);
          },
          log: log.child({ component: "webhook" }),
        });
  const limits = { ...DEFAULT_LIMITS, ...options.httpLimits };
  const bolt = vmbot.slackEvents;
  const slackEvents =
    bolt === undefined
      ? undefined
      : createSlackEventsHandler({
          signingSecret: config.slack.signingSecret ?? "",
          bolt,
          log: log.child({ component: "http" }),
          maxBodyBytes: limits.maxBodyBytes,
        });
  const server = createHttpServer(
    { slackEvents, gitlabWebhook, health },
    log.child({ component: "http" }),
    limits,
  );
  try {
    await verify();
    if (vmbot.socket) {
      vmbot.socket.client.on("connected", () => {
        slack.connected = true;
      });
      vmbot.socket.client.on("disconnected", () => {
        slack.connected = false;
        slack.reason = "Socket Mode is disconnected from Slack";
      });
      try {
        await vmbot.app.start();
      } catch (error) {
        throw new StartupError(
          `Socket Mode could not connect (${(error as { data?: { error?: string } }).data?.error ?? (error as Error).message}): check SLACK_APP_TOKEN, an app-level token with connections:write.`,
          { cause: error },
        );
      }
    }
    await new Promise<void>((resolve, reject) => {
      server.once("error", (error: NodeJS.ErrnoException) => {
        reject(
          new StartupError(
            error.code === "EADDRINUSE"
              ? `port ${config.port} is already in use: stop what uses it or set PORT to another port.`
              : `the HTTP server cannot listen on port ${config.port}: ${error.message}`,
            { cause: error },
          ),
        );
      });
      server.listen(config.port, options.host, () => {
        server.removeAllListeners("error");
        resolve();
      });
    });
  } catch (error) {
    clearTimeout(retryTimer);
    if (vmbot.socket) await vmbot.app.stop().catch(() => undefined);
    platform.vault?.stop();
    store.close();
    policy.stop();
    throw error;
  }

  const port = (server.address() as AddressInfo).port;
  tracker.start();
  inventory.start();
  // Unlocks a crash interrupted: finished (or found done) once, in the background.
  const resumed = resumeUnlocks({
    store,
    gitlab,
    effects,
    client: vmbot.app.client,
    log: log.child({ component: "unlock" }),
  }).catch((error: unknown) => {
    log.warn({ err: error }, "could not resume interrupted unlocks");
  });
  log.info({ port, mode: vmbot.socket ? "socket" : "http", db: config.dbPath }, "vmbot is running");

  return {
    port,
    log,
    health,
    store,
    tracker,
    inventory,
    async stop(graceMs = 8_000) {
      if (stopping) return;
      stopping = true;
      clearTimeout(retryTimer);
      log.info("stopping: finishing in-flight work");
      await tracker.stop();
      await inventory.stop();
      await resumed;
      // No new events: Socket Mode disconnects, and the HTTP server stops accepting below.
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
      platform.vault?.stop();
      policy.stop();
      store.close();
      log.info("stopped");
      log.flush();
    },
  };
}
