/** One request, from the injected failure it may meet to the answer written on the wire. */
import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { FaultQueue, Waits } from "../faults.js";
import { sendJson, type RecordedRequest } from "../http.js";
import type { Entities } from "./entities.js";
import { defaultFailureReply, json, type Reply } from "./replies.js";
import { dispatch } from "./routes.js";
import type { GitlabModel } from "./runner.js";
import type { FailureMatch, InjectedFailure } from "./types.js";

function requestId(): string {
  return randomBytes(13).toString("hex").toUpperCase();
}

function write(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.writableEnded) return; // the client has gone
  const id = requestId();
  const common = {
    "cache-control": "max-age=0, private, must-revalidate",
    "x-request-id": id,
    "x-gitlab-meta": JSON.stringify({ correlation_id: id, version: "1" }),
    "x-content-type-options": "nosniff",
    "x-frame-options": "SAMEORIGIN",
  };
  if (reply.kind === "json") {
    sendJson(res, reply.status, reply.body, {
      ...common,
      "content-type": "application/json",
      ...reply.headers,
    });
    return;
  }
  res.writeHead(reply.status, {
    ...common,
    "content-type": "text/plain; charset=utf-8",
    "content-length": Buffer.byteLength(reply.text),
    ...reply.headers,
  });
  res.end(reply.text);
}

export interface Responder {
  model: GitlabModel;
  entities: Entities;
  faults: FaultQueue<FailureMatch, InjectedFailure>;
  waits: Waits;
}

/** The answer an injected failure (not an `afterEffect` one) gives instead of GitLab's. */
function failureReply(failure: { status: number; body?: unknown; retryAfter?: number }, now: Date) {
  const retryHeaders: Record<string, string> =
    failure.retryAfter === undefined ? {} : { "retry-after": String(failure.retryAfter) };
  if (failure.body === undefined)
    return defaultFailureReply(failure.status, failure.retryAfter, now);
  return typeof failure.body === "string"
    ? ({ kind: "text", status: failure.status, text: failure.body, headers: retryHeaders } as const)
    : json(failure.status, failure.body, retryHeaders);
}

export async function respond(
  { model, entities, faults, waits }: Responder,
  req: RecordedRequest,
  res: ServerResponse,
): Promise<void> {
  const failure = faults.take(req);
  if (failure === "reset") {
    res.socket?.destroy();
    return;
  }
  if (failure !== undefined && "afterEffect" in failure) {
    // GitLab acts; the answer does not reach the client.
    const reply = dispatch(model, entities, req);
    const lost = failure.afterEffect;
    if (lost === "reset") {
      res.socket?.destroy();
    } else if ("delayMs" in lost) {
      if (await waits.sleep(lost.delayMs)) write(res, reply);
      else res.destroy();
    } else {
      write(res, defaultFailureReply(lost.status, undefined, model.now()));
    }
    return;
  }
  if (failure !== undefined && ("delayMs" in failure || "until" in failure)) {
    const awake = await ("delayMs" in failure
      ? waits.sleep(failure.delayMs)
      : waits.hold(failure.until));
    if (!awake) {
      res.destroy();
      return;
    }
  } else if (failure !== undefined) {
    write(res, failureReply(failure, model.now()));
    return;
  }
  write(res, dispatch(model, entities, req));
}
