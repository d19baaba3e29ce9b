/** Answers, shaped as pveproxy writes them: data, errors, and the status line's reason. */
import { type ServerResponse, STATUS_CODES } from "node:http";
import { gzipSync } from "node:zlib";
import { type RecordedRequest } from "../http.js";
import { type ProxmoxError, type RawAnswer } from "./types.js";

export interface Reply {
  status: number;
  /** The status line's reason. */
  reason: string;
  /** JSON body; undefined: no body (authentication failures). */
  body?: unknown;
  raw?: { text: string; contentType: string };
}

function firstLine(text: string): string {
  // Node refuses control characters in a reason phrase; pveproxy sends only the first line.
  return (text.split("\n")[0] ?? "").replace(/[^\t\x20-\x7e]/g, "?");
}

export function data(value: unknown): Reply {
  return { status: 200, reason: "OK", body: { data: value } };
}

export function apiError(
  status: number,
  message: string,
  errors?: Readonly<Record<string, string>>,
): Reply {
  return {
    status,
    reason: firstLine(message),
    body: { data: null, ...(errors === undefined ? {} : { errors }), message },
  };
}

export function unauthorized(message: string): Reply {
  return { status: 401, reason: firstLine(message) };
}

function defaultMessage(status: number, method: string, relPath: string): string {
  switch (status) {
    case 400:
      return "Parameter verification failed.\n";
    case 401:
      return "invalid token value!\n";
    case 403:
      return "Permission check failed (/, Sys.Audit)\n";
    case 500:
      return "ipcc_send_rec[1] failed: Connection refused\n";
    case 501:
      return `Method '${method} ${relPath}' not implemented`;
    default:
      return STATUS_CODES[status] ?? "Unknown";
  }
}

export function injected(error: ProxmoxError | RawAnswer, method: string, relPath: string): Reply {
  if ("body" in error) {
    return {
      status: error.status,
      reason: STATUS_CODES[error.status] ?? "Unknown",
      raw: { text: error.body, contentType: error.contentType ?? "text/html" },
    };
  }
  const message = error.message ?? defaultMessage(error.status, method, relPath);
  if (error.status === 401) return unauthorized(message);
  return apiError(error.status, message, error.errors);
}

export function write(req: RecordedRequest, res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.writableEnded) return; // the client has gone
  const now = new Date().toUTCString();
  const headers: Record<string, string | number> = {
    "cache-control": "max-age=0",
    expires: now,
    pragma: "no-cache",
    server: "pve-api-daemon/3.0",
  };
  // pveproxy ends keep-alive after every error.
  if (reply.status >= 400) headers.connection = "close";
  let content: Buffer | undefined;
  if (reply.raw !== undefined) {
    content = Buffer.from(reply.raw.text, "utf8");
    headers["content-type"] = reply.raw.contentType;
  } else if (reply.body !== undefined) {
    content = Buffer.from(JSON.stringify(reply.body), "utf8");
    headers["content-type"] = "application/json;charset=UTF-8";
  }
  const acceptEncoding = req.headers["accept-encoding"];
  if (content !== undefined && content.length > 1024 && acceptEncoding?.includes("gzip")) {
    content = gzipSync(content);
    headers["content-encoding"] = "gzip";
  }
  headers["content-length"] = content?.length ?? 0;
  res.writeHead(reply.status, reply.reason, headers);
  res.end(content);
}
