import type { GitlabAbout } from "./gitlab.js";

/**
 * What vmbot checks about GitLab at start: the version against the parameter style, and the
 * token's role and pipeline-variable rights against what vmbot will ask of GitLab. Only what
 * cannot work stops the start; the rest is said once in the log, so an admin sees it before a
 * requester meets it.
 */
export interface PreflightSettings {
  /** GITLAB_URL, for the words. */
  url: string;
  /** GITLAB_PROJECT, for the words. */
  project: string;
  ref: string;
  pipelineParams: "inputs" | "variables";
  /** Whether vmbot sends pipeline variables (sizing as TF_VAR_*, or VMBOT_REQUEST_ID). */
  sendsVariables: boolean;
}

export interface PreflightResult {
  /** Each a reason the bot cannot work against this GitLab. */
  fatal: string[];
  /** Each something that will fail later, with what to change. */
  warnings: string[];
}

/** The first GitLab whose pipeline-create API takes `inputs`. */
export const INPUTS_SINCE = { major: 17, minor: 10 } as const;

const ACCESS = { developer: 30, maintainer: 40, owner: 50 } as const;

const ROLE_NAMES: Record<number, string> = {
  10: "Guest",
  15: "Planner",
  20: "Reporter",
  30: "Developer",
  40: "Maintainer",
  50: "Owner",
};

/** `17.9.3-ee` → [17, 9]; undefined when GitLab reports something else. */
export function versionOf(text: string): [number, number] | undefined {
  const match = /^(\d+)\.(\d+)/.exec(text);
  return match === null ? undefined : [Number(match[1]), Number(match[2])];
}

export function judgeGitlab(about: GitlabAbout, settings: PreflightSettings): PreflightResult {
  const fatal: string[] = [];
  const warnings: string[] = [];
  const version = versionOf(about.version);
  if (
    settings.pipelineParams === "inputs" &&
    version !== undefined &&
    (version[0] < INPUTS_SINCE.major ||
      (version[0] === INPUTS_SINCE.major && version[1] < INPUTS_SINCE.minor))
  ) {
    fatal.push(
      `GitLab at ${settings.url} is version ${about.version}, which ignores the inputs of a pipeline created through the API (they arrived in ${INPUTS_SINCE.major}.${INPUTS_SINCE.minor}): every pipeline would run on the spec's defaults. Upgrade GitLab, or set GITLAB_PIPELINE_PARAMS=variables and have the pipeline read variables.`,
    );
  }
  const level = about.accessLevel;
  if (level === null) {
    warnings.push(
      `The bot's token has no role in ${settings.project} that GitLab shows: add its user to the project as a Maintainer.`,
    );
  } else if (level < ACCESS.maintainer) {
    const role = ROLE_NAMES[level] ?? `access level ${level}`;
    warnings.push(
      `The bot's token is a ${role} in ${settings.project}; it needs to be a Maintainer: on the protected branch ${settings.ref} a ${role} cannot run pipelines or play jobs, and the Terraform state lock the pipeline's jobs take is refused below Maintainer.`,
    );
  }
  const minimum = about.variablesMinimumRole;
  if (settings.sendsVariables && minimum !== null) {
    const needed =
      minimum === "no_one_allowed" ? undefined : ACCESS[minimum as keyof typeof ACCESS];
    if (needed === undefined || (level !== null && level < needed)) {
      warnings.push(
        `${settings.project} lets ${minimum === "no_one_allowed" ? "no one" : `only ${minimum}s and up`} set pipeline variables, and vmbot sends some (the sizing as TF_VAR_*, VMBOT_REQUEST_ID): lower "Minimum role to use pipeline variables" in the project's CI/CD settings to Maintainer, or set GITLAB_SIZING_PARAMS=inputs and GITLAB_REQUEST_ID_VARIABLE=false.`,
      );
    }
  }
  return { fatal, warnings };
}
