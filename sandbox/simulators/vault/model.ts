/** The model: KV secrets and their versions, tokens, auth roles, seal and policy. */
import { randomBytes, randomUUID } from "node:crypto";
import {
  DEFAULT_VERSION,
  HOURS_768,
  KV_MAX_VERSIONS,
  newAccessor,
  newTokenId,
  sanitizePolicies,
} from "./helpers.js";
import { type AuthBlock } from "./replies.js";
import {
  type AppRoleOptions,
  type FakeVaultOptions,
  type IssueTokenOptions,
  type KubernetesRoleOptions,
  type NodeState,
  type RenewalRefusal,
} from "./types.js";

export interface KvVersion {
  version: number;
  data: Record<string, unknown>;
  createdMs: number;
  deletionMs: number | null;
  destroyed: boolean;
}

export interface KvKey {
  versions: Map<number, KvVersion>;
  current: number;
  customMetadata: Record<string, string> | null;
}

type TokenSource = "root" | "token" | "approle" | "kubernetes";

export interface TokenEntry {
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

export class VaultModel {
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

export function trimSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, "");
}

/** A policy path: exact, or a prefix when it ends with `*`. */
function pathMatches(pattern: string, path: string): boolean {
  return pattern.endsWith("*") ? path.startsWith(pattern.slice(0, -1)) : path === pattern;
}

export function authBlock(model: VaultModel, entry: TokenEntry, leaseDuration: number): AuthBlock {
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
