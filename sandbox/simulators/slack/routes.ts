/** Routing: Web API calls, uploads and response_url posts. */
import { type ServerResponse } from "node:http";
import { FaultQueue } from "../faults.js";
import { type RecordedRequest, sendJson } from "../http.js";
import {
  API_PREFIX,
  type ApiOutcome,
  type ApiRequest,
  failureOutcome,
  httpErrorCode,
  mediaType,
  multipartParts,
  parseApiRequest,
  RESPONSE_URL_PREFIX,
  ResponseUrlInbox,
  UPLOAD_PREFIX,
} from "./requests.js";
import { ObservableList } from "./support.js";
import { type SlackCall, type SlackFailure } from "./types.js";
import { SlackWorkspace } from "./workspace.js";

export interface FakeSlackContext {
  workspace: SlackWorkspace;
  calls: ObservableList<SlackCall>;
  /** The token each recorded call was made with. */
  callers: WeakMap<SlackCall, string>;
  /** Failures queued for the next calls to a Web API method, one call each, in order. */
  failures: FaultQueue<string, SlackFailure, string>;
  responses: ResponseUrlInbox;
  baseUrl: () => string;
}

/** Serves one request; a fault in the fake itself answers 500 with its message. */
export function route(req: RecordedRequest, res: ServerResponse, ctx: FakeSlackContext): void {
  try {
    if (req.path.startsWith(API_PREFIX)) handleApiCall(req, res, ctx);
    else if (req.path.startsWith(UPLOAD_PREFIX)) handleUpload(req, res, ctx.workspace);
    else if (req.path.startsWith(RESPONSE_URL_PREFIX)) handleResponseUrl(req, res, ctx);
    else sendJson(res, 404, { ok: false, error: "not_found" });
  } catch (error) {
    sendJson(res, 500, { ok: false, error: "fake_slack_fault", detail: String(error) });
  }
}

function handleApiCall(req: RecordedRequest, res: ServerResponse, ctx: FakeSlackContext): void {
  const request = parseApiRequest(req);
  const outcome = answer(request, ctx);
  const error = typeof outcome.body.error === "string" ? outcome.body.error : undefined;
  const call: SlackCall = {
    method: request.method,
    args: request.args,
    at: req.at,
    ok: outcome.body.ok === true,
  };
  if (error !== undefined) call.error = error;
  if (request.token !== undefined) ctx.callers.set(call, request.token);
  ctx.calls.push(call);
  if (outcome.lost === "reset") res.socket?.destroy();
  else if (outcome.lost !== undefined) {
    sendJson(res, outcome.lost, { ok: false, error: httpErrorCode(outcome.lost) });
  } else sendJson(res, outcome.status, outcome.body, outcome.headers);
}

function answer(request: ApiRequest, ctx: FakeSlackContext): ApiOutcome {
  const failure = ctx.failures.take(request.method);
  const afterEffect = typeof failure === "object" && "afterEffect" in failure;
  if (failure !== undefined && !afterEffect) return failureOutcome(failure);
  if (request.bodyError !== undefined) {
    return { status: 200, headers: {}, body: { ok: false, error: request.bodyError } };
  }
  return {
    status: 200,
    headers: {},
    body: ctx.workspace.call(request.method, request.args, request.token),
    ...(afterEffect ? { lost: failure.afterEffect } : {}),
  };
}

/** The upload URL step of files.uploadV2: the client posts the bytes (multipart or raw). */
function handleUpload(req: RecordedRequest, res: ServerResponse, workspace: SlackWorkspace): void {
  const upload = workspace.upload(req.path.slice(UPLOAD_PREFIX.length));
  if (upload === undefined) {
    res.writeHead(404).end();
    return;
  }
  upload.content = uploadedContent(req);
  const text = `OK - ${String(Buffer.byteLength(upload.content))}`;
  res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end(text);
}

function uploadedContent(req: RecordedRequest): string {
  const contentType = req.headers["content-type"] ?? "";
  if (mediaType(contentType) !== "multipart/form-data") return req.body;
  return multipartParts(req.body, contentType)[0]?.value ?? "";
}

function handleResponseUrl(req: RecordedRequest, res: ServerResponse, ctx: FakeSlackContext): void {
  if (ctx.responses.receive(req, ctx.baseUrl())) sendJson(res, 200, { ok: true });
  else sendJson(res, 404, { ok: false, error: "expired_url" });
}
