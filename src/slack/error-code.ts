/** Slack's error code in a Web API call's refusal (`not_in_channel`); undefined for any other error. */
export function slackErrorCode(error: unknown): string | undefined {
  const data = (error as { data?: { error?: unknown } } | undefined)?.data;
  return typeof data?.error === "string" ? data.error : undefined;
}

/** Slack's error codes that say it could not do the call this time, not that it never will. */
export const PASSING_SLACK_ERRORS: ReadonlySet<string> = new Set([
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
  "ratelimited",
]);
