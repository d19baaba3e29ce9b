import { FencedError } from "../store/postgres/leader.js";

/**
 * The Web API client sends a call again when its answer does not come (a reset connection, a
 * timeout, a 5xx from Slack's edge). For most calls that is harmless; for a call that posts, the
 * first one may have been taken, and the second posts the same message twice: a second request
 * message with live buttons, a reply said twice. Such a call is sent once: its lost answer is
 * given to the caller, which reads Slack back (the request message and thread replies carry
 * metadata for that) before trying again. A 429 was not taken, and is still waited out and sent
 * again, as Slack asks.
 */

/**
 * Web API methods that do something new each time they are called. (An ephemeral answer shown
 * twice to the one person who clicked harms less than one not shown: it is sent again.)
 */
const NOT_REPEATABLE = new Set([
  "chat.postMessage",
  "chat.scheduleMessage",
  "chat.meMessage",
  "files.completeUploadExternal",
]);

/** A call that posts, whose answer was lost: Slack may have taken it. */
export class AnswerLostError extends Error {
  override name = "AnswerLostError";
  constructor(
    readonly method: string,
    cause: unknown,
  ) {
    super(`Slack's answer to ${method} was lost; it may have been taken`, { cause });
  }
}

/** The Web API method a request of the client's `fetch` calls: `chat.update`. */
export const methodOf = (input: string | URL | Request): string => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  return new URL(url, "http://slack.invalid").pathname.split("/").pop() ?? "";
};

/**
 * A `fetch` under which a call that posts ends in AnswerLostError when its answer is lost (the
 * client then does not send it again; see `notRepeated`).
 */
export function answerKeepingFetch(base: typeof fetch) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const method = methodOf(input);
    if (!NOT_REPEATABLE.has(method)) return base(input, init);
    let response: Response;
    try {
      response = await base(input, init);
    } catch (error) {
      // Refused before it was written (this replica no longer leads): nothing was sent.
      const refused = causeOf(error, FencedError);
      if (refused !== undefined) throw refused;
      throw new AnswerLostError(method, error);
    }
    if (response.status >= 500) {
      throw new AnswerLostError(method, new Error(`HTTP ${String(response.status)}`));
    }
    return response;
  };
}

/**
 * The client's retry hook (`retryConfig.onFailedAttempt`): a call whose answer was lost ends
 * there, with its error, instead of being sent again.
 */
export function notRepeated(error: Error): void {
  if (answerLost(error)) throw error;
}

/**
 * The error of `type` that `error` is, or wraps: the Web API client gives what its `fetch`
 * threw as the `original` of its own error.
 */
export function causeOf<T extends Error>(
  error: unknown,
  type: abstract new (...args: never[]) => T,
): T | undefined {
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 4; depth += 1) {
    if (at instanceof type) return at;
    at = (at as { original?: unknown }).original ?? at.cause;
  }
  return undefined;
}

/** Whether `error` (a Web API client's, or one it wraps) is a lost answer to a call that posts. */
export function answerLost(error: unknown): boolean {
  return causeOf(error, AnswerLostError) !== undefined;
}

/** How many times a post is made, each lost answer read back before the next. */
const POST_ATTEMPTS = 3;

/**
 * Posts with `post`; an answer lost (Slack may have taken the post) is settled by `find`, which
 * looks for it by its metadata, before posting again: posted once, however its answers go.
 */
export async function postOnce<T>(
  post: () => Promise<T>,
  find: () => Promise<T | undefined>,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await post();
    } catch (error) {
      if (!answerLost(error)) throw error;
      const found = await find();
      if (found !== undefined) return found;
      if (attempt === POST_ATTEMPTS) throw error;
    }
  }
}
