/** Auth: token, AppRole and Kubernetes logins, token lookup and renewal. */
import { type RecordedRequest } from "../http.js";
import {
  goTime,
  newTokenId,
  parseDurationSeconds,
  PERMISSION_DENIED,
  sanitizePolicies,
  goDuration,
} from "./helpers.js";
import { authBlock, type TokenEntry, trimSlashes, VaultModel } from "./model.js";
import { errors, ok, type Reply } from "./replies.js";
import { type AppRoleOptions, type KubernetesRoleOptions } from "./types.js";

export interface ParsedRequest {
  req: RecordedRequest;
  /** The JSON body; empty when there is none. */
  body: Record<string, unknown>;
}

export function clientToken(req: RecordedRequest): string | undefined {
  const header = req.headers["x-vault-token"];
  const vaultToken = Array.isArray(header) ? header[0] : header;
  if (vaultToken !== undefined && vaultToken !== "") return vaultToken;
  const authorization = req.headers.authorization;
  if (authorization?.startsWith("Bearer ")) return authorization.slice("Bearer ".length).trim();
  return undefined;
}

export function login(
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
export function appRoleLogin(
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
export function kubernetesLogin(
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
export function lookupSelf(model: VaultModel, entry: TokenEntry): Reply {
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
export function renewSelf(
  model: VaultModel,
  entry: TokenEntry,
  body: Record<string, unknown>,
): Reply {
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
