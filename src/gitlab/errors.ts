import { GitbeakerRequestError, GitbeakerRetryError, GitbeakerTimeoutError } from "@gitbeaker/rest";
import { networkReason, VmbotError } from "../errors.js";
import { escapeMrkdwn } from "../slack/mrkdwn.js";

export interface GitlabErrorContext {
  /** GitLab's address, e.g. https://gitlab.example.com. */
  url: string;
  /** GITLAB_PROJECT as configured. */
  project: string;
  /** What the bot was doing, e.g. "create the pipeline". */
  doing: string;
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

const seconds = (ms: number) =>
  ms < 10_000 ? `${(ms / 1000).toFixed(1)} seconds` : `${Math.round(ms / 1000)} seconds`;

/** GitLab's 400 for a pipeline it will not create, with what to change. */
function badRequestWords(ctx: GitlabErrorContext, status: number, detail: string): string {
  const refused = `GitLab refused to ${ctx.doing} (${status}): ${detail}.`;
  if (/rules configuration prevented any jobs/i.test(detail)) {
    return `${refused} The pipeline's rules must accept pipelines created through the API (\`$CI_PIPELINE_SOURCE == "api"\`), not only \`"web"\`: see vmbot's README.`;
  }
  if (/sufficient permission to run a pipeline/i.test(detail)) {
    return `${refused} The branch is protected: the bot's token needs a user with the Maintainer role on the project (or one allowed to merge into that branch).`;
  }
  // GitLab quotes the input's name in backquotes; the detail has them escaped for Slack.
  const typed = /[`'](\w+)[`'] input: provided value is not an? (string|number|boolean)/i.exec(
    detail,
  );
  if (typed !== null) {
    return typed[2] === "number"
      ? `${refused} The pipeline declares \`${typed[1]}\` as \`type: number\`: list it in GITLAB_NUMBER_INPUTS so vmbot sends it as a number.`
      : `${refused} The pipeline declares \`${typed[1]}\` without a type (a string), but vmbot sent a number: remove it from GITLAB_NUMBER_INPUTS.`;
  }
  return `${refused} Check the pipeline's spec:inputs and the ref vmbot runs on against the form's fields.`;
}

/** Turns whatever gitbeaker threw into words a person can act on. */
export function gitlabError(error: unknown, ctx: GitlabErrorContext): VmbotError {
  // Already in words (e.g. Vault could not give the token): keep them.
  if (error instanceof VmbotError) return error;
  const project = `\`${escapeMrkdwn(ctx.project)}\``;
  if (error instanceof GitbeakerRequestError) {
    const status = error.cause?.response.status ?? 0;
    const detail = escapeMrkdwn(
      gitlabMessageText(error.cause?.description ?? error.message).replace(/\.+$/, ""),
    );
    switch (status) {
      case 401:
        return new VmbotError(
          "gitlab_unauthorized",
          `GitLab refused the bot's token (401 Unauthorized): it is invalid, expired or revoked. An admin needs to give vmbot a new token with the api scope (GITLAB_TOKEN).`,
          { cause: error },
        );
      case 403:
        return new VmbotError(
          "gitlab_forbidden",
          `GitLab did not let the bot ${ctx.doing} in ${project} (403 Forbidden): its token needs the api scope, and its user the Maintainer role on the project (pipelines on the protected default branch and the Terraform state lock need it).`,
          { cause: error },
        );
      case 404: {
        const projectMissing =
          /project not found/i.test(detail) || ctx.doing === "create the pipeline";
        return projectMissing
          ? new VmbotError(
              "gitlab_project_not_found",
              `GitLab has no project ${project} that the bot's token can see (404 Not Found): check GITLAB_PROJECT, and that the token's user is a member of the project.`,
              { cause: error },
            )
          : new VmbotError(
              "gitlab_not_found",
              `GitLab could not find what the bot needed to ${ctx.doing} (404 Not Found): it may have been deleted.`,
              { cause: error },
            );
      }
      case 400:
      case 422:
        return new VmbotError("gitlab_bad_request", badRequestWords(ctx, status, detail), {
          cause: error,
        });
      case 429:
        return new VmbotError(
          "gitlab_rate_limited",
          `GitLab is rate-limiting the bot (429 Too Many Requests), so it could not ${ctx.doing}. Try again in a minute.`,
          { cause: error },
        );
      default:
        return new VmbotError(
          "gitlab_unavailable",
          `GitLab answered with an error (${status || "no status"}) when the bot tried to ${ctx.doing}. GitLab may be down or upgrading; try again later.`,
          { cause: error },
        );
    }
  }
  if (error instanceof GitbeakerRetryError) {
    return new VmbotError(
      "gitlab_unavailable",
      `GitLab stayed busy or unavailable (it kept answering 429 or 5xx) when the bot tried to ${ctx.doing}, and the bot gave up after several tries. Try again in a few minutes.`,
      { cause: error },
    );
  }
  if (error instanceof GitbeakerTimeoutError) {
    return new VmbotError(
      "gitlab_timeout",
      `GitLab at ${ctx.url} did not answer within ${seconds(ctx.timeoutMs)} when the bot tried to ${ctx.doing}. It may be overloaded; check that the pipeline was not created before trying again.`,
      { cause: error },
    );
  }
  const reason = networkReason(error);
  if (reason !== undefined || (error instanceof TypeError && error.message === "fetch failed")) {
    return new VmbotError(
      "gitlab_unreachable",
      `GitLab at ${ctx.url} could not be reached (${reason ?? "network error"}), so the bot could not ${ctx.doing}. Check that GitLab is up and GITLAB_URL is right.`,
      { cause: error },
    );
  }
  return new VmbotError(
    "gitlab_bad_response",
    `The bot could not ${ctx.doing}: GitLab's answer was not what the bot expected. The details are in the bot's log.`,
    { cause: error },
  );
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
