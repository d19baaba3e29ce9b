import { readFile } from "node:fs/promises";
import nodeVault from "node-vault";
import type { VaultAuth } from "../config.js";
import type { Logger } from "../logger.js";
import type { Redactor } from "../redact.js";
import type { SecretSource } from "../secrets.js";
import { vaultError, type VaultCall } from "./errors.js";

/**
 * Vault through node-vault: one login (token, AppRole or Kubernetes), kept alive by node-vault's
 * own token renewal, and a fresh login whenever renewal is refused or the token reaches its
 * maximum TTL. KV v2 secrets are cached for a few minutes, and re-read at once when the system
 * they unlock refuses them.
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
  now?: () => number;
}

export interface Vault {
  /** Logs in (or checks VAULT_TOKEN) and starts keeping the token alive. */
  start(): Promise<void>;
  /** One key of a KV v2 secret, e.g. `secret("proxmox", "api_token")`. */
  secret(path: string, key: string): Promise<string>;
  /** A source for one key, for the clients that need it. */
  source(path: string, key: string): SecretSource;
  stop(): void;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_CACHE_MS = 5 * 60_000;
const RELOGIN_RETRY_MS = { min: 1_000, max: 60_000 };

interface AuthBlock {
  client_token?: unknown;
  lease_duration?: unknown;
  renewable?: unknown;
}

const seconds = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;

/** `team/proxmox` → `team/proxmox` with each segment URL-encoded. */
const encodePath = (path: string) =>
  path
    .split("/")
    .filter((segment) => segment !== "")
    .map(encodeURIComponent)
    .join("/");

export function createVault(options: VaultOptions): Vault {
  const { auth, log, redactor } = options;
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const cacheMs = options.cacheMs ?? DEFAULT_CACHE_MS;
  const client = nodeVault({
    apiVersion: "v1",
    endpoint: options.addr,
    requestOptions: { timeout: timeoutMs },
  });
  // node-vault falls back to the process's VAULT_TOKEN; vmbot uses only the login it was given.
  client.token = auth.method === "token" ? auth.token : "";

  const call = (doing: string, path?: string): VaultCall => ({
    addr: options.addr,
    doing,
    timeoutMs,
    ...(path === undefined ? {} : { path: `${options.kvMount}/${path}` }),
  });
  const canLogIn = auth.method !== "token";
  /** Seconds the current token was last granted, to notice when renewal stops extending it. */
  let grantedSeconds = 0;
  let stopped = false;
  let loggingIn: Promise<void> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryDelay = RELOGIN_RETRY_MS.min;

  function adopt(block: AuthBlock | undefined): void {
    const token = block?.client_token;
    if (typeof token === "string" && token !== "") redactor.add(token);
    grantedSeconds = seconds(block?.lease_duration);
    client.stopTokenRenewal();
    if (stopped || grantedSeconds === 0) return;
    if (block?.renewable === false) {
      // Not renewable: log in again before it runs out.
      if (canLogIn) scheduleRelogin(grantedSeconds * 800);
      return;
    }
    void client.startTokenRenewal({ ttl: grantedSeconds }).catch(() => undefined);
  }

  async function logIn(): Promise<void> {
    if (auth.method === "token") {
      const lookup = (await client.tokenLookupSelf()) as {
        data?: { ttl?: unknown; renewable?: unknown };
      };
      adopt({ lease_duration: lookup.data?.ttl, renewable: lookup.data?.renewable });
      return;
    }
    const response = (
      auth.method === "approle"
        ? await client.approleLogin({ role_id: auth.roleId, secret_id: auth.secretId })
        : await client.kubernetesLogin({
            // node-vault builds this path from the arguments alone: without it, /auth//login.
            mount_point: "kubernetes",
            role: auth.role,
            jwt: await serviceAccountToken(auth.jwtFile),
          })
    ) as { auth?: AuthBlock };
    adopt(response.auth);
    log.info({ method: auth.method, ttlSeconds: grantedSeconds }, "logged in to Vault");
  }

  /** One login at a time; callers that arrive meanwhile share it. */
  function relogin(): Promise<void> {
    loggingIn ??= logIn()
      .then(() => {
        retryDelay = RELOGIN_RETRY_MS.min;
      })
      .finally(() => {
        loggingIn = undefined;
      });
    return loggingIn;
  }

  function scheduleRelogin(delayMs: number): void {
    clearTimeout(retryTimer);
    if (stopped) return;
    retryTimer = setTimeout(() => {
      relogin().catch((error: unknown) => {
        const failure = vaultError(error, call("log in again"));
        log.error({ err: failure, retryInMs: retryDelay }, "could not log in to Vault again");
        const wait = retryDelay;
        retryDelay = Math.min(RELOGIN_RETRY_MS.max, retryDelay * 2);
        scheduleRelogin(wait);
      });
    }, delayMs);
    retryTimer.unref();
  }

  client.on("token:renewed", (result: { auth?: AuthBlock }) => {
    const granted = seconds(result.auth?.lease_duration);
    log.debug({ ttlSeconds: granted }, "renewed the Vault token");
    // Renewal no longer extends the token (it reached its max TTL): a new login gives a fresh one.
    if (canLogIn && granted < grantedSeconds) {
      scheduleRelogin(0);
      return;
    }
    grantedSeconds = granted;
  });
  client.on("token:error:renew", (error: unknown) => {
    if (canLogIn) {
      log.info(
        { err: vaultError(error, call("renew its token")) },
        "Vault refused to renew the token; logging in again",
      );
      scheduleRelogin(0);
    } else {
      log.error(
        { err: vaultError(error, call("renew its token")) },
        "Vault refused to renew VAULT_TOKEN; reads will fail once it expires: give vmbot a new token or use AppRole",
      );
    }
  });
  client.on("token:expired", () => {
    if (canLogIn) scheduleRelogin(0);
    else log.warn("VAULT_TOKEN can no longer be renewed; it will expire");
  });

  const cache = new Map<string, { data: Record<string, unknown>; at: number }>();
  const reading = new Map<string, Promise<Record<string, unknown>>>();

  async function readOnce(path: string): Promise<Record<string, unknown>> {
    const response = (await client.read(
      `${encodePath(options.kvMount)}/data/${encodePath(path)}`,
    )) as {
      data?: { data?: unknown };
    };
    const data = response.data?.data;
    if (data === null || typeof data !== "object") {
      throw vaultError(new Error("not a KV version 2 secret"), call("read", path));
    }
    return data as Record<string, unknown>;
  }

  async function read(path: string): Promise<Record<string, unknown>> {
    let data: Record<string, unknown>;
    try {
      data = await readOnce(path);
    } catch (error) {
      const status = (error as { response?: { statusCode?: unknown } }).response?.statusCode;
      // An expired token reads as permission denied: a fresh login is worth one more try.
      if (status !== 403 || !canLogIn) throw vaultError(error, call("read", path));
      try {
        await relogin();
        data = await readOnce(path);
      } catch (again) {
        throw vaultError(again, call("read", path));
      }
    }
    for (const value of Object.values(data)) if (typeof value === "string") redactor.add(value);
    cache.set(path, { data, at: now() });
    return data;
  }

  async function secretData(path: string, fresh: boolean): Promise<Record<string, unknown>> {
    const cached = cache.get(path);
    if (!fresh && cached && now() - cached.at < cacheMs) return cached.data;
    let pending = reading.get(path);
    if (!pending) {
      pending = read(path).finally(() => reading.delete(path));
      reading.set(path, pending);
    }
    return pending;
  }

  async function secret(path: string, key: string, fresh = false): Promise<string> {
    const data = await secretData(path, fresh);
    const value = data[key];
    if (typeof value !== "string" || value === "") {
      throw vaultError(new Error(`missing key ${key}`), { ...call("read", path), key });
    }
    return value;
  }

  return {
    async start() {
      try {
        await relogin();
      } catch (error) {
        throw vaultError(error, call(auth.method === "token" ? "check VAULT_TOKEN" : "log in"));
      }
    },
    secret: (path, key) => secret(path, key),
    source(path, key) {
      return {
        get: () => secret(path, key),
        async refresh() {
          const before = cache.get(path)?.data[key];
          const after = await secret(path, key, true);
          return after !== before;
        },
      };
    },
    stop() {
      stopped = true;
      clearTimeout(retryTimer);
      client.stopTokenRenewal();
    },
  };
}

async function serviceAccountToken(file: string): Promise<string> {
  try {
    return (await readFile(file, "utf8")).trim();
  } catch (error) {
    throw new Error(
      `the Kubernetes service-account token cannot be read from ${file} (VAULT_K8S_TOKEN_FILE): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      { cause: error },
    );
  }
}
