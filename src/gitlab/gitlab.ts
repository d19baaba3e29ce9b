import { Gitlab, GitbeakerRequestError } from "@gitbeaker/rest";
import { z } from "zod";
import { VmbotError, type GitlabAsk } from "../errors.js";
import { fixedSecret, type SecretSource } from "../secrets.js";
import type { PipelineParams } from "../vm/spec.js";
import { gitlabError } from "./errors.js";
import { streamCapped, type JobLog, type LogConsumer } from "./job-log.js";
import { createRequester, type RetryPolicy } from "./requester.js";

/** A token, or where to read the current one (e.g. Vault, re-read when GitLab refuses it). */
export type GitlabToken = string | SecretSource;

export const PipelineSchema = z.object({
  id: z.number().int(),
  iid: z.number().int().optional(),
  status: z.string(),
  web_url: z.url(),
});

export interface Pipeline {
  id: number;
  iid: number | undefined;
  status: string;
  webUrl: string;
}

const PipelineListItemSchema = z.object({
  id: z.number().int(),
  status: z.string(),
  updated_at: z.string(),
  web_url: z.url(),
});

export interface PipelineSummary {
  id: number;
  status: string;
  updatedAt: string;
  webUrl: string;
}

const JobSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  stage: z.string(),
  status: z.string(),
  web_url: z.url(),
  finished_at: z.string().nullish(),
  /** Who created the job, or played it last. */
  user: z.object({ username: z.string() }).nullish(),
  /** The artifacts archive, while the job has one. */
  artifacts_file: z.object({ filename: z.string() }).nullish(),
});

export interface Job {
  id: number;
  name: string;
  stage: string;
  status: string;
  webUrl: string;
  finishedAt: string | null;
  /** The GitLab username of who started the job (for a manual job: who played it). */
  user: string | null;
  hasArtifacts: boolean;
}

const toJob = (job: z.infer<typeof JobSchema>): Job => ({
  id: job.id,
  name: job.name,
  stage: job.stage,
  status: job.status,
  webUrl: job.web_url,
  finishedAt: job.finished_at ?? null,
  user: job.user?.username ?? null,
  hasArtifacts: job.artifacts_file !== undefined && job.artifacts_file !== null,
});

/** What vmbot does with GitLab, in its own words. */
export interface GitlabPort {
  /**
   * Starts the VM pipeline on the configured ref. In variables mode the inputs travel as
   * variables named after them in upper case.
   */
  triggerPipeline(params: PipelineParams, requestId?: string): Promise<Pipeline>;
  /**
   * The pipeline vmbot created for a request, found after a crash between creating it and
   * recording it: by its VMBOT_REQUEST_ID variable, or (when requests are not tagged) the first
   * API pipeline on the ref created since `createdAfter`, marked `sure: false`.
   */
  findPipeline(
    requestId: string,
    createdAfter: string,
  ): Promise<(Pipeline & { sure: boolean }) | undefined>;
  /**
   * Every pipeline on the ref created since `createdAfter` that carries this request's
   * VMBOT_REQUEST_ID, oldest first, skipping the IDs in `known` (already looked at); empty when
   * requests are not tagged.
   */
  requestPipelines(
    requestId: string,
    createdAfter: string,
    known?: ReadonlySet<number>,
  ): Promise<{ pipelines: Pipeline[]; looked: number[] }>;
  /** The project's pipelines on the configured ref changed since `updatedAfter` (ISO 8601). */
  changedPipelines(updatedAfter: string): Promise<PipelineSummary[]>;
  pipeline(pipelineId: number): Promise<PipelineSummary>;
  pipelineJobs(pipelineId: number): Promise<Job[]>;
  job(jobId: number): Promise<Job>;
  /**
   * A job's log (its trace), read as a stream and no further than `maxBytes`: a log of any size
   * costs at most that much memory.
   */
  jobLog(jobId: number, maxBytes: number): Promise<JobLog>;
  /**
   * A job's log handed to `consume` a piece at a time as it arrives, no further than
   * `maxBytes`: nothing of it is kept, so memory does not grow with the log.
   */
  streamJobLog(
    jobId: number,
    maxBytes: number,
    consume: LogConsumer,
  ): Promise<{ truncated: boolean }>;
  playJob(jobId: number): Promise<Job>;
  /**
   * Runs a finished (failed, canceled or successful) job again: GitLab creates a NEW job, with
   * its own ID, and marks the old one retried (`POST /projects/:id/jobs/:job_id/retry`).
   */
  retryJob(jobId: number): Promise<Job>;
  cancelPipeline(pipelineId: number): Promise<PipelineSummary>;
  /** A file from a job's artifacts, or undefined when the job has none by that path. */
  jobArtifact(jobId: number, path: string): Promise<string | undefined>;
  /**
   * Deletes a job's artifacts (its log stays), e.g. a rejected plan's `tfplan`, so that the
   * apply job has no plan to apply. Needs the Maintainer role.
   */
  eraseJobArtifacts(jobId: number): Promise<void>;
  /**
   * The project's Terraform states with their locks. Read through GraphQL: no REST call reads
   * a lock without taking it.
   */
  terraformStates(): Promise<TerraformState[]>;
  /** Force-unlocks a state through the state API; needs the Maintainer role. */
  unlockTerraformState(name: string): Promise<void>;
  /** GitLab's version and the token's own standing in the project, for the start-up check. */
  about(): Promise<GitlabAbout>;
}

export interface GitlabAbout {
  /** As GitLab reports it, e.g. `18.2.1` or `17.9.3-ee`. */
  version: string;
  /** The token user's access level in the project (30 Developer, 40 Maintainer, …), if any. */
  accessLevel: number | null;
  /** The project's minimum role for pipeline variables, when the token may see it. */
  variablesMinimumRole: string | null;
}

const MetadataSchema = z.object({ version: z.string() });

const AccessSchema = z.object({ access_level: z.number().int() }).nullish();

const ProjectAboutSchema = z.object({
  ci_pipeline_variables_minimum_override_role: z.string().nullish(),
  permissions: z
    .object({ project_access: AccessSchema, group_access: AccessSchema })
    .partial()
    .nullish(),
});

export type { JobLog };

export interface TerraformState {
  name: string;
  /** ISO 8601, or null when the state is not locked. */
  lockedAt: string | null;
  /** The lock holder's GitLab username, when GitLab knows it. */
  lockedBy: string | null;
}

const TerraformStatesSchema = z.object({
  data: z
    .object({
      project: z
        .object({
          terraformStates: z.object({
            nodes: z.array(
              z.object({
                name: z.string(),
                lockedAt: z.string().nullish(),
                lockedByUser: z.object({ username: z.string() }).nullish(),
              }),
            ),
            pageInfo: z
              .object({ hasNextPage: z.boolean(), endCursor: z.string().nullish() })
              .optional(),
          }),
        })
        .nullable(),
    })
    .nullish(),
  errors: z.array(z.object({ message: z.string() })).optional(),
});

/** A page of the project's states: GitLab gives at most 100 a page, and a cursor for more. */
const TERRAFORM_STATES_QUERY = `query vmbotTerraformStates($path: ID!, $after: String) {
  project(fullPath: $path) {
    terraformStates(first: 100, after: $after) {
      nodes { name lockedAt lockedByUser { username } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`;

/** Pages of states read at most: 5,000 states. */
const MAX_STATE_PAGES = 50;

const PIPELINE_INPUTS_QUERY = `query vmbotPipelineInputs($path: ID!, $ref: String!) {
  project(fullPath: $path) {
    ciPipelineCreationInputs(ref: $ref) { name type }
  }
}`;

const PipelineInputsSchema = z.object({
  data: z
    .object({
      project: z
        .object({
          ciPipelineCreationInputs: z
            .array(z.object({ name: z.string(), type: z.string().nullish() }))
            .nullish(),
        })
        .nullish(),
    })
    .nullish(),
  errors: z.array(z.object({ message: z.string() })).optional(),
});

/** How long the pipeline's declared input types are trusted before they are read again. */
const INPUT_TYPES_MAX_AGE_MS = 10 * 60_000;

/**
 * The inputs typed as the pipeline declares them: a number where it says NUMBER, a string where
 * it says STRING (or nothing). Values of other declared types, or of undeclared inputs, go as
 * they are (GitLab then names the input it refuses).
 */
export function typedInputs(
  inputs: Readonly<Record<string, string | number>>,
  declared: ReadonlyMap<string, string>,
): Record<string, string | number> {
  return Object.fromEntries(
    Object.entries(inputs).map(([name, value]) => {
      const type = declared.get(name);
      if (type === "NUMBER" && typeof value === "string" && /^-?\d+(\.\d+)?$/.test(value)) {
        return [name, Number(value)];
      }
      if (type === "STRING" && typeof value === "number") return [name, String(value)];
      return [name, value];
    }),
  );
}

export interface GitlabOptions {
  url: string;
  token: GitlabToken;
  project: string;
  ref: string;
  pipelineParams: "inputs" | "variables";
  /** Send VMBOT_REQUEST_ID with every pipeline (needs pipeline variables allowed). Default true. */
  tagRequests?: boolean;
  timeoutMs?: number;
  retry?: RetryPolicy;
}

/** The pipeline variable that carries the request ID, so a restart can find its pipeline. */
export const REQUEST_ID_VARIABLE = "VMBOT_REQUEST_ID";

const CandidateSchema = z.object({
  id: z.number().int(),
  iid: z.number().int().optional(),
  status: z.string(),
  source: z.string().optional(),
  created_at: z.string(),
  web_url: z.url(),
});

/** A CI/CD variable key for an input name: `vm_name` → `VM_NAME`. */
export function variableKey(inputName: string): string {
  return inputName.toUpperCase().replace(/[^A-Z0-9_]/g, "_");
}

export function createGitlab(options: GitlabOptions): GitlabPort {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const token = typeof options.token === "string" ? fixedSecret(options.token) : options.token;
  const api = new Gitlab({
    host: options.url,
    token: () => token.get(),
    queryTimeout: timeoutMs,
    requesterFn: createRequester(options.retry),
  });

  /**
   * Runs a request; when GitLab refuses the token (401) and a re-read gives a different one
   * (rotated in Vault), runs it once more. GitLab acted on nothing it answered 401 to.
   */
  async function withToken<T>(run: () => Promise<T>): Promise<T> {
    const used = await token.get();
    try {
      return await run();
    } catch (error) {
      if (
        error instanceof GitbeakerRequestError &&
        error.cause?.response.status === 401 &&
        // A Vault failure here says more than GitLab's 401: it propagates.
        (await token.refresh(used))
      ) {
        return run();
      }
      throw error;
    }
  }

  const context = (ask: GitlabAsk) => ({
    url: options.url,
    project: options.project,
    ask,
    timeoutMs,
  });

  /** Runs one GitLab call, turning its failure into a typed error and its answer into checked data. */
  async function call<T>(ask: GitlabAsk, schema: z.ZodType<T>, run: () => Promise<unknown>) {
    let response: unknown;
    try {
      response = await withToken(run);
    } catch (error) {
      throw gitlabError(error, context(ask));
    }
    const parsed = schema.safeParse(response);
    if (!parsed.success) throw gitlabError(parsed.error, context(ask));
    return parsed.data;
  }

  let fullPath: Promise<string> | undefined;
  /** GraphQL names projects by path; GITLAB_PROJECT may be a numeric ID. */
  function projectPath(): Promise<string> {
    if (!/^\d+$/.test(options.project)) return Promise.resolve(options.project);
    fullPath ??= call({ what: "read_project" }, z.object({ path_with_namespace: z.string() }), () =>
      api.Projects.show(options.project),
    ).then(
      (project) => project.path_with_namespace,
      (error: unknown) => {
        fullPath = undefined;
        throw error;
      },
    );
    return fullPath;
  }
  /** API pipelines on the ref created since `createdAfter`, oldest first. */
  async function apiPipelinesSince(createdAfter: string, ask: GitlabAsk) {
    const listed = await call(ask, z.array(CandidateSchema), () =>
      api.Pipelines.all(options.project, {
        ref: options.ref,
        updatedAfter: createdAfter,
        orderBy: "id",
        sort: "asc",
        perPage: 100,
      }),
    );
    return listed.filter(
      (p) => (p.source === undefined || p.source === "api") && p.created_at >= createdAfter,
    );
  }

  /** Whether a pipeline carries VMBOT_REQUEST_ID = `requestId`. */
  async function carriesRequest(pipelineId: number, requestId: string): Promise<boolean> {
    const variables = await call(
      { what: "read_variables", pipelineId },
      z.array(z.object({ key: z.string(), value: z.string().nullish() })),
      () => api.Pipelines.allVariables(options.project, pipelineId),
    );
    return variables.some((v) => v.key === REQUEST_ID_VARIABLE && v.value === requestId);
  }

  const toPipeline = (p: z.infer<typeof CandidateSchema>): Pipeline => ({
    id: p.id,
    iid: p.iid,
    status: p.status,
    webUrl: p.web_url,
  });

  let inputTypes:
    { at: number; types: Promise<ReadonlyMap<string, string> | undefined> } | undefined;
  /**
   * The types the pipeline on the ref declares for its inputs, read through GraphQL where GitLab
   * offers it (`ciPipelineCreationInputs`), else undefined: then the inputs go as configured
   * (GITLAB_NUMBER_INPUTS).
   */
  function declaredInputTypes(): Promise<ReadonlyMap<string, string> | undefined> {
    if (inputTypes !== undefined && Date.now() - inputTypes.at < INPUT_TYPES_MAX_AGE_MS) {
      return inputTypes.types;
    }
    const types = (async () => {
      const path = await projectPath();
      const answer = await call({ what: "read_inputs" }, PipelineInputsSchema, async () => {
        const response = await api.Projects.requester.post("../graphql", {
          body: { query: PIPELINE_INPUTS_QUERY, variables: { path, ref: options.ref } },
        });
        return response.body;
      });
      const declared = answer.data?.project?.ciPipelineCreationInputs;
      if ((answer.errors ?? []).length > 0 || declared === undefined || declared === null) {
        return undefined;
      }
      return new Map(declared.map((input) => [input.name, input.type ?? "STRING"]));
    })().catch(() => undefined);
    inputTypes = { at: Date.now(), types };
    return types;
  }

  /**
   * Reads a job's log through gitbeaker's own requester (token, retries) as a stream, up to
   * `maxBytes`; the timeout covers the whole read. What `consume` throws comes out as it is: it
   * is not GitLab's failure.
   */
  async function readJobLog(
    jobId: number,
    maxBytes: number,
    consume: LogConsumer,
  ): Promise<{ truncated: boolean }> {
    const path = `projects/${encodeURIComponent(options.project)}/jobs/${jobId}/trace`;
    const failed: { error?: unknown } = {};
    try {
      const response = await withToken(() =>
        api.Jobs.requester.get(path, { asStream: true, signal: AbortSignal.timeout(timeoutMs) }),
      );
      return await streamCapped(
        response.body as ReadableStream<Uint8Array> | null,
        maxBytes,
        async (text) => {
          try {
            await consume(text);
          } catch (error) {
            failed.error = error;
            throw error;
          }
        },
      );
    } catch (error) {
      if ("error" in failed) throw failed.error;
      throw gitlabError(error, context({ what: "read_log", jobId }));
    }
  }

  const toSummary = (p: z.infer<typeof PipelineListItemSchema>): PipelineSummary => ({
    id: p.id,
    status: p.status,
    updatedAt: p.updated_at,
    webUrl: p.web_url,
  });

  return {
    async changedPipelines(updatedAfter) {
      const list = await call({ what: "list_pipelines" }, z.array(PipelineListItemSchema), () =>
        api.Pipelines.all(options.project, {
          ref: options.ref,
          updatedAfter,
          orderBy: "updated_at",
          sort: "asc",
          perPage: 100,
        }),
      );
      return list.map(toSummary);
    },

    async pipeline(pipelineId) {
      return toSummary(
        await call({ what: "read_pipeline", pipelineId }, PipelineListItemSchema, () =>
          api.Pipelines.show(options.project, pipelineId),
        ),
      );
    },

    async pipelineJobs(pipelineId) {
      const jobs = await call({ what: "list_jobs", pipelineId }, z.array(JobSchema), () =>
        api.Jobs.all(options.project, { pipelineId, perPage: 100 }),
      );
      return jobs.map(toJob);
    },

    async job(jobId) {
      return toJob(
        await call({ what: "read_job", jobId }, JobSchema, () =>
          api.Jobs.show(options.project, jobId),
        ),
      );
    },

    async jobLog(jobId, maxBytes) {
      const parts: string[] = [];
      const { truncated } = await readJobLog(jobId, maxBytes, (text) => {
        parts.push(text);
      });
      return { text: parts.join(""), truncated };
    },

    streamJobLog: readJobLog,

    async playJob(jobId) {
      return toJob(
        await call({ what: "play_job", jobId }, JobSchema, () =>
          api.Jobs.play(options.project, jobId),
        ),
      );
    },

    async retryJob(jobId) {
      return toJob(
        await call({ what: "retry_job", jobId }, JobSchema, () =>
          api.Jobs.retry(options.project, jobId),
        ),
      );
    },

    async cancelPipeline(pipelineId) {
      return toSummary(
        await call({ what: "cancel_pipeline", pipelineId }, PipelineListItemSchema, () =>
          api.Pipelines.cancel(options.project, pipelineId),
        ),
      );
    },

    async jobArtifact(jobId, path) {
      try {
        const body: unknown = await withToken(() =>
          api.JobArtifacts.downloadArchive(options.project, { jobId, artifactPath: path }),
        );
        // The requester hands text/* over as a string, JSON already parsed, the rest as a Blob.
        if (typeof body === "string") return body;
        if (body instanceof Blob) return await body.text();
        return JSON.stringify(body);
      } catch (error) {
        const mapped = gitlabError(error, context({ what: "read_artifact", jobId, path }));
        if (mapped.code === "gitlab_not_found") return undefined;
        throw mapped;
      }
    },

    async eraseJobArtifacts(jobId) {
      // Without a job ID the same endpoint deletes every artifact of the project: never that.
      if (!Number.isSafeInteger(jobId) || jobId <= 0) {
        throw new VmbotError({ code: "internal", why: "not_a_job_id", jobId });
      }
      try {
        await withToken(() => api.JobArtifacts.remove(options.project, { jobId }));
      } catch (error) {
        throw gitlabError(error, context({ what: "erase_artifacts", jobId }));
      }
    },

    async terraformStates() {
      const path = await projectPath();
      const ask: GitlabAsk = { what: "read_states" };
      const states: TerraformState[] = [];
      let after: string | null = null;
      for (let page = 0; page < MAX_STATE_PAGES; page += 1) {
        const variables: { path: string; after: string | null } = { path, after };
        const answer = await call(ask, TerraformStatesSchema, async () => {
          // Through gitbeaker's own requester (token, timeout, retries): GraphQL lives beside /api/v4.
          const response = await api.Projects.requester.post("../graphql", {
            body: { query: TERRAFORM_STATES_QUERY, variables },
          });
          return response.body;
        });
        if (answer.errors !== undefined && answer.errors.length > 0) {
          throw gitlabError(
            new Error(answer.errors.map((error) => error.message).join("; ")),
            context(ask),
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
    },

    async unlockTerraformState(name) {
      const ask: GitlabAsk = { what: "unlock_state", name };
      try {
        await withToken(() =>
          api.ProjectTerraformState.removeTerraformStateLock(options.project, name),
        );
      } catch (error) {
        const mapped = gitlabError(error, context(ask));
        if (mapped.code === "gitlab_not_found") {
          throw new VmbotError({ code: "gitlab_state_not_found", ask, name }, { cause: error });
        }
        throw mapped;
      }
    },

    async about() {
      const [metadata, project] = await Promise.all([
        call({ what: "read_version" }, MetadataSchema, () => api.Metadata.show()),
        call({ what: "read_project" }, ProjectAboutSchema, () =>
          api.Projects.show(options.project),
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
    },

    async requestPipelines(requestId, createdAfter, known = new Set<number>()) {
      if (options.tagRequests === false) return { pipelines: [], looked: [] };
      const candidates = (
        await apiPipelinesSince(createdAfter, { what: "find_request_pipelines" })
      ).filter((p) => !known.has(p.id));
      const pipelines: Pipeline[] = [];
      for (const candidate of candidates) {
        if (await carriesRequest(candidate.id, requestId)) pipelines.push(toPipeline(candidate));
      }
      return { pipelines, looked: candidates.map((c) => c.id) };
    },

    async findPipeline(requestId, createdAfter) {
      const candidates = await apiPipelinesSince(createdAfter, { what: "find_request_pipeline" });
      if (options.tagRequests === false) {
        const first = candidates[0];
        return first === undefined ? undefined : { ...toPipeline(first), sure: false };
      }
      for (const candidate of candidates) {
        if (await carriesRequest(candidate.id, requestId)) {
          return { ...toPipeline(candidate), sure: true };
        }
      }
      return undefined;
    },

    async triggerPipeline(params, requestId) {
      const tagged =
        requestId === undefined || options.tagRequests === false
          ? params.variables
          : { ...params.variables, [REQUEST_ID_VARIABLE]: requestId };
      const variables =
        options.pipelineParams === "inputs"
          ? tagged
          : {
              ...Object.fromEntries(
                Object.entries(params.inputs).map(([name, value]) => [
                  variableKey(name),
                  String(value),
                ]),
              ),
              ...tagged,
            };
      const variableList = Object.entries(variables).map(([key, value]) => ({
        key,
        value,
        variable_type: "env_var" as const,
      }));
      let inputs = params.inputs;
      if (options.pipelineParams === "inputs") {
        const declared = await declaredInputTypes();
        if (declared !== undefined) inputs = typedInputs(inputs, declared);
      }
      const body = {
        ...(options.pipelineParams === "inputs" ? { inputs } : {}),
        ...(variableList.length > 0 ? { variables: variableList } : {}),
      };
      let response: unknown;
      try {
        response = await withToken(() => api.Pipelines.create(options.project, options.ref, body));
      } catch (error) {
        throw gitlabError(error, context({ what: "create_pipeline" }));
      }
      const parsed = PipelineSchema.safeParse(response);
      if (!parsed.success) {
        throw gitlabError(parsed.error, context({ what: "create_pipeline" }));
      }
      return {
        id: parsed.data.id,
        iid: parsed.data.iid,
        status: parsed.data.status,
        webUrl: parsed.data.web_url,
      };
    },
  };
}
