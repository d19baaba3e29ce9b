import type { App, ReceiverEvent } from "@slack/bolt";
import { redactInBatches, type Redactor } from "../redact.js";

/**
 * Everything the bot sends to Slack passes the redactor here, at the wire, so that no call site
 * can forget it: every Web API call and file upload of every client built with
 * `slackClientOptions`, every `respond()` (Bolt posts to response URLs with the same `fetch`),
 * and every `ack()` with a body (the HTTP answer or the Socket Mode envelope). A long file sent
 * from disk (`./upload.ts`) is redacted as it is written, before its length is announced.
 */

/** Every string in a JSON value, redacted; the keys and the shape stay as they are. */
export function redactJson(value: unknown, redact: Redactor): unknown {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) return value.map((item) => redactJson(item, redact));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, redactJson(item, redact)]),
    );
  }
  return value;
}

/** A form field: JSON (blocks, a view, metadata) is redacted string by string, text as text. */
function redactField(value: string, redact: Redactor): string {
  const first = value.trimStart()[0];
  if (first === "{" || first === "[") {
    try {
      return JSON.stringify(redactJson(JSON.parse(value), redact));
    } catch {
      // Not JSON after all: text.
    }
  }
  return redact(value);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** An uploaded file's bytes: text is redacted; anything that is not UTF-8 passes as it is. */
async function redactBlob(blob: Blob, redact: Redactor): Promise<Blob> {
  let text: string;
  try {
    text = utf8.decode(await blob.arrayBuffer());
  } catch {
    return blob;
  }
  const clean = await redactInBatches(text, redact);
  return clean === text ? blob : new Blob([clean], { type: blob.type });
}

async function redactBody(
  body: RequestInit["body"],
  contentType: string,
  redact: Redactor,
): Promise<RequestInit["body"]> {
  if (typeof body === "string") {
    if (contentType.startsWith("application/x-www-form-urlencoded")) {
      const form = new URLSearchParams(body);
      const clean = new URLSearchParams();
      for (const [key, value] of form) clean.append(key, redactField(value, redact));
      return clean.toString();
    }
    if (contentType.startsWith("application/json")) return redactField(body, redact);
    return redact(body);
  }
  if (body instanceof FormData) {
    const clean = new FormData();
    for (const [key, value] of body) {
      if (typeof value === "string") clean.append(key, redactField(value, redact));
      else clean.append(key, await redactBlob(value, redact), value.name);
    }
    return clean;
  }
  // Nothing the Slack clients send takes another form; a stream or buffer would pass unread.
  return body;
}

/** A `fetch` that redacts what it sends; for `clientOptions.fetch` of Bolt and its Web API clients. */
export function redactingFetch(redact: Redactor, base: typeof fetch = globalThis.fetch) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (init?.body === undefined || init.body === null) return base(input, init);
    const contentType = new Headers(init.headers).get("content-type") ?? "";
    return base(input, { ...init, body: await redactBody(init.body, contentType, redact) });
  };
}

/**
 * Redacts what listeners acknowledge with (a slash command's immediate answer, a form's field
 * errors): receivers hand every event to `app.processEvent`, whose `ack` is replaced here.
 */
export function redactAcks(app: App, redact: Redactor): void {
  const processEvent = app.processEvent.bind(app);
  app.processEvent = (event: ReceiverEvent) =>
    processEvent({
      ...event,
      ack: (response?: unknown) =>
        event.ack(typeof response === "string" ? redact(response) : redactJson(response, redact)),
    });
}
