import type { GitlabAsk } from "../errors.js";
import { VmbotError } from "../errors.js";
import type { GitlabClient } from "./client.js";
import { gitlabError } from "./errors.js";
import { MAX_STATE_PAGES, TERRAFORM_STATES_QUERY, TerraformStatesSchema } from "./graphql.js";
import {
  MetadataSchema,
  ProjectAboutSchema,
  type GitlabAbout,
  type GitlabPort,
  type TerraformState,
} from "./port.js";

/** The project's Terraform states with their locks, read through GraphQL a page at a time. */
async function terraformStates(c: GitlabClient): Promise<TerraformState[]> {
  const path = await c.projectPath();
  const ask: GitlabAsk = { what: "read_states" };
  const states: TerraformState[] = [];
  let after: string | null = null;
  for (let page = 0; page < MAX_STATE_PAGES; page += 1) {
    const variables: { path: string; after: string | null } = { path, after };
    const answer = await c.call(ask, TerraformStatesSchema, async () => {
      // Through gitbeaker's own requester (token, timeout, retries): GraphQL lives beside /api/v4.
      const response = await c.api.Projects.requester.post("../graphql", {
        body: { query: TERRAFORM_STATES_QUERY, variables },
      });
      return response.body;
    });
    if (answer.errors !== undefined && answer.errors.length > 0) {
      throw gitlabError(
        new Error(answer.errors.map((error) => error.message).join("; ")),
        c.context(ask),
      );
    }
    const project = answer.data?.project;
    if (project === undefined || project === null) {
      throw new VmbotError({ code: "gitlab_project_not_found", ask, project: path });
    }
    const connection = project.terraformStates;
    for (const state of connection.nodes) {
      states.push({
        name: state.name,
        lockedAt: state.lockedAt ?? null,
        lockedBy: state.lockedByUser?.username ?? null,
      });
    }
    const next = connection.pageInfo;
    if (next?.hasNextPage !== true || next.endCursor === undefined || next.endCursor === null) {
      return states;
    }
    after = next.endCursor;
  }
  throw new VmbotError({
    code: "gitlab_bad_response",
    ask,
    project: path,
    statesOver: MAX_STATE_PAGES * 100,
  });
}

/** Force-unlocks a state through the state API. */
async function unlockTerraformState(c: GitlabClient, name: string): Promise<void> {
  const ask: GitlabAsk = { what: "unlock_state", name };
  try {
    await c.withToken(() =>
      c.api.ProjectTerraformState.removeTerraformStateLock(c.options.project, name),
    );
  } catch (error) {
    const mapped = gitlabError(error, c.context(ask));
    if (mapped.code === "gitlab_not_found") {
      throw new VmbotError({ code: "gitlab_state_not_found", ask, name }, { cause: error });
    }
    throw mapped;
  }
}

/** GitLab's version and the token's own standing in the project. */
async function about(c: GitlabClient): Promise<GitlabAbout> {
  const [metadata, project] = await Promise.all([
    c.call({ what: "read_version" }, MetadataSchema, () => c.api.Metadata.show()),
    c.call({ what: "read_project" }, ProjectAboutSchema, () =>
      c.api.Projects.show(c.options.project),
    ),
  ]);
  const levels = [
    project.permissions?.project_access?.access_level,
    project.permissions?.group_access?.access_level,
  ].filter((level): level is number => level !== undefined);
  return {
    version: metadata.version,
    accessLevel: levels.length > 0 ? Math.max(...levels) : null,
    variablesMinimumRole: project.ci_pipeline_variables_minimum_override_role ?? null,
  };
}

/** The Terraform states and their locks, and what the start-up check reads. */
export function projectCalls(
  c: GitlabClient,
): Pick<GitlabPort, "terraformStates" | "unlockTerraformState" | "about"> {
  return {
    terraformStates: () => terraformStates(c),
    unlockTerraformState: (name) => unlockTerraformState(c, name),
    about: () => about(c),
  };
}
