/** Errors and replies, shaped as GitLab's API answers them. */
import { STATUS_CODES } from "node:http";

export type Reply =
  | { kind: "json"; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: "text"; status: number; text: string; headers?: Record<string, string> };

export function json(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return { kind: "json", status, body, ...(headers ? { headers } : {}) };
}

/** An API error: thrown by handlers, rendered as GitLab renders it. */
export class ApiError extends Error {
  constructor(readonly reply: Reply) {
    super(`GitLab API error ${reply.status}`);
  }
}

/** `render_api_error!`: `{"message": …}`. */
export function apiError(status: number, message: unknown): ApiError {
  return new ApiError(json(status, { message }));
}

/** Grape parameter errors and the catch-all route: `{"error": …}`. */
export function grapeError(status: number, error: string): ApiError {
  return new ApiError(json(status, { error }));
}

export const unauthorized = (): ApiError => apiError(401, "401 Unauthorized");
export const forbidden = (): ApiError => apiError(403, "403 Forbidden");
export const projectNotFound = (): ApiError => apiError(404, "404 Project Not Found");
/** `ActiveRecord::RecordNotFound`, as the API rescues it. */
export const recordNotFound = (): ApiError => apiError(404, "404 Not found");
/** Pipeline creation failed: `render_validation_error!` of `errors.base`. */
export const pipelineError = (message: string): ApiError => apiError(400, { base: [message] });

/** The body GitLab (or Workhorse, for 502) answers with for a status. */
export function defaultFailureReply(
  status: number,
  retryAfter: number | undefined,
  now: Date,
): Reply {
  const headers: Record<string, string> = {};
  if (retryAfter !== undefined) headers["retry-after"] = String(retryAfter);
  if (status === 429) {
    // Rack::Attack's throttle response (Gitlab::RackAttack.throttled_response_headers).
    const wait = retryAfter ?? 60;
    const reset = new Date(now.getTime() + wait * 1000);
    return {
      kind: "text",
      status,
      text: "Retry later\n",
      headers: {
        "ratelimit-name": "throttle_authenticated_api",
        "ratelimit-limit": "2000",
        "ratelimit-observed": "2001",
        "ratelimit-remaining": "0",
        "ratelimit-reset": String(Math.floor(reset.getTime() / 1000)),
        "ratelimit-resettime": reset.toUTCString(),
        "retry-after": String(wait),
      },
    };
  }
  if (status === 502) {
    return { kind: "text", status, text: "GitLab is not responding", headers };
  }
  const messages: Record<number, string> = {
    400: "400 Bad request",
    401: "401 Unauthorized",
    403: "403 Forbidden",
    404: "404 Not Found",
    409: "409 Conflict",
    500: "500 Internal Server Error",
  };
  const message = messages[status] ?? `${status} ${STATUS_CODES[status] ?? "Error"}`;
  return json(status, { message }, headers);
}
