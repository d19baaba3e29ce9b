import {
  createRequesterFn,
  getMatchingRateLimiter,
  GitbeakerRequestError,
  GitbeakerRetryError,
  GitbeakerTimeoutError,
  type FormattedResponse,
  type RateLimiters,
  type ResponseBodyTypes,
} from "@gitbeaker/requester-utils";
import { backoffMs, retryAfterMs } from "../retry.js";

export { retryAfterMs };

/**
 * gitbeaker's transport, with retries made safe for a bot that must never create a VM twice.
 *
 * The stock handler retries every method on 429 and 502, ten times, ignoring `Retry-After`.
 * A 502 from a proxy can arrive after GitLab has already created the pipeline, so a retried
 * POST can start a second one. Here:
 * - a 429 is retried for every method (GitLab did not act on it), after `Retry-After`;
 * - 502, 503, 504 and dropped connections are retried only for GET and HEAD;
 * - each retry waits with jittered exponential back-off, at most `maxRetries` times,
 *   and never beyond the request's own timeout.
 */

export interface RetryPolicy {
  maxRetries: number;
  baseDelayMs: number;
  /** Longest single wait, including a server's Retry-After. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 3, baseDelayMs: 250, maxDelayMs: 10_000 };

const IDEMPOTENT = new Set(["GET", "HEAD"]);
const RETRY_STATUS_IDEMPOTENT = new Set([502, 503, 504]);

interface HandlerOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | FormData;
  searchParams?: string;
  prefixUrl?: string;
  asStream?: boolean;
  signal?: AbortSignal;
  rateLimiters?: RateLimiters;
}

type RateLimit = ReturnType<typeof getMatchingRateLimiter>;

/** Which limiter each endpoint's shape takes, per set of limiters (one set per resource). */
const limitsByShape = new WeakMap<
  RateLimiters,
  { numbered: boolean; shapes: Map<string, RateLimit> }
>();

/**
 * gitbeaker's limiter for a request, found once per endpoint shape: its own lookup sorts the
 * limits' globs and compiles each one again for every request (0.15–0.4 ms a call on a quiet
 * machine, more under load, for every poll of every pipeline). A number between slashes is written
 * as 0 for the shape, which matches the same globs as long as none of them names a number (none
 * of gitbeaker's limits does; with one that did, every endpoint is looked up as it is). An
 * endpoint that no limit covers for its method gets gitbeaker's fallback, 3,000 a minute, kept
 * for its shape like the others where gitbeaker makes one anew for every request.
 */
export function rateLimitFor(endpoint: string, limiters: RateLimiters | undefined, method: string) {
  if (limiters === undefined) return getMatchingRateLimiter(endpoint, limiters, method);
  let known = limitsByShape.get(limiters);
  if (known === undefined) {
    known = { numbered: Object.keys(limiters).some((glob) => /\d/.test(glob)), shapes: new Map() };
    limitsByShape.set(limiters, known);
  }
  const { numbered, shapes } = known;
  const shape = `${method.toUpperCase()} ${numbered ? endpoint : endpoint.replace(/(?<=^|\/)\d+(?=\/|$)/g, "0")}`;
  let limit = shapes.get(shape);
  if (limit === undefined) {
    limit = getMatchingRateLimiter(endpoint, limiters, method);
    shapes.set(shape, limit);
  }
  return limit;
}

/** Jittered exponential back-off for attempt `attempt` (0 for the first retry). */
const backoff = (attempt: number, policy: RetryPolicy) =>
  backoffMs(attempt, { retries: policy.maxRetries, ...policy });

async function processBody(response: Response): Promise<ResponseBodyTypes> {
  const type = (response.headers.get("content-type") ?? "").split(";")[0]?.trim() ?? "";
  if (response.status === 204) return null;
  if (type === "application/json") {
    const text = await response.text();
    return text === "" ? {} : (JSON.parse(text) as ResponseBodyTypes);
  }
  if (type.startsWith("text/")) return response.text();
  return response.blob();
}

async function requestError(request: Request, response: Response): Promise<GitbeakerRequestError> {
  const content = await response.text();
  let description = content;
  if (response.headers.get("content-type")?.includes("application/json")) {
    try {
      const output = JSON.parse(content) as { error?: unknown; message?: unknown } | null;
      const property = output?.error ?? output?.message ?? "";
      description = typeof property === "string" ? property : JSON.stringify(property);
    } catch {
      description = content;
    }
  }
  return new GitbeakerRequestError(description, { cause: { description, request, response } });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new GitbeakerTimeoutError("Query timeout was reached"));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new GitbeakerTimeoutError("Query timeout was reached"));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Sees every successful answer, before it is read: its `Date` header (server-clock.ts). */
export type AnswerObserver = (response: Response) => void;

export function createRequestHandler(
  policy: RetryPolicy = DEFAULT_RETRY,
  observe: AnswerObserver = () => undefined,
) {
  return async (endpoint: string, raw?: Record<string, unknown>): Promise<FormattedResponse> => {
    const {
      rateLimiters,
      asStream,
      prefixUrl,
      searchParams,
      method = "GET",
      ...init
    } = (raw ?? {}) as HandlerOptions;
    const base = prefixUrl === undefined || prefixUrl.endsWith("/") ? prefixUrl : `${prefixUrl}/`;
    const url = new URL(endpoint, base);
    url.search = searchParams ?? "";
    const rateLimit = rateLimitFor(endpoint, rateLimiters, method);
    const idempotent = IDEMPOTENT.has(method.toUpperCase());

    let lastStatus: number | undefined;
    for (let attempt = 0; ; attempt += 1) {
      const request = new Request(url, { ...init, method });
      await rateLimit();
      let response: Response;
      try {
        response = await fetch(request);
      } catch (error) {
        const name = (error as Error).name;
        if (name === "TimeoutError" || name === "AbortError") {
          throw new GitbeakerTimeoutError("Query timeout was reached", { cause: error });
        }
        if (!idempotent || attempt >= policy.maxRetries) throw error;
        await sleep(backoff(attempt, policy), init.signal);
        continue;
      }
      if (response.ok) {
        observe(response);
        const headers = Object.fromEntries(response.headers.entries());
        const body = asStream ? (response.body as ResponseBodyTypes) : await processBody(response);
        return { body, headers, status: response.status };
      }
      const retryable =
        response.status === 429 || (idempotent && RETRY_STATUS_IDEMPOTENT.has(response.status));
      if (!retryable) throw await requestError(request, response);
      lastStatus = response.status;
      if (attempt >= policy.maxRetries) break;
      const wait = retryAfterMs(response.headers.get("retry-after")) ?? backoff(attempt, policy);
      await response.body?.cancel();
      await sleep(Math.min(wait, policy.maxDelayMs), init.signal);
    }
    throw new GitbeakerRetryError(
      `GitLab answered ${String(lastStatus)} ${policy.maxRetries + 1} times; giving up.`,
    );
  };
}

/** A gitbeaker `requesterFn` with the retry rules above. */
export function createRequester(policy: RetryPolicy = DEFAULT_RETRY, observe?: AnswerObserver) {
  return createRequesterFn(
    (_, options) => Promise.resolve(options),
    createRequestHandler(policy, observe),
  );
}
