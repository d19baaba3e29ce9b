/** The fake Vault's public types: its options, seeds, injected failures and drivers. */
import { type RecordedRequest } from "../http.js";

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
