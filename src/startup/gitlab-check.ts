import type { Config } from "../config.js";
import { userMessage } from "../views/errors.js";
import type { GitlabPort } from "../gitlab/gitlab.js";
import { judgeGitlab } from "../gitlab/preflight.js";
import type { Logger } from "../logger.js";
import { StartupError } from "./errors.js";

/** How long start-up waits for GitLab to say its version and the token's role. */
const GITLAB_CHECK_BUDGET_MS = 10_000;

/**
 * GitLab's version and the token's role, checked once at start: what cannot work stops the
 * start, what will fail later is logged with what to change. A GitLab that does not answer in
 * time is only a warning: the bot starts and says so when a request reaches GitLab.
 */
export async function checkGitlab(gitlab: GitlabPort, config: Config, log: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      resolve(undefined);
    }, GITLAB_CHECK_BUDGET_MS);
  });
  const about = await Promise.race([gitlab.about(), late])
    .catch((error: unknown) => {
      log.warn(
        { err: error, words: userMessage(error) },
        "could not check GitLab's version and the token's role; starting all the same",
      );
      return undefined;
    })
    .finally(() => {
      clearTimeout(timer);
    });
  if (about === undefined) return;
  const { fatal, warnings } = judgeGitlab(about, {
    url: config.gitlab.url,
    project: config.gitlab.project,
    ref: config.gitlab.ref,
    pipelineParams: config.gitlab.pipelineParams,
    sendsVariables: config.gitlab.sizingParams === "variables" || config.gitlab.requestIdVariable,
  });
  for (const warning of warnings) log.warn({ gitlabVersion: about.version }, warning);
  if (fatal.length > 0) throw new StartupError(fatal.join(" "));
  log.info({ gitlabVersion: about.version, accessLevel: about.accessLevel }, "GitLab checked");
}
