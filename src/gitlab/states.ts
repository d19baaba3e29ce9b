import { GitbeakerRequestError } from "@gitbeaker/rest";
import { z } from "zod";
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
  type StateLock,
  type TerraformState,
} from "./port.js";
import { safeJson } from "../safe-json.js";

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

/**
 * `projects/:id/terraform/state/:name/lock`, relative to the API's root: called through the
 * requester, which gives a call no timeout of its own (gitbeaker's resources do).
 */
const lockPath = (c: GitlabClient, name: string) =>
  `projects/${encodeURIComponent(c.options.project)}/terraform/state/${encodeURIComponent(name)}/lock`;

/** The HTTP status of a GitLab refusal, or undefined for any other failure. */
const refusalStatus = (error: unknown) =>
  error instanceof GitbeakerRequestError ? error.cause?.response.status : undefined;

/** A state's lock info as the lock endpoint answers it (`lock_info.to_json`). */
const LockInfoSchema = z.object({ ID: z.string(), Created: z.string().nullish() });

/** What the probe says of itself, should a person look at the state while it holds the lock. */
const PROBE_INFO = "vmbot reads the lock's ID to remove only the lock an admin confirmed";

/**
 * The lock on a state with its ID, from the lock endpoint: with the state locked it answers 409
 * and the holder's lock info, changing nothing; with the state free it takes the lock as
 * `probeId` and answers 200 (`taken`), and the caller is to release it.
 */
async function readTerraformStateLock(
  c: GitlabClient,
  name: string,
  probeId: string,
): Promise<StateLock> {
  const ask: GitlabAsk = { what: "read_lock", name };
  const info = {
    ID: probeId,
    Operation: "OperationTypeInvalid",
    Info: PROBE_INFO,
    Who: "vmbot",
    Version: "",
    Created: new Date().toISOString(),
    Path: "",
  };
  let body: unknown;
  let taken = true;
  try {
    const response = await c.withToken(() =>
      c.api.Projects.requester.post(lockPath(c, name), {
        body: info,
        signal: AbortSignal.timeout(c.timeoutMs),
      }),
    );
    body = response.body;
  } catch (error) {
    if (refusalStatus(error) !== 409) throw stateError(c, ask, name, error);
    body = (error as GitbeakerRequestError).cause?.description;
    taken = false;
  }
  // Sent past Grape's JSON formatter: plain text holding JSON.
  const parsed = LockInfoSchema.safeParse(typeof body === "string" ? safeJson(body) : body);
  if (!parsed.success) {
    throw new VmbotError({ code: "gitlab_bad_response", ask, project: c.options.project });
  }
  const { ID: id, Created: created } = parsed.data;
  return { id, created: created ?? null, taken: taken || id === probeId };
}

/** A failure of the state API, typed: a missing state is `gitlab_state_not_found`. */
function stateError(c: GitlabClient, ask: GitlabAsk, name: string, error: unknown): VmbotError {
  const mapped = gitlabError(error, c.context(ask));
  if (mapped.code === "gitlab_not_found") {
    return new VmbotError({ code: "gitlab_state_not_found", ask, name }, { cause: error });
  }
  return mapped;
}

/**
 * Removes a state's lock through the state API: the lock `lockId` names, or any lock when none
 * is named (a force-unlock). False when GitLab refused because the state holds no lock of that
 * ID (409): another, or none.
 */
async function unlockTerraformState(
  c: GitlabClient,
  name: string,
  lockId?: string,
): Promise<boolean> {
  const ask: GitlabAsk = { what: "unlock_state", name };
  try {
    await c.withToken(async () => {
      if (lockId === undefined) {
        await c.api.ProjectTerraformState.removeTerraformStateLock(c.options.project, name);
      } else {
        await c.api.Projects.requester.delete(lockPath(c, name), {
          searchParams: { ID: lockId },
          signal: AbortSignal.timeout(c.timeoutMs),
        });
      }
    });
    return true;
  } catch (error) {
    if (lockId !== undefined && refusalStatus(error) === 409) return false;
    throw stateError(c, ask, name, error);
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
): Pick<
  GitlabPort,
  "terraformStates" | "readTerraformStateLock" | "unlockTerraformState" | "about"
> {
  return {
    terraformStates: () => terraformStates(c),
    readTerraformStateLock: (name, probeId) => readTerraformStateLock(c, name, probeId),
    unlockTerraformState: (name, lockId) => unlockTerraformState(c, name, lockId),
    about: () => about(c),
  };
}
