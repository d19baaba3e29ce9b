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

export { startFakeVault } from "./server.js";
export type * from "./types.js";
