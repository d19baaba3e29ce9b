import type {
  DetailOf,
  ErrorDetail,
  GitlabAsk,
  GitlabFailure,
  ProxmoxFailure,
  VaultAsk,
  VaultFailure,
} from "../errors.js";
import { VmbotError } from "../errors.js";
import { escapeMrkdwn } from "../slack/mrkdwn.js";

/**
 * The words a person reads for every error the bot reports: what failed, why in their terms, and
 * what to do. Slack mrkdwn, built from the error's code and data; outside text is escaped here.
 */

/** The words a user sees for any error: never a stack trace, never nothing. */
export function userMessage(error: unknown): string {
  if (error instanceof VmbotError) return errorWords(error.detail);
  return "Something went wrong inside vmbot. The details are in its log; please tell the team that runs it.";
}

/** What the bot was doing with GitLab, after "tried to …". */
export function gitlabDoing(ask: GitlabAsk): string {
  switch (ask.what) {
    case "create_pipeline":
      return "create the pipeline";
    case "list_pipelines":
      return "list pipelines";
    case "find_request_pipeline":
      return "look for the request's pipeline";
    case "find_request_pipelines":
      return "look for the request's pipelines";
    case "read_project":
      return "read the project";
    case "read_version":
      return "read GitLab's version";
    case "read_inputs":
      return "read the pipeline's inputs";
    case "read_states":
      return "read the project's Terraform states";
    case "read_pipeline":
      return `read pipeline #${ask.pipelineId}`;
    case "list_jobs":
      return `list the jobs of pipeline #${ask.pipelineId}`;
    case "read_variables":
      return `read the variables of pipeline #${ask.pipelineId}`;
    case "cancel_pipeline":
      return `cancel pipeline #${ask.pipelineId}`;
    case "read_job":
      return `read job #${ask.jobId}`;
    case "play_job":
      return `start job #${ask.jobId}`;
    case "retry_job":
      return `run job #${ask.jobId} again`;
    case "read_log":
      return `read the log of job #${ask.jobId}`;
    case "erase_artifacts":
      return `delete the artifacts of job #${ask.jobId}`;
    case "read_artifact":
      return `read ${ask.path} from job #${ask.jobId}`;
    case "unlock_state":
      return `unlock the Terraform state ${ask.name}`;
    case "read_lock":
      return `read the lock of the Terraform state ${ask.name}`;
  }
}

const gitlabSeconds = (ms: number) =>
  ms < 10_000 ? `${(ms / 1000).toFixed(1)} seconds` : `${Math.round(ms / 1000)} seconds`;

const tenths = (ms: number) => `${Math.round(ms / 100) / 10} seconds`;

const quotedProject = (project: string) => `\`${escapeMrkdwn(project)}\``;

/** GitLab's 400 for a pipeline it will not create, with what to change. */
function badRequestWords(error: DetailOf<"gitlab_bad_request">): string {
  const detail = escapeMrkdwn(error.message.replace(/\.+$/, ""));
  const refused = `GitLab refused to ${gitlabDoing(error.ask)} (${error.status}): ${detail}.`;
  if (/rules configuration prevented any jobs/i.test(detail)) {
    return `${refused} The pipeline's rules must accept pipelines created through the API (\`$CI_PIPELINE_SOURCE == "api"\`), not only \`"web"\`: see vmbot's README.`;
  }
  if (/sufficient permission to run a pipeline/i.test(detail)) {
    return `${refused} The branch is protected: the bot's token needs a user with the Maintainer role on the project (or one allowed to merge into that branch).`;
  }
  // GitLab quotes the input's name in backquotes; the escaped detail has them as quotes.
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

function forbiddenWords(error: DetailOf<"gitlab_forbidden">): string {
  const { ask } = error;
  if (ask.what === "erase_artifacts") {
    return `GitLab did not let the bot delete the plan's artifacts of job #${ask.jobId} (403 Forbidden): that needs the Maintainer role on the project for the bot's token.`;
  }
  if (ask.what === "unlock_state" || ask.what === "read_lock") {
    return `GitLab did not let the bot unlock the Terraform state \`${ask.name}\` (403 Forbidden): unlocking needs the Maintainer role on the project for the bot's token.`;
  }
  return `GitLab did not let the bot ${gitlabDoing(ask)} in ${quotedProject(error.project)} (403 Forbidden): its token needs the api scope, and its user the Maintainer role on the project (pipelines on the protected default branch and the Terraform state lock need it).`;
}

function gitlabWords(error: GitlabFailure): string {
  const doing = gitlabDoing(error.ask);
  switch (error.code) {
    case "gitlab_unauthorized":
      return `GitLab refused the bot's token (401 Unauthorized): it is invalid, expired or revoked. An admin needs to give vmbot a new token with the api scope (GITLAB_TOKEN).`;
    case "gitlab_forbidden":
      return forbiddenWords(error);
    case "gitlab_project_not_found":
      return error.status === undefined
        ? `GitLab has no project ${quotedProject(error.project)} that the bot's token can see: check GITLAB_PROJECT, and that the token's user is a member of the project.`
        : `GitLab has no project ${quotedProject(error.project)} that the bot's token can see (404 Not Found): check GITLAB_PROJECT, and that the token's user is a member of the project.`;
    case "gitlab_not_found":
      return `GitLab could not find what the bot needed to ${doing} (404 Not Found): it may have been deleted.`;
    case "gitlab_state_not_found":
      return `GitLab has no Terraform state \`${error.name}\` in the project (404 Not Found).`;
    case "gitlab_bad_request":
      return badRequestWords(error);
    case "gitlab_rate_limited":
      return `GitLab is rate-limiting the bot (429 Too Many Requests), so it could not ${doing}. Try again in a minute.`;
    case "gitlab_unavailable":
      return error.gaveUp
        ? `GitLab stayed busy or unavailable (it kept answering 429 or 5xx) when the bot tried to ${doing}, and the bot gave up after several tries. Try again in a few minutes.`
        : `GitLab answered with an error (${error.status || "no status"}) when the bot tried to ${doing}. GitLab may be down or upgrading; try again later.`;
    case "gitlab_timeout":
      return `GitLab at ${error.url} did not answer within ${gitlabSeconds(error.timeoutMs)} when the bot tried to ${doing}. It may be overloaded; check that the pipeline was not created before trying again.`;
    case "gitlab_unreachable":
      return `GitLab at ${error.url} could not be reached (${error.reason}), so the bot could not ${doing}. Check that GitLab is up and GITLAB_URL is right.`;
    case "gitlab_bad_response":
      return error.statesOver === undefined
        ? `The bot could not ${doing}: GitLab's answer was not what the bot expected. The details are in the bot's log.`
        : `The project ${quotedProject(error.project ?? "")} has more than ${error.statesOver} Terraform states; vmbot reads no more than that.`;
  }
}

/** What the bot was doing with Vault, e.g. "read `secret/proxmox`". */
function vaultDoing(ask: VaultAsk): string {
  switch (ask.what) {
    case "read":
      return `read \`${ask.path}\``;
    case "log_in":
      return "log in";
    case "log_in_again":
      return "log in again";
    case "check_token":
      return "check VAULT_TOKEN";
    case "renew_token":
      return "renew its token";
  }
}

/** Vault's own words in brackets after `before`, or nothing when it gave none. */
const vaultSaid = (message: string, before: string) =>
  message === "" ? "" : `${before}${escapeMrkdwn(message)}`;

function vaultFailedWords(error: DetailOf<"vault_failed"> & VaultFailure, doing: string): string {
  switch (error.why) {
    case "status":
      return `Vault at ${error.addr} answered ${error.status}${error.message === "" ? "" : ` (${escapeMrkdwn(error.message)})`} when vmbot tried to ${doing}.`;
    case "token_file":
      return `vmbot could not ${doing} in Vault: ${escapeMrkdwn(`the Kubernetes service-account token cannot be read from ${error.file} (VAULT_K8S_TOKEN_FILE): ${error.reason}`)}.`;
    case "other":
      return `vmbot could not ${doing} in Vault: ${error.message === undefined ? "unexpected answer" : escapeMrkdwn(error.message)}.`;
  }
}

function vaultWords(error: VaultFailure): string {
  const doing = vaultDoing(error.ask);
  switch (error.code) {
    case "vault_sealed":
      return `Vault at ${error.addr} is sealed (503), so vmbot could not ${doing}. It works again once Vault is unsealed.`;
    case "vault_denied":
      return `Vault denied vmbot permission to ${doing} (403${vaultSaid(error.message, ": ")}). Check the policy attached to vmbot's Vault login.`;
    case "vault_missing":
      return error.ask.what === "read"
        ? `Vault has no secret \`${error.ask.path}\` (404): check VAULT_KV_MOUNT and the path, and that the mount is KV version 2.`
        : `Vault at ${error.addr} has nothing at the path vmbot uses to ${doing} (404): check the auth method's mount.`;
    case "vault_login_failed":
      return `Vault refused vmbot's login when it tried to ${doing} (${error.status}${vaultSaid(error.message, ": ")}). Check VAULT_ROLE_ID and VAULT_SECRET_ID, VAULT_K8S_ROLE or VAULT_TOKEN.`;
    case "vault_failed":
      return vaultFailedWords(error, doing);
    case "vault_timeout":
      return `Vault at ${error.addr} did not answer within ${tenths(error.timeoutMs)} when vmbot tried to ${doing}.`;
    case "vault_unreachable":
      return `Vault at ${error.addr} could not be reached (${error.reason}) when vmbot tried to ${doing}. Check that Vault is up and VAULT_ADDR is right.`;
  }
}

function proxmoxWords(error: ProxmoxFailure): string {
  switch (error.code) {
    case "proxmox_tls":
      return error.why === "ca_unreadable"
        ? `PROXMOX_CA_FILE (${error.caFile}) cannot be read: ${error.reason}.`
        : `Proxmox's TLS certificate at ${error.url} is not trusted (${error.reason}): set PROXMOX_CA_FILE to the cluster's CA (/etc/pve/pve-root-ca.pem on a node), or PROXMOX_INSECURE=true.`;
    case "proxmox_unauthorized":
      return `Proxmox at ${error.url} refused vmbot's API token (401): it is wrong, expired or deleted. Check PROXMOX_TOKEN or the \`api_token\` in Vault (user@realm!tokenid=secret).`;
    case "proxmox_forbidden":
      return `Proxmox at ${error.url} did not let vmbot's API token list the nodes (403): give it the PVEAuditor role on / (Sys.Audit).`;
    case "proxmox_failed":
      return error.status === undefined
        ? `Proxmox at ${error.url} answered with something that is not its node list; is PROXMOX_URL the API's address (https://host:8006)?`
        : `Proxmox at ${error.url} answered ${error.status} when vmbot asked for the nodes.`;
    case "proxmox_timeout":
      return `Proxmox at ${error.url} did not answer within ${tenths(error.timeoutMs)}.`;
    case "proxmox_unreachable":
      return `Proxmox at ${error.url} could not be reached (${error.reason}). Check that it is up and PROXMOX_URL is right.`;
  }
}

const isVault = (error: ErrorDetail): error is VaultFailure => "ask" in error && "addr" in error;
const isGitlab = (error: ErrorDetail): error is GitlabFailure => "ask" in error && !isVault(error);

/** The words for one error's code and data. */
export function errorWords(error: ErrorDetail): string {
  if (isVault(error)) return vaultWords(error);
  if (isGitlab(error)) return gitlabWords(error);
  switch (error.code) {
    case "internal":
      return `Not a job ID: ${error.jobId}.`;
    case "vault_missing":
      return error.why === "no_key"
        ? `The Vault secret \`${error.path}\` has no key \`${error.key}\`: add it there (KV version 2).`
        : `The \`api_token\` in the Vault secret \`${error.path}\` does not look like a Proxmox API token (user@realm!tokenid=secret).`;
    case "vault_failed":
      return `The Vault secret \`${error.path}\` is not a KV version 2 secret: check VAULT_KV_MOUNT.`;
    default:
      return proxmoxWords(error);
  }
}
