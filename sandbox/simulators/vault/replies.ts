/** Replies, shaped as Vault answers them: errors, the response envelope, auth blocks. */
import { randomUUID } from "node:crypto";
import { type ServerResponse, STATUS_CODES } from "node:http";
import { sendJson } from "../http.js";
import { PERMISSION_DENIED, SEALED, sortKeys } from "./helpers.js";

export interface Reply {
  status: number;
  /** Undefined: no body (204, HEAD, a redirect of a non-GET request). */
  body?: unknown;
  /** A plain-text or HTML body instead of JSON (set `content-type` in `headers`). */
  text?: string;
  headers?: Record<string, string>;
}

export const errors = (status: number, ...messages: string[]): Reply => ({
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
export function envelope(parts: EnvelopeParts): Record<string, unknown> {
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

export const ok = (parts: EnvelopeParts): Reply => ({ status: 200, body: envelope(parts) });

/** `logical.HTTPAuth`, field for field (`identity_policies` is omitted when empty). */
export interface AuthBlock {
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
export function defaultFailureBody(status: number): unknown {
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

export function write(res: ServerResponse, reply: Reply): void {
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
