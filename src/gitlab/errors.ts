import { GitbeakerRequestError, GitbeakerRetryError, GitbeakerTimeoutError } from "@gitbeaker/rest";
import { networkReason, VmbotError, type GitlabAsk } from "../errors.js";

export interface GitlabErrorContext {
  /** GitLab's address, e.g. https://gitlab.example.com. */
  url: string;
  /** GITLAB_PROJECT as configured. */
  project: string;
  /** What the bot asked for. */
  ask: GitlabAsk;
  timeoutMs: number;
}

/** GitLab's error body as text: `{"base":["Reference not found"]}` becomes "Reference not found". */
export function gitlabMessageText(description: string): string {
  try {
    const parsed: unknown = JSON.parse(description);
    const flatten = (value: unknown): string[] => {
      if (typeof value === "string") return [value];
      if (Array.isArray(value)) return value.flatMap(flatten);
      if (value !== null && typeof value === "object") {
        return Object.entries(value).flatMap(([key, inner]) =>
          flatten(inner).map((text) => (key === "base" ? text : `${key} ${text}`)),
        );
      }
      return [String(value)];
    };
    return flatten(parsed).join("; ");
  } catch {
    return description;
  }
}

/** Turns whatever gitbeaker threw into a typed error: its code, status and GitLab's words. */
export function gitlabError(error: unknown, ctx: GitlabErrorContext): VmbotError {
  // Already typed (e.g. Vault could not give the token): kept as it is.
  if (error instanceof VmbotError) return error;
  const { ask } = ctx;
  const options = { cause: error };
  if (error instanceof GitbeakerRequestError) {
    const status = error.cause?.response.status ?? 0;
    const message = gitlabMessageText(error.cause?.description ?? error.message);
    switch (status) {
      case 401:
        return new VmbotError({ code: "gitlab_unauthorized", ask }, options);
      case 403:
        return new VmbotError({ code: "gitlab_forbidden", ask, project: ctx.project }, options);
      case 404: {
        const projectMissing = /project not found/i.test(message) || ask.what === "create_pipeline";
        return projectMissing
          ? new VmbotError(
              { code: "gitlab_project_not_found", ask, project: ctx.project, status },
              options,
            )
          : new VmbotError({ code: "gitlab_not_found", ask }, options);
      }
      case 400:
      case 422:
        return new VmbotError({ code: "gitlab_bad_request", ask, status, message }, options);
      case 429:
        return new VmbotError({ code: "gitlab_rate_limited", ask }, options);
      default:
        return new VmbotError({ code: "gitlab_unavailable", ask, status, gaveUp: false }, options);
    }
  }
  if (error instanceof GitbeakerRetryError) {
    return new VmbotError({ code: "gitlab_unavailable", ask, status: 0, gaveUp: true }, options);
  }
  if (error instanceof GitbeakerTimeoutError) {
    return new VmbotError(
      { code: "gitlab_timeout", ask, url: ctx.url, timeoutMs: ctx.timeoutMs },
      options,
    );
  }
  const reason = networkReason(error);
  if (reason !== undefined || (error instanceof TypeError && error.message === "fetch failed")) {
    return new VmbotError(
      { code: "gitlab_unreachable", ask, url: ctx.url, reason: reason ?? "network error" },
      options,
    );
  }
  return new VmbotError({ code: "gitlab_bad_response", ask }, options);
}

/**
 * GitLab's answer was a definite refusal (a 4xx): it did nothing. Anything else (a timeout, a
 * dropped connection, a 5xx, an unreadable answer) leaves the outcome unknown: read again.
 */
export function gitlabRefused(error: unknown): boolean {
  return (
    error instanceof VmbotError &&
    [
      "gitlab_unauthorized",
      "gitlab_forbidden",
      "gitlab_not_found",
      "gitlab_project_not_found",
      "gitlab_state_not_found",
      "gitlab_bad_request",
      "gitlab_rate_limited",
    ].includes(error.code)
  );
}
