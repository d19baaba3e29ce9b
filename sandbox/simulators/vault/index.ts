/**
 * An in-memory HashiCorp Vault that speaks the v1 HTTP API on the wire, for the real `node-vault`
 * client: KV version 2 secrets, the token auth method (lookup-self, renew-self, revoke-self), the
 * AppRole and Kubernetes login methods, `sys/health` and `sys/seal-status`.
 *
 * Time is the fake's own: it starts at `options.now` (default: the real time) and moves only when
 * `advance(seconds)` is called. Token TTLs, renewals, `expire_time`s and secret timestamps all read
 * that clock, so a test can walk a token through its whole life without waiting.
 *
 * Driving it:
 * - `writeSecret` writes a new version of a secret (version 1, 2, …), as `vault kv put` does;
 *   `deleteSecret` soft-deletes the latest version (`vault kv delete`), `destroySecretVersions`
 *   destroys versions for good (`vault kv destroy`), and `deleteSecretMetadata` removes the key
 *   with all its versions (`vault kv metadata delete`).
 * - `issueToken` creates a token as `vault token create` run by root does; `revokeToken` revokes
 *   one. `token(id)` shows what the fake knows of a token (TTL left, renewals, …).
 * - `denyPath` takes a path away from one token or from all of them, as a policy without that
 *   path would; the root token is never denied, as in Vault.
 * - `refuseRenewal` makes `renew-self` fail, either as a policy without `auth/token/renew-self`
 *   (403) or as a token whose lease is not renewable (400), so the client has to log in again.
 * - `seal`/`unseal` and `setNodeState` change what `sys/health` reports and, while sealed, make
 *   every other request fail with 503.
 * - `failNext` injects an HTTP status, a delay, a request that never gets an answer, or a dropped
 *   connection; `requests`, `requestsTo`, `mark` and `requestsSince` show what the client sent.
 *
 * Behaviour and bodies follow Vault's API documentation and its code (vault 1.20, the KV, AppRole
 * and Kubernetes plugins):
 * - every answer with a body is the `logical.HTTPResponse` envelope: `request_id`, `lease_id`,
 *   `renewable`, `lease_duration`, `data`, `wrap_info`, `warnings`, `auth`, `mount_type`; maps
 *   inside `data` have their keys sorted, as Go encodes them;
 * - errors are `{"errors":[…]}`: a missing KV secret or version is 404 `{"errors":[]}`; a
 *   soft-deleted or destroyed version is 404 with the envelope and its metadata (`data.data` null);
 * - no token → 403 `permission denied`; an unknown, revoked or expired token → 403
 *   `2 errors occurred: permission denied, invalid token` (multierror text); a token whose policy
 *   lacks the path → 403 `1 error occurred: permission denied`;
 * - AppRole with a wrong role_id or secret_id → 400 `invalid role or secret ID`; Kubernetes with
 *   an unknown role → 400 `invalid role name "…"`, with a JWT the TokenReview rejects → 403
 *   `permission denied`;
 * - token TTLs follow `framework.CalculateTTL`: a login gets the role's `token_ttl` (else the
 *   mount's default), renewal gets the increment (else the role's TTL), both capped at the issue
 *   time plus the effective max TTL with the warning `TTL of "1h0m0s" exceeded the effective
 *   max_ttl of "10m0s"; TTL value is capped accordingly`;
 * - sealed → 503 `Vault is sealed` on everything but `sys/health` (503 with its body) and
 *   `sys/seal-status` (200);
 * - a path with `//` is answered with a 301 to the cleaned path, as Go's `http.ServeMux` does.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { STATUS_CODES, type ServerResponse } from "node:http";
import { FaultQueue, requestMatches, RequestLog, Waits } from "../faults.js";
import { sendJson, startFakeServer, type RecordedRequest } from "../http.js";

// ---------------------------------------------------------------------------------------------
// Public types

export interface FakeVaultOptions {
  /** Where the fake's clock starts. Default: the real time now. */
  now?: Date;
  /** KV version 2 mounts. Default `["secret"]`. */
  kvMounts?: string[];
  /** Secrets present from the start, each as its version 1. */
  secrets?: SecretSeed[];
  /** A root token: policy `root`, no TTL, and no `denyPath` applies to it. */
  rootToken?: string;
  /** Other tokens present from the start, e.g. the `VAULT_TOKEN` a deployment is given. */
  tokens?: TokenSeed[];
  /**
   * The mounts' `default_lease_ttl` in seconds: the TTL of a login token whose role sets no
   * `token_ttl`, and of a renewal without an increment. Default 768h, as Vault's.
   */
  defaultTtl?: number;
  /** The mounts' `max_lease_ttl` in seconds: no token outlives its issue time plus this. Default 768h. */
  maxTtl?: number;
  /** An AppRole role that can log in. Absent: the AppRole method is not enabled. */
  appRole?: AppRoleOptions;
  /** A Kubernetes auth role that can log in. Absent: the Kubernetes method is not enabled. */
  kubernetes?: KubernetesRoleOptions;
  /** Shown by `sys/health` and `sys/seal-status`. Default `1.20.4`. */
  version?: string;
  /** Default `vault-cluster-` and 8 hex digits. */
  clusterName?: string;
}

export interface SecretSeed {
  /** Default: the first KV mount. */
  mount?: string;
  path: string;
  data: Record<string, unknown>;
  customMetadata?: Record<string, string>;
}

export interface TokenSeed {
  id: string;
  /** `default` is added, as Vault does. Default: none besides `default`. */
  policies?: string[];
  /** Seconds. Default: the mounts' default TTL. */
  ttl?: number;
  /** Default true. */
  renewable?: boolean;
  metadata?: Record<string, string>;
  /** Default `token`. */
  displayName?: string;
}

export interface AppRoleOptions {
  /** Where the method is mounted under `auth/`. Default `approle`. */
  mount?: string;
  /** Default `vmbot`. */
  roleName?: string;
  roleId: string;
  secretId: string;
  /** The role's `token_policies`; `default` is added. */
  policies?: string[];
  /** The role's `token_ttl` in seconds. 0 or absent: the mounts' default TTL. */
  tokenTtl?: number;
  /** The role's `token_max_ttl` in seconds. 0 or absent: the mounts' max TTL. */
  tokenMaxTtl?: number;
}

export interface KubernetesRoleOptions {
  /** Where the method is mounted under `auth/`. Default `kubernetes`. */
  mount?: string;
  role: string;
  /** The only service account JWT the TokenReview accepts. */
  jwt: string;
  /** Default `vmbot`. */
  serviceAccountName?: string;
  /** Default `default`. */
  serviceAccountNamespace?: string;
  /** Default: a random UUID. */
  serviceAccountUid?: string;
  policies?: string[];
  tokenTtl?: number;
  tokenMaxTtl?: number;
}

/** A version of a secret, as `writeSecret` made it. */
export interface SecretVersionInfo {
  version: number;
  createdTime: string;
}

/** A secret key and its versions, for assertions. */
export interface FakeSecret {
  mount: string;
  path: string;
  currentVersion: number;
  customMetadata: Readonly<Record<string, string>> | null;
  versions: readonly {
    version: number;
    data: Readonly<Record<string, unknown>>;
    createdTime: string;
    deletionTime: string;
    destroyed: boolean;
  }[];
}

export interface IssueTokenOptions {
  /** Default: a random `hvs.` token. */
  id?: string;
  policies?: string[];
  /** Seconds. Default: the mounts' default TTL. */
  ttl?: number;
  /** Default true. */
  renewable?: boolean;
  metadata?: Record<string, string>;
  displayName?: string;
}

/** What the fake knows of a token. */
export interface FakeTokenInfo {
  accessor: string;
  /** Sorted, `default` included (`root` for the root token). */
  policies: readonly string[];
  /** `auth/approle/login`, `auth/kubernetes/login`, `auth/token/create` or `auth/token/root`. */
  path: string;
  displayName: string;
  metadata: Readonly<Record<string, string>> | null;
  issueTime: Date;
  /** Null for a token without TTL (root). */
  expireTime: Date | null;
  /** Seconds left, as `lookup-self` reports it; 0 for a token without TTL. */
  ttl: number;
  renewable: boolean;
  renewals: number;
  revoked: boolean;
  expired: boolean;
}

/**
 * - `permission-denied`: the token's policy does not grant `auth/token/renew-self` → 403
 *   `1 error occurred: permission denied`.
 * - `not-renewable`: tokens are not renewable → 400 `lease is not renewable`, and `lookup-self`
 *   shows `renewable: false`.
 */
export type RenewalRefusal = "permission-denied" | "not-renewable";

/** What `sys/health` reports besides sealed: the node's place in its cluster. */
export type NodeState =
  "active" | "standby" | "performance-standby" | "dr-secondary" | "uninitialized";

/** Which requests a failure applies to: `path` is matched against the raw path, `/v1/…`. */
export interface FailureMatch {
  method?: string;
  path: RegExp;
}

/**
 * - `{ status }`: answer with that status and Vault's `{"errors":[…]}` body for it (or `body`).
 * - `{ delayMs }`: answer normally after the delay.
 * - `"hang"`: never answer; the connection is dropped when the fake closes.
 * - `"reset"`: drop the connection without answering.
 */
export type InjectedFailure =
  { status: number; body?: unknown } | { delayMs: number } | "hang" | "reset";

export interface FakeVault {
  /** Vault's address, e.g. `http://127.0.0.1:40123` (node-vault's `endpoint`). */
  readonly url: string;
  /** Every request received, in order, including failed ones. */
  readonly requests: readonly RecordedRequest[];
  requestsTo(method: string, pathPattern: RegExp): RecordedRequest[];
  /** A mark for `requestsSince`: the number of requests received so far. */
  mark(): number;
  requestsSince(mark: number): RecordedRequest[];

  /** The fake's clock. */
  now(): Date;
  /** Moves the clock forward. */
  advance(seconds: number): void;

  /** Writes a new version of a secret (rotation), as `vault kv put` does. */
  writeSecret(
    path: string,
    data: Record<string, unknown>,
    options?: { mount?: string; customMetadata?: Record<string, string> },
  ): SecretVersionInfo;
  /** Soft-deletes the latest version, as `vault kv delete` does: reads answer 404 with its metadata. */
  deleteSecret(path: string, options?: { mount?: string }): void;
  /** Destroys versions, as `vault kv destroy` does: reads of them answer 404 with `destroyed: true`. */
  destroySecretVersions(path: string, versions: number[], options?: { mount?: string }): void;
  /** Removes the key, all its versions and its metadata, as `vault kv metadata delete` does. */
  deleteSecretMetadata(path: string, options?: { mount?: string }): void;
  secret(path: string, options?: { mount?: string }): FakeSecret | undefined;

  /** Creates a token as root running `vault token create` would, and returns its ID. */
  issueToken(options?: IssueTokenOptions): string;
  token(id: string): FakeTokenInfo | undefined;
  revokeToken(id: string): void;

  /**
   * Takes an API path (relative to `/v1/`, e.g. `secret/data/proxmox`; a trailing `*` matches a
   * prefix, as in a policy) away from one token, or from every token but root.
   */
  denyPath(path: string, options?: { token?: string }): void;
  /** Undoes a `denyPath` with the same arguments. */
  allowPath(path: string, options?: { token?: string }): void;

  /** Makes `renew-self` fail (default `permission-denied`) until `allowRenewal`. */
  refuseRenewal(how?: RenewalRefusal): void;
  allowRenewal(): void;

  seal(): void;
  unseal(): void;
  readonly sealed: boolean;
  setNodeState(state: NodeState): void;

  /** Changes the AppRole role (e.g. a new secret ID); null disables the method. */
  configureAppRole(role: AppRoleOptions | null): void;
  /** Changes the Kubernetes role; null disables the method. */
  configureKubernetes(role: KubernetesRoleOptions | null): void;

  /** Queues a failure for the next `times` (default 1) matching requests. */
  failNext(match: FailureMatch, failure: InjectedFailure, options?: { times?: number }): void;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Defaults and Vault's texts

const HOURS_768 = 768 * 3600;
const DEFAULT_VERSION = "1.20.4";
/** KV v2 keeps 10 versions when neither the mount nor the key sets `max_versions`. */
const KV_MAX_VERSIONS = 10;

const PERMISSION_DENIED = "permission denied";
/** An unknown, revoked or expired token (multierror's text, as Vault sends it). */
const INVALID_TOKEN = "2 errors occurred:\n\t* permission denied\n\t* invalid token\n\n";
/** A valid token whose policies do not grant the path. */
const POLICY_DENIED = "1 error occurred:\n\t* permission denied\n\n";
const SEALED = "Vault is sealed";

// ---------------------------------------------------------------------------------------------
// Small helpers

/** Base62, as Vault's token and accessor IDs are. */
function base62(length: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length)) {
      if (byte < 248 && out.length < length) out += alphabet.charAt(byte % 62);
    }
  }
  return out;
}

const newTokenId = (): string => `hvs.${base62(24)}`;
const newAccessor = (): string => base62(24);

/** Go's `time.Time` JSON form (RFC 3339 with nanoseconds, trailing zeros dropped), in UTC. */
function goTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2024-01-02T03:04:05.678Z
  const [seconds, fraction = ""] = iso.slice(0, -1).split(".");
  const trimmed = fraction.replace(/0+$/, "");
  return `${seconds ?? ""}${trimmed === "" ? "" : `.${trimmed}`}Z`;
}

/** Go's `time.Duration` String() for whole seconds: `0s`, `45s`, `10m0s`, `1h0m0s`. */
function goDuration(seconds: number): string {
  const total = Math.max(0, Math.trunc(seconds));
  if (total === 0) return "0s";
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/**
 * `parseutil.ParseDurationSecond`: a number of seconds, a numeric string, or a Go duration with
 * `d` allowed (`90s`, `30m`, `1h30m`, `2d`). Undefined for anything else.
 */
function parseDurationSeconds(raw: unknown): number | undefined {
  if (typeof raw === "number") return Number.isFinite(raw) ? Math.trunc(raw) : undefined;
  if (typeof raw !== "string") return undefined;
  const text = raw.trim();
  if (text === "") return 0;
  if (/^-?\d+$/.test(text)) return Number(text);
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
  let total = 0;
  let rest = text;
  while (rest !== "") {
    const part = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)/.exec(rest);
    if (!part) return undefined;
    total += Number(part[1]) * (units[part[2] ?? ""] ?? 0);
    rest = rest.slice(part[0].length);
  }
  return Math.trunc(total);
}

/** `policyutil.SanitizePolicies`: trimmed, unique, sorted, with `default` added. */
function sanitizePolicies(policies: readonly string[], addDefault: boolean): string[] {
  const set = new Set(policies.map((p) => p.trim()).filter((p) => p !== ""));
  if (addDefault && !set.has("root")) set.add("default");
  return [...set].sort();
}

/** Go encodes a `map[string]interface{}` with its keys sorted, at every depth. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return Object.fromEntries(entries.map(([k, v]) => [k, sortKeys(v)]));
  }
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Go's `path.Clean` for the request path, as `http.ServeMux` applies it before routing. */
function cleanPath(path: string): string {
  const out: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  const cleaned = `/${out.join("/")}`;
  return path.endsWith("/") && cleaned !== "/" ? `${cleaned}/` : cleaned;
}

// ---------------------------------------------------------------------------------------------
// Replies

interface Reply {
  status: number;
  /** Undefined: no body (204, HEAD, a redirect of a non-GET request). */
  body?: unknown;
  /** A plain-text or HTML body instead of JSON (set `content-type` in `headers`). */
  text?: string;
  headers?: Record<string, string>;
}

const errors = (status: number, ...messages: string[]): Reply => ({
  status,
  body: { errors: messages },
});

interface EnvelopeParts {
  data?: unknown;
  auth?: AuthBlock | null;
  warnings?: string[];
  mountType?: string;
}

/** `logical.HTTPResponse`, field for field. */
function envelope(parts: EnvelopeParts): Record<string, unknown> {
  return {
    request_id: randomUUID(),
    lease_id: "",
    renewable: false,
    lease_duration: 0,
    data: parts.data === undefined || parts.data === null ? null : sortKeys(parts.data),
    wrap_info: null,
    warnings: parts.warnings && parts.warnings.length > 0 ? parts.warnings : null,
    auth: parts.auth ?? null,
    mount_type: parts.mountType ?? "",
  };
}

const ok = (parts: EnvelopeParts): Reply => ({ status: 200, body: envelope(parts) });

/** `logical.HTTPAuth`, field for field (`identity_policies` is omitted when empty). */
interface AuthBlock {
  client_token: string;
  accessor: string;
  policies: string[];
  token_policies: string[];
  metadata: Record<string, string> | null;
  lease_duration: number;
  renewable: boolean;
  entity_id: string;
  token_type: "service";
  orphan: boolean;
  mfa_requirement: null;
  num_uses: number;
}

/** The body Vault sends for an injected status. */
function defaultFailureBody(status: number): unknown {
  switch (status) {
    case 400:
      return { errors: ["invalid request"] };
    case 403:
      return { errors: [PERMISSION_DENIED] };
    case 404:
      return { errors: [] };
    case 429:
      return { errors: ["rate limit quota exceeded"] };
    case 500:
      return { errors: ["internal error"] };
    case 503:
      return { errors: [SEALED] };
    default:
      return { errors: [STATUS_CODES[status] ?? `status ${status}`] };
  }
}

function write(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.writableEnded) return; // the client has gone
  const headers = { "cache-control": "no-store", ...reply.headers };
  if (reply.text !== undefined) {
    res.writeHead(reply.status, { ...headers, "content-length": Buffer.byteLength(reply.text) });
    res.end(reply.text);
    return;
  }
  if (reply.body === undefined) {
    res.writeHead(reply.status, headers);
    res.end();
    return;
  }
  sendJson(res, reply.status, reply.body, { "content-type": "application/json", ...headers });
}

// ---------------------------------------------------------------------------------------------
// The model

interface KvVersion {
  version: number;
  data: Record<string, unknown>;
  createdMs: number;
  deletionMs: number | null;
  destroyed: boolean;
}

interface KvKey {
  versions: Map<number, KvVersion>;
  current: number;
  customMetadata: Record<string, string> | null;
}

type TokenSource = "root" | "token" | "approle" | "kubernetes";

interface TokenEntry {
  id: string;
  accessor: string;
  policies: string[];
  path: string;
  meta: Record<string, string> | null;
  displayName: string;
  entityId: string;
  source: TokenSource;
  orphan: boolean;
  issueMs: number;
  /** The TTL given at creation, seconds (0: none). */
  creationTtl: number;
  /** Null: the token has no TTL (root). */
  expireMs: number | null;
  /** The backend's TTL for a renewal without increment; 0: the mounts' default. */
  backendTtl: number;
  /** The backend's max TTL; 0: the mounts' max. */
  backendMaxTtl: number;
  renewable: boolean;
  lastRenewalMs: number | null;
  renewals: number;
  revoked: boolean;
}

interface DenyRule {
  pattern: string;
  token: string | undefined;
}

class VaultModel {
  nowMs: number;
  readonly defaultTtl: number;
  readonly maxTtl: number;
  readonly version: string;
  readonly clusterName: string;
  readonly clusterId = randomUUID();
  readonly kv = new Map<string, Map<string, KvKey>>();
  readonly tokens = new Map<string, TokenEntry>();
  /** Identity entities, one per auth alias, as Vault creates them on first login. */
  readonly entities = new Map<string, string>();
  appRole: AppRoleOptions | null;
  kubernetes: (KubernetesRoleOptions & { serviceAccountUid: string }) | null = null;
  denyRules: DenyRule[] = [];
  renewalRefusal: RenewalRefusal | null = null;
  sealed = false;
  nodeState: NodeState = "active";

  constructor(options: FakeVaultOptions) {
    this.nowMs = options.now?.getTime() ?? Date.now();
    this.defaultTtl = options.defaultTtl ?? HOURS_768;
    this.maxTtl = options.maxTtl ?? HOURS_768;
    this.version = options.version ?? DEFAULT_VERSION;
    this.clusterName = options.clusterName ?? `vault-cluster-${randomBytes(4).toString("hex")}`;
    for (const mount of options.kvMounts ?? ["secret"]) this.kv.set(trimSlashes(mount), new Map());
    this.appRole = options.appRole ?? null;
    this.configureKubernetes(options.kubernetes ?? null);
    for (const seed of options.secrets ?? []) {
      this.writeSecret(this.mountOf(seed.mount), seed.path, seed.data, seed.customMetadata);
    }
    if (options.rootToken !== undefined) {
      this.addToken({
        id: options.rootToken,
        policies: ["root"],
        path: "auth/token/root",
        meta: null,
        displayName: "root",
        entityId: "",
        source: "root",
        orphan: true,
        ttl: 0,
        backendTtl: 0,
        backendMaxTtl: 0,
        renewable: false,
      });
    }
    for (const seed of options.tokens ?? []) {
      this.issueToken({ ...seed });
    }
  }

  configureKubernetes(role: KubernetesRoleOptions | null): void {
    this.kubernetes =
      role === null ? null : { ...role, serviceAccountUid: role.serviceAccountUid ?? randomUUID() };
  }

  mountOf(mount: string | undefined): string {
    if (mount !== undefined) return trimSlashes(mount);
    const first = this.kv.keys().next();
    if (first.done === true) throw new Error("the fake Vault has no KV mount");
    return first.value;
  }

  kvMount(mount: string): Map<string, KvKey> {
    const store = this.kv.get(mount);
    if (!store) throw new Error(`no KV mount ${mount} in the fake Vault`);
    return store;
  }

  // --- KV v2

  writeSecret(
    mount: string,
    path: string,
    data: Record<string, unknown>,
    customMetadata?: Record<string, string>,
  ): KvVersion {
    const store = this.kvMount(mount);
    const key = trimSlashes(path);
    let entry = store.get(key);
    if (!entry) {
      entry = { versions: new Map(), current: 0, customMetadata: null };
      store.set(key, entry);
    }
    if (customMetadata !== undefined) entry.customMetadata = { ...customMetadata };
    const version: KvVersion = {
      version: entry.current + 1,
      data: structuredClone(data),
      createdMs: this.nowMs,
      deletionMs: null,
      destroyed: false,
    };
    entry.current = version.version;
    entry.versions.set(version.version, version);
    // `cleanupOldVersions`: the oldest versions beyond max_versions are removed for good.
    for (const old of [...entry.versions.keys()].sort((a, b) => a - b)) {
      if (entry.versions.size <= KV_MAX_VERSIONS) break;
      entry.versions.delete(old);
    }
    return version;
  }

  /** `path_destroy.go`: the versions' data is gone for good; versions the key never had are skipped. */
  destroyVersions(mount: string, path: string, versions: number[]): void {
    const entry = this.kvMount(mount).get(trimSlashes(path));
    for (const number of versions) {
      const version = entry?.versions.get(number);
      if (!version) continue;
      version.destroyed = true;
      version.data = {};
    }
  }

  // --- Tokens

  addToken(spec: {
    id: string;
    policies: string[];
    path: string;
    meta: Record<string, string> | null;
    displayName: string;
    entityId: string;
    source: TokenSource;
    orphan: boolean;
    ttl: number;
    backendTtl: number;
    backendMaxTtl: number;
    renewable: boolean;
  }): TokenEntry {
    const entry: TokenEntry = {
      id: spec.id,
      accessor: newAccessor(),
      policies: spec.policies,
      path: spec.path,
      meta: spec.meta,
      displayName: spec.displayName,
      entityId: spec.entityId,
      source: spec.source,
      orphan: spec.orphan,
      issueMs: this.nowMs,
      creationTtl: spec.ttl,
      expireMs: spec.ttl > 0 ? this.nowMs + spec.ttl * 1000 : null,
      backendTtl: spec.backendTtl,
      backendMaxTtl: spec.backendMaxTtl,
      renewable: spec.renewable && spec.ttl > 0,
      lastRenewalMs: null,
      renewals: 0,
      revoked: false,
    };
    this.tokens.set(entry.id, entry);
    return entry;
  }

  issueToken(options: IssueTokenOptions): TokenEntry {
    const ttl = Math.min(options.ttl ?? this.defaultTtl, this.maxTtl);
    const displayName =
      options.displayName === undefined ? "token" : `token-${options.displayName}`;
    return this.addToken({
      id: options.id ?? newTokenId(),
      policies: sanitizePolicies(options.policies ?? [], true),
      path: "auth/token/create",
      meta: options.metadata ? { ...options.metadata } : null,
      displayName,
      entityId: "",
      source: "token",
      orphan: false,
      ttl,
      backendTtl: ttl,
      backendMaxTtl: 0,
      renewable: options.renewable ?? true,
    });
  }

  expired(entry: TokenEntry): boolean {
    return entry.expireMs !== null && this.nowMs >= entry.expireMs;
  }

  /** The token a request may use, or undefined when Vault would call it invalid. */
  liveToken(id: string): TokenEntry | undefined {
    const entry = this.tokens.get(id);
    if (!entry || entry.revoked || this.expired(entry)) return undefined;
    return entry;
  }

  /** `leaseEntry.ttl()`: whole seconds until expiry, against the clock rounded to the second. */
  ttlOf(entry: TokenEntry): number {
    if (entry.expireMs === null) return 0;
    const rounded = Math.round(this.nowMs / 1000) * 1000;
    return Math.max(0, Math.trunc((entry.expireMs - rounded) / 1000));
  }

  effectiveMaxTtl(backendMaxTtl: number): number {
    return backendMaxTtl > 0 && backendMaxTtl < this.maxTtl ? backendMaxTtl : this.maxTtl;
  }

  entityFor(alias: string): string {
    let id = this.entities.get(alias);
    if (id === undefined) {
      id = randomUUID();
      this.entities.set(alias, id);
    }
    return id;
  }

  denied(entry: TokenEntry, apiPath: string): boolean {
    if (entry.source === "root") return false;
    return this.denyRules.some(
      (rule) =>
        (rule.token === undefined || rule.token === entry.id) && pathMatches(rule.pattern, apiPath),
    );
  }
}

function trimSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, "");
}

/** A policy path: exact, or a prefix when it ends with `*`. */
function pathMatches(pattern: string, path: string): boolean {
  return pattern.endsWith("*") ? path.startsWith(pattern.slice(0, -1)) : path === pattern;
}

function authBlock(model: VaultModel, entry: TokenEntry, leaseDuration: number): AuthBlock {
  return {
    client_token: entry.id,
    accessor: entry.accessor,
    policies: [...entry.policies],
    token_policies: [...entry.policies],
    metadata: entry.meta ? { ...entry.meta } : null,
    lease_duration: leaseDuration,
    renewable: entry.renewable && model.renewalRefusal !== "not-renewable",
    entity_id: entry.entityId,
    token_type: "service",
    orphan: entry.orphan,
    mfa_requirement: null,
    num_uses: 0,
  };
}

// ---------------------------------------------------------------------------------------------
// Handlers

interface ParsedRequest {
  req: RecordedRequest;
  /** The JSON body; empty when there is none. */
  body: Record<string, unknown>;
}

function clientToken(req: RecordedRequest): string | undefined {
  const header = req.headers["x-vault-token"];
  const vaultToken = Array.isArray(header) ? header[0] : header;
  if (vaultToken !== undefined && vaultToken !== "") return vaultToken;
  const authorization = req.headers.authorization;
  if (authorization?.startsWith("Bearer ")) return authorization.slice("Bearer ".length).trim();
  return undefined;
}

function login(
  model: VaultModel,
  mountType: "approle" | "kubernetes",
  spec: {
    alias: string;
    policies: string[];
    meta: Record<string, string>;
    displayName: string;
    mount: string;
    tokenTtl: number;
    tokenMaxTtl: number;
  },
): Reply {
  // `LoginCreateToken` → `CalculateTTL(sysView, 0, auth.TTL, 0, auth.MaxTTL, 0, now)`.
  let ttl = spec.tokenTtl > 0 ? spec.tokenTtl : model.defaultTtl;
  const maxTtl = model.effectiveMaxTtl(spec.tokenMaxTtl);
  const warnings: string[] = [];
  if (ttl > maxTtl) {
    warnings.push(
      `TTL of "${goDuration(ttl)}" exceeded the effective max_ttl of "${goDuration(maxTtl)}"; TTL value is capped accordingly`,
    );
    ttl = maxTtl;
  }
  const entry = model.addToken({
    id: newTokenId(),
    policies: sanitizePolicies(spec.policies, true),
    path: `auth/${spec.mount}/login`,
    meta: spec.meta,
    displayName: spec.displayName,
    entityId: model.entityFor(`${mountType}:${spec.mount}:${spec.alias}`),
    source: mountType,
    orphan: true,
    ttl,
    backendTtl: spec.tokenTtl,
    backendMaxTtl: spec.tokenMaxTtl,
    renewable: true,
  });
  return ok({ auth: authBlock(model, entry, ttl), warnings });
}

/** `auth/approle/login` (builtin/credential/approle/path_login.go). */
function appRoleLogin(
  model: VaultModel,
  role: AppRoleOptions,
  body: Record<string, unknown>,
): Reply {
  const roleId = typeof body.role_id === "string" ? body.role_id.trim() : "";
  if (roleId === "") return errors(400, "missing role_id");
  if (roleId !== role.roleId) return errors(400, "invalid role or secret ID");
  const secretId = typeof body.secret_id === "string" ? body.secret_id.trim() : "";
  if (secretId === "") return errors(400, "missing secret_id");
  if (secretId !== role.secretId) return errors(400, "invalid role or secret ID");
  const mount = trimSlashes(role.mount ?? "approle");
  const roleName = role.roleName ?? "vmbot";
  return login(model, "approle", {
    alias: role.roleId,
    policies: role.policies ?? [],
    meta: { role_name: roleName },
    // The core prefixes the mount: AppRole sets no display name of its own.
    displayName: mount.replaceAll("/", "-"),
    mount,
    tokenTtl: role.tokenTtl ?? 0,
    tokenMaxTtl: role.tokenMaxTtl ?? 0,
  });
}

/** `auth/kubernetes/login` (vault-plugin-auth-kubernetes path_login.go). */
function kubernetesLogin(
  model: VaultModel,
  role: KubernetesRoleOptions & { serviceAccountUid: string },
  body: Record<string, unknown>,
): Reply {
  const roleName = typeof body.role === "string" ? body.role : "";
  if (roleName === "") return errors(400, "missing role");
  const jwt = typeof body.jwt === "string" ? body.jwt : "";
  if (jwt === "") return errors(400, "missing jwt");
  if (roleName !== role.role) return errors(400, `invalid role name "${roleName}"`);
  // A JWT the TokenReview API does not accept: `logical.ErrPermissionDenied`.
  if (jwt !== role.jwt) return errors(403, PERMISSION_DENIED);
  const mount = trimSlashes(role.mount ?? "kubernetes");
  const name = role.serviceAccountName ?? "vmbot";
  const namespace = role.serviceAccountNamespace ?? "default";
  return login(model, "kubernetes", {
    alias: role.serviceAccountUid,
    policies: role.policies ?? [],
    meta: {
      role: roleName,
      service_account_name: name,
      service_account_namespace: namespace,
      service_account_secret_name: "",
      service_account_uid: role.serviceAccountUid,
    },
    displayName: `${mount.replaceAll("/", "-")}-${namespace}-${name}`,
    mount,
    tokenTtl: role.tokenTtl ?? 0,
    tokenMaxTtl: role.tokenMaxTtl ?? 0,
  });
}

/** `auth/token/lookup-self` (vault/token_store.go `handleLookup`). */
function lookupSelf(model: VaultModel, entry: TokenEntry): Reply {
  const data: Record<string, unknown> = {
    id: entry.id,
    accessor: entry.accessor,
    policies: [...entry.policies],
    path: entry.path,
    meta: entry.meta ? { ...entry.meta } : null,
    display_name: entry.displayName,
    num_uses: 0,
    orphan: entry.orphan,
    creation_time: Math.floor(entry.issueMs / 1000),
    creation_ttl: entry.creationTtl,
    expire_time: null,
    ttl: 0,
    explicit_max_ttl: 0,
    entity_id: entry.entityId,
    type: "service",
  };
  // Root tokens have no lease: no renewable, issue_time or expire_time.
  if (entry.expireMs !== null) {
    if (entry.lastRenewalMs !== null) {
      data.last_renewal_time = Math.floor(entry.lastRenewalMs / 1000);
      data.last_renewal = goTime(entry.lastRenewalMs);
    }
    data.expire_time = goTime(entry.expireMs);
    data.ttl = model.ttlOf(entry);
    data.renewable = entry.renewable && model.renewalRefusal !== "not-renewable";
    data.issue_time = goTime(entry.issueMs);
  }
  return ok({ data, mountType: "token" });
}

/** `auth/token/renew-self`: `ExpirationManager.RenewToken` and `framework.CalculateTTL`. */
function renewSelf(model: VaultModel, entry: TokenEntry, body: Record<string, unknown>): Reply {
  let increment = 0;
  if (body.increment !== undefined) {
    const parsed = parseDurationSeconds(body.increment);
    if (parsed === undefined) {
      return errors(
        400,
        `error converting input ${JSON.stringify(body.increment)} for field "increment": time: invalid duration`,
      );
    }
    increment = parsed;
  }
  if (entry.expireMs === null) return errors(400, "lease not found");
  if (!entry.renewable || model.renewalRefusal === "not-renewable") {
    return errors(400, "lease is not renewable");
  }
  let ttl = increment > 0 ? increment : entry.backendTtl > 0 ? entry.backendTtl : model.defaultTtl;
  const maxTtl = model.effectiveMaxTtl(entry.backendMaxTtl);
  const nowSeconds = Math.floor(model.nowMs / 1000);
  const maxValidTtl = Math.floor(entry.issueMs / 1000) + maxTtl - nowSeconds;
  if (maxValidTtl < 0) return errors(500, "past the max TTL, cannot renew");
  const warnings: string[] = [];
  if (maxValidTtl < ttl) {
    warnings.push(
      `TTL of "${goDuration(ttl)}" exceeded the effective max_ttl of "${goDuration(maxValidTtl)}"; TTL value is capped accordingly`,
    );
    ttl = maxValidTtl;
  }
  entry.expireMs = model.nowMs + ttl * 1000;
  entry.lastRenewalMs = model.nowMs;
  entry.renewals += 1;
  // The token store's own renewals keep the TTL last granted.
  if (entry.source === "token") entry.backendTtl = ttl;
  return ok({ auth: authBlock(model, entry, ttl), warnings, mountType: "token" });
}

function kvMetadata(entry: KvKey, version: KvVersion): Record<string, unknown> {
  return {
    created_time: goTime(version.createdMs),
    custom_metadata: entry.customMetadata ? { ...entry.customMetadata } : null,
    deletion_time: version.deletionMs === null ? "" : goTime(version.deletionMs),
    destroyed: version.destroyed,
    version: version.version,
  };
}

/** `<mount>/data/<path>` and `<mount>/metadata/<path>` (vault-plugin-secrets-kv). */
function kvRequest(model: VaultModel, mount: string, rest: string, parsed: ParsedRequest): Reply {
  const store = model.kvMount(mount);
  const method = parsed.req.method;
  const [kind, ...segments] = rest.split("/");
  const key = segments.join("/");

  if (kind === "data" && key !== "") {
    if (method === "GET") {
      const entry = store.get(key);
      if (!entry) return errors(404);
      const requested = Number(parsed.req.query.get("version") ?? "0");
      const number = Number.isInteger(requested) && requested > 0 ? requested : entry.current;
      const version = entry.versions.get(number);
      if (!version) return errors(404);
      const metadata = kvMetadata(entry, version);
      if ((version.deletionMs !== null && version.deletionMs <= model.nowMs) || version.destroyed) {
        // `logical.RespondWithStatusCode(resp, req, 404)`: the envelope, before the router
        // sets the mount type.
        return { status: 404, body: envelope({ data: { data: null, metadata } }) };
      }
      return ok({ data: { data: version.data, metadata }, mountType: "kv" });
    }
    if (method === "POST" || method === "PUT") {
      if (!isRecord(parsed.body.data)) return errors(400, "no data provided");
      const entry = store.get(key);
      const options = isRecord(parsed.body.options) ? parsed.body.options : {};
      if (options.cas !== undefined && Number(options.cas) !== (entry?.current ?? 0)) {
        return errors(400, "check-and-set parameter did not match the current version");
      }
      const version = model.writeSecret(mount, key, parsed.body.data);
      const written = store.get(key);
      if (written === undefined) throw new Error(`the secret ${key} was not written`);
      return ok({ data: kvMetadata(written, version), mountType: "kv" });
    }
    if (method === "DELETE") {
      const entry = store.get(key);
      const version = entry?.versions.get(entry.current);
      if (version) version.deletionMs ??= model.nowMs;
      return { status: 204 };
    }
    return errors(405, "1 error occurred:\n\t* unsupported operation\n\n");
  }
  if (kind === "destroy" && key !== "" && (method === "POST" || method === "PUT")) {
    const versions = Array.isArray(parsed.body.versions) ? parsed.body.versions : [];
    if (versions.length === 0) return errors(400, "no version number provided");
    model.destroyVersions(mount, key, versions.map(Number));
    return { status: 204 };
  }
  if (kind === "metadata" && key !== "" && method === "DELETE") {
    store.delete(key);
    return { status: 204 };
  }
  return errors(404, "1 error occurred:\n\t* unsupported path\n\n");
}

function healthBody(model: VaultModel): Record<string, unknown> {
  const initialized = model.nodeState !== "uninitialized";
  const sealed = model.sealed || !initialized;
  const standby =
    sealed || model.nodeState === "standby" || model.nodeState === "performance-standby";
  const body: Record<string, unknown> = {
    initialized,
    sealed,
    standby,
    performance_standby: !sealed && model.nodeState === "performance-standby",
    replication_performance_mode: sealed ? "unknown" : "disabled",
    replication_dr_mode: sealed
      ? "unknown"
      : model.nodeState === "dr-secondary"
        ? "secondary"
        : "disabled",
    server_time_utc: Math.floor(model.nowMs / 1000),
    version: model.version,
    enterprise: false,
  };
  if (!sealed) {
    body.cluster_name = model.clusterName;
    body.cluster_id = model.clusterId;
  }
  body.echo_duration_ms = 0;
  body.clock_skew_ms = 0;
  body.replication_primary_canary_age_ms = 0;
  return body;
}

/** `sys/health` (http/sys_health.go): the status code comes from the state and the query. */
function health(model: VaultModel, req: RecordedRequest): Reply {
  if (req.method !== "GET" && req.method !== "HEAD") return { status: 405, body: { errors: [] } };
  const codes = {
    uninitcode: 501,
    sealedcode: 503,
    standbycode: 429,
    activecode: 200,
    drsecondarycode: 472,
    performancestandbycode: 473,
  };
  for (const field of Object.keys(codes) as (keyof typeof codes)[]) {
    const raw = req.query.get(field);
    if (raw === null) continue;
    if (!/^-?\d+$/.test(raw)) return { status: 400, body: { errors: [] } };
    codes[field] = Number(raw);
  }
  const flag = (name: string): boolean =>
    ["1", "t", "T", "true", "TRUE", "True"].includes(req.query.get(name) ?? "");
  const body = healthBody(model);
  let status = codes.activecode;
  if (model.nodeState === "uninitialized") status = codes.uninitcode;
  else if (model.sealed) status = codes.sealedcode;
  else if (model.nodeState === "dr-secondary") status = codes.drsecondarycode;
  else if (model.nodeState === "performance-standby") {
    if (!flag("perfstandbyok")) status = codes.performancestandbycode;
  } else if (model.nodeState === "standby") {
    if (!flag("standbyok")) status = codes.standbycode;
  }
  if (req.method === "HEAD") return { status, headers: { "content-type": "application/json" } };
  return { status, body };
}

/** `sys/seal-status`: unauthenticated, answered sealed or not. */
function sealStatus(model: VaultModel): Reply {
  const initialized = model.nodeState !== "uninitialized";
  const sealed = model.sealed || !initialized;
  const body: Record<string, unknown> = {
    type: "shamir",
    initialized,
    sealed,
    t: 1,
    n: 1,
    progress: 0,
    nonce: "",
    version: model.version,
    build_date: "2025-09-24T13:19:59Z",
    migration: false,
    recovery_seal: false,
    storage_type: "inmem",
  };
  if (!sealed) {
    body.cluster_name = model.clusterName;
    body.cluster_id = model.clusterId;
  }
  return { status: 200, body };
}

function dispatch(model: VaultModel, req: RecordedRequest): Reply {
  if (!req.path.startsWith("/v1/")) {
    // Outside the API: the ServeMux's own answer.
    return {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
      text: "404 page not found\n",
    };
  }
  // Go's ServeMux answers a path that is not clean (`//`, `.`, `..`) with a redirect to the
  // cleaned one, whatever the method, before Vault sees the request (`http.Redirect` writes a
  // small HTML body for GET only).
  const cleaned = cleanPath(req.path);
  if (cleaned !== req.path) {
    const query = req.query.toString();
    const location = query === "" ? cleaned : `${cleaned}?${query}`;
    if (req.method !== "GET") return { status: 301, headers: { location } };
    return {
      status: 301,
      headers: { location, "content-type": "text/html; charset=utf-8" },
      text: `<a href="${location}">Moved Permanently</a>.\n\n`,
    };
  }
  const apiPath = trimSlashes(req.path.slice("/v1/".length));

  if (apiPath === "sys/health") return health(model, req);
  if (apiPath === "sys/seal-status" && req.method === "GET") return sealStatus(model);
  if (model.sealed || model.nodeState === "uninitialized") return errors(503, SEALED);

  let body: Record<string, unknown> = {};
  if (req.body.trim() !== "") {
    let value: unknown;
    try {
      value = JSON.parse(req.body);
    } catch (error) {
      return errors(400, `failed to parse JSON input: ${(error as Error).message}`);
    }
    if (isRecord(value)) body = value;
  }

  // Login paths are unauthenticated. A method that is not enabled has no login path: the
  // request then needs a token like any other, and ends in "no handler for route".
  const isWrite = req.method === "POST" || req.method === "PUT";
  const { appRole, kubernetes } = model;
  if (appRole && isWrite && apiPath === `auth/${trimSlashes(appRole.mount ?? "approle")}/login`) {
    return appRoleLogin(model, appRole, body);
  }
  if (
    kubernetes &&
    isWrite &&
    apiPath === `auth/${trimSlashes(kubernetes.mount ?? "kubernetes")}/login`
  ) {
    return kubernetesLogin(model, kubernetes, body);
  }

  // Everything else needs a valid token whose policy grants the path.
  const token = clientToken(req);
  if (token === undefined) return errors(403, PERMISSION_DENIED);
  const entry = model.liveToken(token);
  if (!entry) return errors(403, INVALID_TOKEN);
  if (model.denied(entry, apiPath)) return errors(403, POLICY_DENIED);
  const parsed: ParsedRequest = { req, body };

  switch (apiPath) {
    case "auth/token/lookup-self":
      if (req.method === "GET" || isWrite) return lookupSelf(model, entry);
      break;
    case "auth/token/renew-self":
      if (isWrite) {
        if (model.renewalRefusal === "permission-denied") return errors(403, POLICY_DENIED);
        return renewSelf(model, entry, body);
      }
      break;
    case "auth/token/revoke-self":
      if (isWrite) {
        entry.revoked = true;
        return { status: 204 };
      }
      break;
    default:
      for (const mount of model.kv.keys()) {
        if (apiPath.startsWith(`${mount}/`)) {
          return kvRequest(model, mount, apiPath.slice(mount.length + 1), parsed);
        }
      }
      return errors(404, `no handler for route "${apiPath}". route entry not found.`);
  }
  return errors(405, "1 error occurred:\n\t* unsupported operation\n\n");
}

// ---------------------------------------------------------------------------------------------
// The server

export async function startFakeVault(options: FakeVaultOptions = {}): Promise<FakeVault> {
  const model = new VaultModel(options);
  const log = new RequestLog();
  const faults = new FaultQueue<FailureMatch, InjectedFailure>(requestMatches);
  const waits = new Waits();
  let closed = false;

  const server = await startFakeServer(async (req, res) => {
    log.record(req);
    const failure = faults.take(req);
    if (failure === "reset") {
      res.socket?.destroy();
      return;
    }
    if (failure === "hang") {
      await waits.forever();
      res.destroy();
      return;
    }
    if (failure !== undefined && "delayMs" in failure) {
      if (!(await waits.sleep(failure.delayMs))) {
        res.destroy();
        return;
      }
    } else if (failure !== undefined) {
      write(res, {
        status: failure.status,
        body: failure.body ?? defaultFailureBody(failure.status),
      });
      return;
    }
    write(res, dispatch(model, req));
  });

  const keyOf = (path: string, mount: string | undefined): { mount: string; key: string } => ({
    mount: model.mountOf(mount),
    key: trimSlashes(path),
  });

  return {
    url: server.url,
    requests: log.requests,
    requestsTo: (method, pathPattern) => log.to(pathPattern, method),
    mark: () => log.mark(),
    requestsSince: (mark) => log.since(mark),

    now: () => new Date(model.nowMs),
    advance: (seconds) => {
      if (!(seconds >= 0)) throw new Error(`cannot move the fake Vault's clock by ${seconds}s`);
      model.nowMs += Math.round(seconds * 1000);
    },

    writeSecret: (path, data, writeOptions) => {
      const version = model.writeSecret(
        model.mountOf(writeOptions?.mount),
        path,
        data,
        writeOptions?.customMetadata,
      );
      return { version: version.version, createdTime: goTime(version.createdMs) };
    },
    deleteSecret: (path, deleteOptions) => {
      const { mount, key } = keyOf(path, deleteOptions?.mount);
      const entry = model.kvMount(mount).get(key);
      const version = entry?.versions.get(entry.current);
      if (!version) throw new Error(`no secret ${mount}/${key} in the fake Vault`);
      version.deletionMs ??= model.nowMs;
    },
    destroySecretVersions: (path, versions, destroyOptions) => {
      const { mount, key } = keyOf(path, destroyOptions?.mount);
      model.destroyVersions(mount, key, versions);
    },
    deleteSecretMetadata: (path, deleteOptions) => {
      const { mount, key } = keyOf(path, deleteOptions?.mount);
      model.kvMount(mount).delete(key);
    },
    secret: (path, secretOptions) => {
      const { mount, key } = keyOf(path, secretOptions?.mount);
      const entry = model.kvMount(mount).get(key);
      if (!entry) return undefined;
      return {
        mount,
        path: key,
        currentVersion: entry.current,
        customMetadata: entry.customMetadata,
        versions: [...entry.versions.values()].map((v) => ({
          version: v.version,
          data: v.data,
          createdTime: goTime(v.createdMs),
          deletionTime: v.deletionMs === null ? "" : goTime(v.deletionMs),
          destroyed: v.destroyed,
        })),
      };
    },

    issueToken: (issueOptions) => model.issueToken(issueOptions ?? {}).id,
    token: (id) => {
      const entry = model.tokens.get(id);
      if (!entry) return undefined;
      return {
        accessor: entry.accessor,
        policies: entry.policies,
        path: entry.path,
        displayName: entry.displayName,
        metadata: entry.meta,
        issueTime: new Date(entry.issueMs),
        expireTime: entry.expireMs === null ? null : new Date(entry.expireMs),
        ttl: model.ttlOf(entry),
        renewable: entry.renewable && model.renewalRefusal !== "not-renewable",
        renewals: entry.renewals,
        revoked: entry.revoked,
        expired: model.expired(entry),
      };
    },
    revokeToken: (id) => {
      const entry = model.tokens.get(id);
      if (!entry) throw new Error("no such token in the fake Vault");
      entry.revoked = true;
    },

    denyPath: (path, denyOptions) => {
      model.denyRules.push({ pattern: trimSlashes(path), token: denyOptions?.token });
    },
    allowPath: (path, allowOptions) => {
      const pattern = trimSlashes(path);
      model.denyRules = model.denyRules.filter(
        (rule) => !(rule.pattern === pattern && rule.token === allowOptions?.token),
      );
    },

    refuseRenewal: (how = "permission-denied") => {
      model.renewalRefusal = how;
    },
    allowRenewal: () => {
      model.renewalRefusal = null;
    },

    seal: () => {
      model.sealed = true;
    },
    unseal: () => {
      model.sealed = false;
    },
    get sealed() {
      return model.sealed;
    },
    setNodeState: (state) => {
      model.nodeState = state;
    },

    configureAppRole: (role) => {
      model.appRole = role;
    },
    configureKubernetes: (role) => {
      model.configureKubernetes(role);
    },

    failNext: (match, failure, failOptions) => {
      faults.add(match, failure, failOptions?.times);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      waits.close();
      await server.close();
    },
  };
}
