import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parse as parseQuery } from "node:querystring";
import { millisOf, systemClock, type Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { RequestTurns } from "./after-ack.js";

/** Slack refuses to act on a signed request more than five minutes from now, either way. */
export const SIGNATURE_WINDOW_SECONDS = 5 * 60;

const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";

/** How a request to `/slack/events` was refused, before Bolt saw it. */
export class RefusedRequest extends Error {
  override name = "RefusedRequest";
  constructor(
    readonly status: 400 | 401 | 413 | 415,
    message: string,
    /** The rest of the body was not read, so the connection cannot be reused. */
    readonly close = false,
  ) {
    super(message);
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
}

/**
 * Reads the body, refusing it as soon as it is known to exceed `limit`: by its Content-Length
 * before anything is read, or by counting bytes as they arrive (nothing more is buffered).
 */
export async function readBoundedBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = header(req, "content-length");
  if (declared !== undefined && Number(declared) > limit) {
    throw new RefusedRequest(413, `the body is larger than ${limit} bytes`, true);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) {
        throw new RefusedRequest(413, `the body is larger than ${limit} bytes`, true);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof RefusedRequest) throw error;
    // The client went away (or its connection was cut) before the body was whole.
    throw new RefusedRequest(400, "the body was not sent whole", true);
  }
  return Buffer.concat(chunks, size);
}

/**
 * Slack's signature, `v0=` and the hex HMAC-SHA256 of `v0:{timestamp}:{body}`, compared in
 * constant time; the timestamp must be within five minutes of `nowSeconds`, in the past or in
 * the future (Bolt checks only the past).
 */
export function verifySlackSignature(options: {
  signingSecret: string;
  signature: string | undefined;
  timestamp: string | undefined;
  body: Buffer;
  nowSeconds: number;
}): void {
  const { signature, timestamp } = options;
  if (signature === undefined || timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) {
    throw new RefusedRequest(401, "the request is not signed");
  }
  if (Math.abs(options.nowSeconds - Number(timestamp)) > SIGNATURE_WINDOW_SECONDS) {
    throw new RefusedRequest(401, "the signed timestamp is more than five minutes away from now");
  }
  const expected = Buffer.from(
    "v0=" +
      createHmac("sha256", options.signingSecret)
        .update(`v0:${timestamp}:`)
        .update(options.body)
        .digest("hex"),
  );
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new RefusedRequest(401, "the signature does not match");
  }
}

const isObject = (value: unknown): boolean =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Checks that Bolt will read `body` as an object, exactly as Bolt parses it (a form whose
 * `payload` is JSON, a form, or JSON). A `payload` of `null` makes Bolt read a property of null
 * outside any try, an unhandled rejection; arrays, strings and numbers are no Slack request.
 */
export function checkSlackBody(contentType: string | undefined, body: Buffer): void {
  const media = (contentType ?? "").split(";")[0]?.trim().toLowerCase();
  if (media !== FORM && media !== JSON_TYPE) {
    throw new RefusedRequest(415, `send ${FORM} or ${JSON_TYPE}`);
  }
  const text = body.toString("utf8");
  let parsed: unknown;
  try {
    if (contentType === FORM) {
      const form = parseQuery(text);
      if (form.payload === undefined) return;
      if (typeof form.payload !== "string") throw new Error("more than one payload");
      parsed = JSON.parse(form.payload);
    } else {
      parsed = JSON.parse(text);
    }
  } catch {
    throw new RefusedRequest(400, "the body is not a Slack request");
  }
  if (!isObject(parsed)) throw new RefusedRequest(400, "the body is not a Slack request");
}

/** Whether `body` is Slack's unsigned SSL check (`ssl_check=1`), which only needs a 200. */
function isSslCheck(req: IncomingMessage, body: Buffer): boolean {
  return (
    header(req, "content-type") === FORM && parseQuery(body.toString("utf8")).ssl_check === "1"
  );
}

/** The largest unsigned body read, to see whether it is Slack's SSL check. */
const SSL_CHECK_MAX_BYTES = 1024;

/**
 * `POST /slack/events` in front of Bolt: a request reaches Bolt only when it is signed within
 * five minutes of now, its body is within `maxBodyBytes` and is an object Bolt can read; every
 * other one is answered here (400, 401, 413 or 415). An unsigned request is refused before its
 * body is read, unless it is a small `ssl_check`.
 */
export function createSlackEventsHandler(options: {
  signingSecret: string;
  bolt: (req: IncomingMessage, res: ServerResponse) => void;
  log: Logger;
  maxBodyBytes: number;
  /** What time it is, for the signature's five minutes; the machine's clock by default. */
  clock?: Clock;
  /** Counts each signed request until it is answered, so that work after acknowledgements waits. */
  turns?: RequestTurns;
}): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const now = millisOf(options.clock ?? systemClock);
  return async (req, res) => {
    try {
      const signature = header(req, "x-slack-signature");
      const timestamp = header(req, "x-slack-request-timestamp");
      if (signature === undefined || timestamp === undefined) {
        const body = await readBoundedBody(req, SSL_CHECK_MAX_BYTES).catch(() => {
          throw new RefusedRequest(401, "the request is not signed", true);
        });
        if (!isSslCheck(req, body)) throw new RefusedRequest(401, "the request is not signed");
        res.writeHead(200).end();
        return;
      }
      const body = await readBoundedBody(req, options.maxBodyBytes);
      verifySlackSignature({
        signingSecret: options.signingSecret,
        signature,
        timestamp,
        body,
        nowSeconds: Math.floor(now() / 1000),
      });
      checkSlackBody(header(req, "content-type"), body);
      // Counted once it is known to be Slack's: a request refused here, or one whose body is
      // still coming (a client sending it a byte at a time), holds back no work.
      options.turns?.received(res);
      // Bolt takes a request whose body was already read as `rawBody`, and verifies it again.
      Object.assign(req, { rawBody: body });
      options.bolt(req, res);
    } catch (error) {
      if (!(error instanceof RefusedRequest)) throw error;
      options.log.warn({ status: error.status, reason: error.message }, "refused a Slack request");
      if (res.headersSent) return;
      res.writeHead(error.status, {
        "content-type": "application/json; charset=utf-8",
        ...(error.close ? { connection: "close" } : {}),
      });
      res.end(JSON.stringify({ error: error.message }));
    }
  };
}
