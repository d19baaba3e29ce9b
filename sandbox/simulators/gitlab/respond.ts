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

/** Writes the reply, dated by GitLab's clock, as GitLab's web server dates every answer. */
function write(res: ServerResponse, reply: Reply, now: Date): void {
  if (res.destroyed || res.writableEnded) return; // the client has gone
  const id = requestId();
  const common = {
    date: now.toUTCString(),
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
  if (reply.text.length <= TEXT_SLICE) res.end(reply.text);
  else writeSlices(res, reply.text, 0);
}

/** Characters of a long text (a job log) encoded and written at a time. */
const TEXT_SLICE = 256 * 1024;

/**
 * Writes a long text a slice at a time, as the client takes it, and stops when the client goes
 * away (as vmbot does at its log cap): a log of hundreds of megabytes is never encoded in one go,
 * which would hold this process (and, on a small machine, the bot beside it) for its length.
 */
function writeSlices(res: ServerResponse, text: string, from: number): void {
  let at = from;
  while (at < text.length) {
    if (res.destroyed) return;
    let end = Math.min(text.length, at + TEXT_SLICE);
    // A surrogate pair cut in two would be written as two replacement characters.
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
    const flowing = res.write(text.slice(at, end));
    at = end;
    if (!flowing) {
      res.once("drain", () => {
        writeSlices(res, text, at);
      });
      return;
    }
  }
  res.end();
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

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
      if (await waits.sleep(lost.delayMs)) write(res, reply, model.now());
      else res.destroy();
    } else {
      write(res, defaultFailureReply(lost.status, undefined, model.now()), model.now());
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
    if ("until" in failure && failure.status !== undefined) {
      write(res, defaultFailureReply(failure.status, undefined, model.now()), model.now());
      return;
    }
  } else if (failure !== undefined) {
    write(res, failureReply(failure, model.now()), model.now());
    return;
  }
  write(res, dispatch(model, entities, req), model.now());
}
