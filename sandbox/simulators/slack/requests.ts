/** HTTP: parsing Web API requests (form, JSON, multipart) and failure outcomes. */
import { randomBytes } from "node:crypto";
import { type RecordedRequest } from "../http.js";
import { isObject, ObservableList, SlackApiError, stringArg } from "./support.js";
import { type JsonObject, type ResponseUrlPost, type SlackFailure } from "./types.js";

export const API_PREFIX = "/api/";
export const UPLOAD_PREFIX = "/upload/v1/";
export const RESPONSE_URL_PREFIX = "/commands/";
export const DEFAULT_TRIGGER_TTL_MS = 3000;

/** Fields @slack/web-api JSON-encodes inside a form body. */
const JSON_ENCODED_FIELDS = new Set([
  "attachments",
  "blocks",
  "files",
  "metadata",
  "profile",
  "unfurls",
  "user_auth_blocks",
  "view",
]);

export interface ApiRequest {
  method: string;
  args: JsonObject;
  token: string | undefined;
  /** A body Slack could not read, answered with this error. */
  bodyError?: string;
}

export function parseApiRequest(req: RecordedRequest): ApiRequest {
  const method = decodeURIComponent(req.path.slice(API_PREFIX.length));
  const contentType = mediaType(req.headers["content-type"]);
  const bearer = bearerToken(req.headers.authorization);
  const queryArgs = decodeForm(req.query);
  try {
    const bodyArgs = parseBody(req.body, contentType, req.headers["content-type"]);
    const args = { ...queryArgs, ...bodyArgs };
    const bodyToken = contentType === "application/json" ? undefined : stringArg(args, "token");
    delete args.token;
    return { method, args, token: bearer ?? bodyToken };
  } catch (error) {
    if (!(error instanceof SlackApiError)) throw error;
    return { method, args: queryArgs, token: bearer, bodyError: error.code };
  }
}

function parseBody(
  body: string,
  contentType: string,
  rawContentType: string | undefined,
): JsonObject {
  if (body === "") return {};
  switch (contentType) {
    case "application/x-www-form-urlencoded":
      return decodeForm(new URLSearchParams(body));
    case "application/json":
      return parseJsonBody(body);
    case "multipart/form-data":
      return parseMultipart(body, rawContentType ?? contentType);
    case "":
      throw new SlackApiError("missing_post_type");
    default:
      throw new SlackApiError("invalid_post_type");
  }
}

function parseJsonBody(body: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new SlackApiError("invalid_json");
  }
  if (!isObject(parsed)) throw new SlackApiError("invalid_json");
  return parsed;
}

function parseMultipart(body: string, contentType: string): JsonObject {
  const args: JsonObject = {};
  for (const part of multipartParts(body, contentType))
    args[part.name] = decodeField(part.name, part.value);
  return args;
}

interface MultipartPart {
  name: string;
  value: string;
}

/** Splits a multipart/form-data body into its named parts (text content only). */
export function multipartParts(body: string, contentType: string): MultipartPart[] {
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  if (boundary === undefined) throw new SlackApiError("invalid_form_data");
  return body
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((part) => {
      const separator = part.indexOf("\r\n\r\n");
      const head = part.slice(0, separator);
      const value = part.slice(separator + 4).replace(/\r\n$/, "");
      return { name: /name="([^"]*)"/.exec(head)?.[1] ?? "", value };
    });
}

function decodeForm(params: URLSearchParams): JsonObject {
  const args: JsonObject = {};
  for (const [name, value] of params) args[name] = decodeField(name, value);
  return args;
}

function decodeField(name: string, value: string): unknown {
  if (!JSON_ENCODED_FIELDS.has(name)) return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

export function mediaType(header: string | undefined): string {
  return (header ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)$/i.exec(header ?? "");
  return match?.[1];
}

export interface ApiOutcome {
  status: number;
  headers: Record<string, string>;
  body: JsonObject;
  /** The call was done and its answer is lost: the connection reset, or this status instead. */
  lost?: "reset" | number;
}

export function failureOutcome(
  failure: Exclude<SlackFailure, { afterEffect: unknown }>,
): ApiOutcome {
  if (typeof failure === "string")
    return { status: 200, headers: {}, body: { ok: false, error: failure } };
  const headers: Record<string, string> =
    failure.status === 429 ? { "retry-after": String(failure.retryAfter ?? 1) } : {};
  return {
    status: failure.status,
    headers,
    body: { ok: false, error: httpErrorCode(failure.status) },
  };
}

export function httpErrorCode(status: number): string {
  if (status === 429) return "ratelimited";
  if (status === 503) return "service_unavailable";
  return "fatal_error";
}

/** Failures queued by `failNext`, consumed one call at a time. */
/** response_urls handed out with slash commands and interactions, and what was posted to them. */
export class ResponseUrlInbox {
  readonly posts = new ObservableList<ResponseUrlPost>();
  private readonly issued = new Set<string>();
  private sequence = 0;

  constructor(private readonly teamId: string) {}

  issue(baseUrl: string): string {
    this.sequence += 1;
    const path = `${RESPONSE_URL_PREFIX}${this.teamId}/${String(this.sequence)}/${randomBytes(12).toString("hex")}`;
    this.issued.add(path);
    return `${baseUrl}${path}`;
  }

  receive(req: RecordedRequest, baseUrl: string): boolean {
    if (!this.issued.has(req.path)) return false;
    const contentType = mediaType(req.headers["content-type"]);
    const body =
      contentType === "application/json"
        ? parseJsonBody(req.body)
        : parseJsonBody(new URLSearchParams(req.body).get("payload") ?? "{}");
    this.posts.push({ url: `${baseUrl}${req.path}`, body, at: req.at });
    return true;
  }
}
