/** The dispatch from a request to its handler, as Vault routes it. */
import { type RecordedRequest } from "../http.js";
import {
  appRoleLogin,
  clientToken,
  kubernetesLogin,
  lookupSelf,
  type ParsedRequest,
  renewSelf,
} from "./auth.js";
import {
  cleanPath,
  INVALID_TOKEN,
  isRecord,
  PERMISSION_DENIED,
  POLICY_DENIED,
  SEALED,
} from "./helpers.js";
import { kvRequest } from "./kv.js";
import { trimSlashes, VaultModel } from "./model.js";
import { errors, type Reply } from "./replies.js";
import { health, sealStatus } from "./sys.js";

export function dispatch(model: VaultModel, req: RecordedRequest): Reply {
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
