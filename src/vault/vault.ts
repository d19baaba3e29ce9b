import { readFile } from "node:fs/promises";
import nodeVault from "node-vault";
import { millisOf, systemClock, systemScheduler, type Clock, type Scheduler } from "../clock.js";
import type { VaultAuth } from "../config.js";
import { VmbotError, type VaultAsk } from "../errors.js";
import type { Logger } from "../logger.js";
import type { Redactor } from "../redact.js";
import { retrying, type Retryable } from "../retry.js";
import type { SecretSource } from "../secrets.js";
import { TokenFileUnreadable, vaultError, type VaultCall } from "./errors.js";
import {
  errorCodeOf,
  KvSecretSchema,
  LoginAnswerSchema,
  statusOf,
  TokenLookupSchema,
  type AuthBlock,
} from "./schemas.js";

/**
 * Vault through node-vault: one login (token, AppRole or Kubernetes) kept alive by renewing the
 * token at 80% of its life, and a fresh login when renewal is refused or the token reaches its
 * maximum TTL. KV v2 secrets are cached for a few minutes, re-read at once when the system they
 * unlock refuses them, and served from the cache for a while when Vault itself is down.
 */

export interface VaultOptions {
  addr: string;
  auth: VaultAuth;
  kvMount: string;
  log: Logger;
  /** Every secret read (and every Vault token issued) is added, so no log line can carry it. */
  redactor: Redactor;
  timeoutMs?: number;
  /** How long a secret read from KV is used before it is read again. */
  cacheMs?: number;
  /** What time it is, for the cache's ages; the machine's clock by default. */
  clock?: Clock;
  /** When renewals and retries run; the machine's timers by default. */
  scheduler?: Scheduler;
}

export interface Vault {
  /** Logs in (or checks VAULT_TOKEN) and starts keeping the token alive. */
  start(): Promise<void>;
  /** One key of a KV v2 secret, e.g. `secret("proxmox", "api_token")`. */
  secret(path: string, key: string): Promise<string>;
  /** A source for one key, for the clients that need it. */
  source(path: string, key: string): SecretSource;
  /** Keeps trying to log in, in the background, after a failed start. */
  retryInBackground(): void;
  stop(): void;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_CACHE_MS = 5 * 60_000;
/** How long a cached secret stands in for Vault while Vault is sealed or unreachable. */
const OUTAGE_GRACE_MS = 60 * 60_000;
const RETRY_MS = { min: 1_000, max: 60_000 };
/** Node timers cannot wait longer than 2^31-1 ms; a day is well inside, and renews early enough. */
const LONGEST_WAIT_MS = 24 * 3_600_000;

/** A read worth repeating: Vault's 500/502/504 or a dropped connection (not sealed, not a timeout). */
const retryableRead: Retryable = (error) => {
  const status = statusOf(error);
  if (status !== undefined) return [500, 502, 504].includes(status) ? {} : undefined;
  const code = errorCodeOf(error);
  return code === "ECONNRESET" || code === "EPIPE" || code === "ECONNREFUSED" ? {} : undefined;
};

/** Vault answered that the token or the login is not good (as opposed to being unreachable). */
const refused = (error: unknown) => [400, 401, 403].includes(statusOf(error) ?? 0);

/** `team/proxmox` → `team/proxmox` with each segment URL-encoded. */
const encodePath = (path: string) =>
  path
    .split("/")
    .filter((segment) => segment !== "")
    .map(encodeURIComponent)
    .join("/");

/** What one Vault login needs: the client, the way in, and the token's life so far. */
interface Session {
  options: VaultOptions;
  auth: VaultAuth;
  log: Logger;
  redactor: Redactor;
  client: nodeVault.client;
  now: () => number;
  scheduler: Scheduler;
  timeoutMs: number;
  cacheMs: number;
  canLogIn: boolean;
  /** Seconds the current token was last granted, to notice when renewal stops extending it. */
  grantedSeconds: number;
  stopped: boolean;
  loggingIn: Promise<void> | undefined;
  /** Cancels the renewal or retry waiting to run, if any. */
  cancelTimer: () => void;
  retryDelay: number;
  cache: Map<string, { data: Record<string, unknown>; at: number }>;
  reading: Map<string, Promise<Record<string, unknown>>>;
}

export function createVault(options: VaultOptions): Vault {
  const { auth, log, redactor } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const client = nodeVault({
    apiVersion: "v1",
    endpoint: options.addr,
    requestOptions: { timeout: timeoutMs },
    // node-vault's own debug output would print login bodies (secret IDs, JWTs).
    debug: () => undefined,
  });
  // node-vault falls back to the process's VAULT_TOKEN; vmbot uses only the login it was given.
  client.token = auth.method === "token" ? auth.token : "";
  const session: Session = {
    options,
    auth,
    log,
    redactor,
    client,
    now: millisOf(options.clock ?? systemClock),
    scheduler: options.scheduler ?? systemScheduler,
    timeoutMs,
    cacheMs: options.cacheMs ?? DEFAULT_CACHE_MS,
    canLogIn: auth.method !== "token",
    grantedSeconds: 0,
    stopped: false,
    loggingIn: undefined,
    cancelTimer: () => undefined,
    retryDelay: RETRY_MS.min,
    cache: new Map(),
    reading: new Map(),
  };

  return {
    async start() {
      try {
        await relogin(session);
      } catch (error) {
        throw vaultError(
          error,
          call(session, { what: auth.method === "token" ? "check_token" : "log_in" }),
        );
      }
    },
    secret: (path, key) => secret(session, path, key),
    source(path, key) {
      return {
        get: () => secret(session, path, key),
        async refresh(used) {
          return (await secret(session, path, key, true)) !== used;
        },
      };
    },
    retryInBackground() {
      backOff(session, () => relogInInBackground(session));
    },
    stop() {
      session.stopped = true;
      session.cancelTimer();
    },
  };
}

function call(session: Session, ask: VaultAsk): VaultCall {
  return { addr: session.options.addr, ask, timeoutMs: session.timeoutMs };
}

/** A read of the secret at `path` under the mount. */
function readOf(session: Session, path: string): VaultAsk {
  return { what: "read", path: `${session.options.kvMount}/${path}` };
}

function later(session: Session, delayMs: number, work: () => Promise<void>): void {
  session.cancelTimer();
  if (session.stopped) return;
  session.cancelTimer = session.scheduler.after(
    Math.min(Math.max(0, delayMs), LONGEST_WAIT_MS),
    () => {
      void work();
    },
  );
}

/** After a failure Vault may recover from: the same work again, a little later each time. */
function backOff(session: Session, work: () => Promise<void>): void {
  const wait = session.retryDelay;
  session.retryDelay = Math.min(RETRY_MS.max, session.retryDelay * 2);
  later(session, wait, work);
}

function adopt(session: Session, block: AuthBlock | null | undefined): void {
  const token = block?.client_token;
  if (token !== undefined && token !== "") session.redactor.add(token);
  session.grantedSeconds = block?.lease_duration ?? 0;
  session.retryDelay = RETRY_MS.min;
  const granted = session.grantedSeconds;
  if (granted === 0) return; // A token that never expires (root, or periodic 0).
  if (block?.renewable === false) {
    if (session.canLogIn) later(session, granted * 800, () => relogInInBackground(session));
    else session.log.warn({ ttlSeconds: granted }, "VAULT_TOKEN is not renewable; it will expire");
    return;
  }
  later(session, granted * 800, () => renew(session));
}

async function renew(session: Session): Promise<void> {
  const { log, canLogIn } = session;
  try {
    const result = LoginAnswerSchema.parse(await session.client.tokenRenewSelf());
    const granted = result.auth?.lease_duration ?? 0;
    log.debug({ ttlSeconds: granted }, "renewed the Vault token");
    // Renewal no longer extends the token (it reached its max TTL): a login gives a fresh one.
    if (canLogIn && granted < session.grantedSeconds) {
      await relogInInBackground(session);
      return;
    }
    adopt(
      session,
      result.auth === undefined || result.auth === null
        ? result.auth
        : { ...result.auth, client_token: undefined },
    );
  } catch (error) {
    const failure = vaultError(error, call(session, { what: "renew_token" }));
    if (refused(error) && canLogIn) {
      log.info({ err: failure }, "Vault refused to renew the token; logging in again");
      await relogInInBackground(session);
    } else if (refused(error)) {
      log.error(
        { err: failure },
        "Vault refused to renew VAULT_TOKEN; reads fail once it expires: give vmbot a new token or use AppRole",
      );
    } else {
      log.warn({ err: failure }, "could not renew the Vault token; trying again shortly");
      backOff(session, () => renew(session));
    }
  }
}

async function logIn(session: Session): Promise<void> {
  const { auth, client } = session;
  if (auth.method === "token") {
    const lookup = TokenLookupSchema.parse(await client.tokenLookupSelf());
    adopt(session, { lease_duration: lookup.data?.ttl ?? 0, renewable: lookup.data?.renewable });
    return;
  }
  let answer: unknown;
  if (auth.method === "approle") {
    answer = await client.approleLogin({ role_id: auth.roleId, secret_id: auth.secretId });
  } else {
    const jwt = await serviceAccountToken(auth.jwtFile);
    session.redactor.add(jwt);
    answer = await client.kubernetesLogin({
      // node-vault builds this path from the arguments alone: without it, /auth//login.
      mount_point: "kubernetes",
      role: auth.role,
      jwt,
    });
  }
  adopt(session, LoginAnswerSchema.parse(answer).auth);
  session.log.info(
    { method: auth.method, ttlSeconds: session.grantedSeconds },
    "logged in to Vault",
  );
}

/** One login at a time; callers that arrive meanwhile share it. */
function relogin(session: Session): Promise<void> {
  session.loggingIn ??= logIn(session).finally(() => {
    session.loggingIn = undefined;
  });
  return session.loggingIn;
}

async function relogInInBackground(session: Session): Promise<void> {
  try {
    await relogin(session);
  } catch (error) {
    session.log.error(
      {
        err: vaultError(error, call(session, { what: "log_in_again" })),
        retryInMs: session.retryDelay,
      },
      "could not log in to Vault; trying again",
    );
    backOff(session, () => relogInInBackground(session));
  }
}

/** Whether the bot's own token is still good: a 403 on a read may be a policy, not the token. */
async function tokenIsGood(session: Session): Promise<boolean> {
  try {
    await session.client.tokenLookupSelf();
    return true;
  } catch (error) {
    return !refused(error);
  }
}

async function readOnce(session: Session, path: string): Promise<Record<string, unknown>> {
  const { kvMount } = session.options;
  const response: unknown = await retrying(
    () => session.client.read(`${encodePath(kvMount)}/data/${encodePath(path)}`),
    retryableRead,
  );
  const parsed = KvSecretSchema.safeParse(response);
  if (!parsed.success) {
    throw new VmbotError({ code: "vault_failed", why: "not_kv2", path: `${kvMount}/${path}` });
  }
  return parsed.data.data.data;
}

async function read(session: Session, path: string): Promise<Record<string, unknown>> {
  let data: Record<string, unknown>;
  try {
    data = await readOnce(session, path);
  } catch (error) {
    // Permission denied is also what an expired token reads as: log in again only then.
    if (statusOf(error) !== 403 || !session.canLogIn || (await tokenIsGood(session))) {
      throw vaultError(error, call(session, readOf(session, path)));
    }
    try {
      await relogin(session);
      data = await readOnce(session, path);
    } catch (again) {
      throw vaultError(again, call(session, readOf(session, path)));
    }
  }
  session.cache.set(path, { data, at: session.now() });
  return data;
}

async function secretData(
  session: Session,
  path: string,
  fresh: boolean,
): Promise<Record<string, unknown>> {
  const { cache, reading, now } = session;
  const cached = cache.get(path);
  if (!fresh && cached && now() - cached.at < session.cacheMs) return cached.data;
  let pending = reading.get(path);
  if (!pending) {
    pending = read(session, path).finally(() => reading.delete(path));
    reading.set(path, pending);
  }
  try {
    return await pending;
  } catch (error) {
    // Vault sealed or unreachable: a secret read a little while ago still opens the door.
    const outage =
      error instanceof VmbotError &&
      ["vault_sealed", "vault_unreachable", "vault_timeout"].includes(error.code);
    if (!fresh && outage && cached && now() - cached.at < OUTAGE_GRACE_MS) {
      session.log.warn(
        { err: error, path },
        "Vault is not answering; using the secret read before",
      );
      return cached.data;
    }
    throw error;
  }
}

async function secret(session: Session, path: string, key: string, fresh = false): Promise<string> {
  const data = await secretData(session, path, fresh);
  const value = data[key];
  if (typeof value !== "string" || value === "") {
    throw vaultError(new Error(`missing key ${key}`), {
      ...call(session, readOf(session, path)),
      key,
    });
  }
  session.redactor.add(value);
  return value;
}

async function serviceAccountToken(file: string): Promise<string> {
  try {
    return (await readFile(file, "utf8")).trim();
  } catch (error) {
    throw new TokenFileUnreadable(
      file,
      (error as NodeJS.ErrnoException).code ?? (error as Error).message,
      { cause: error },
    );
  }
}
