import { createGitlabClient, type GitlabOptions } from "./client.js";
import { jobCalls } from "./jobs.js";
import { pipelineCalls } from "./pipelines.js";
import type { GitlabPort } from "./port.js";
import { projectCalls } from "./states.js";

/**
 * GitLab through gitbeaker: one client (the bot's token, re-read when GitLab refuses a rotated
 * one; retries; a timeout on every call), and the port's calls by area.
 */

export type { GitlabOptions } from "./client.js";
export { typedInputs } from "./graphql.js";
export { REQUEST_ID_VARIABLE, variableKey } from "./pipelines.js";
export {
  PipelineSchema,
  type GitlabAbout,
  type GitlabPort,
  type GitlabToken,
  type Job,
  type JobLog,
  type Pipeline,
  type PipelineSummary,
  type StateLock,
  type TerraformState,
} from "./port.js";

export function createGitlab(options: GitlabOptions): GitlabPort {
  const client = createGitlabClient(options);
  return { ...pipelineCalls(client), ...jobCalls(client), ...projectCalls(client) };
}
