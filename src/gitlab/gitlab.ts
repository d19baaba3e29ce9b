import { Gitlab, GitbeakerRequestError } from "@gitbeaker/rest";
import { z } from "zod";
import { VmbotError } from "../errors.js";
import { fixedSecret, type SecretSource } from "../secrets.js";
import type { PipelineParams } from "../vm/spec.js";
import { gitlabError } from "./errors.js";
import { readCapped, type JobLog } from "./job-log.js";
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
});

export interface Job {
  id: number;
  name: string;
  stage: string;
  status: string;
  webUrl: string;
  finishedAt: string | null;
}

const toJob = (job: z.infer<typeof JobSchema>): Job => ({
  id: job.id,
  name: job.name,
  stage: job.stage,
  status: job.status,
  webUrl: job.web_url,
  finishedAt: job.finished_at ?? null,
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
  /** The project's pipelines on the configured ref changed since `updatedAfter` (ISO 8601). */
  changedPipelines(updatedAfter: string): Promise<PipelineSummary[]>;
  pipeline(pipelineId: number): Promise<PipelineSummary>;
  pipelineJobs(pipelineId: number): Promise<Job[]>;
  /**
   * A job's log (its trace), read as a stream and no further than `maxBytes`: a log of any size
   * costs at most that much memory.
   */
  jobLog(jobId: number, maxBytes: number): Promise<JobLog>;
  playJob(jobId: number): Promise<Job>;
  cancelPipeline(pipelineId: number): Promise<PipelineSummary>;
  /** A file from a job's artifacts, or undefined when the job has none by that path. */
  jobArtifact(jobId: number, path: string): Promise<string | undefined>;
  /**
   * The project's Terraform states with their locks. Read through GraphQL: no REST call reads
   * a lock without taking it.
   */
  terraformStates(): Promise<TerraformState[]>;
  /** Force-unlocks a state through the state API; needs the Maintainer role. */
  unlockTerraformState(name: string): Promise<void>;
}

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
          }),
        })
        .nullable(),
    })
    .nullish(),
  errors: z.array(z.object({ message: z.string() })).optional(),
});

const TERRAFORM_STATES_QUERY = `query vmbotTerraformStates($path: ID!) {
  project(fullPath: $path) {
    terraformStates {
      nodes { name lockedAt lockedByUser { username } }
    }
  }
}`;

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

  const context = (doing: string) => ({
    url: options.url,
    project: options.project,
    doing,
    timeoutMs,
  });

  /** Runs one GitLab call, turning its failure into words and its answer into checked data. */
  async function call<T>(doing: string, schema: z.ZodType<T>, run: () => Promise<unknown>) {
    let response: unknown;
    try {
      response = await withToken(run);
    } catch (error) {
      throw gitlabError(error, context(doing));
    }
    const parsed = schema.safeParse(response);
    if (!parsed.success) throw gitlabError(parsed.error, context(doing));
    return parsed.data;
  }

  let fullPath: Promise<string> | undefined;
  /** GraphQL names projects by path; GITLAB_PROJECT may be a numeric ID. */
  function projectPath(): Promise<string> {
    if (!/^\d+$/.test(options.project)) return Promise.resolve(options.project);
    fullPath ??= call("read the project", z.object({ path_with_namespace: z.string() }), () =>
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
  const toSummary = (p: z.infer<typeof PipelineListItemSchema>): PipelineSummary => ({
    id: p.id,
    status: p.status,
    updatedAt: p.updated_at,
    webUrl: p.web_url,
  });

  return {
    async changedPipelines(updatedAfter) {
      const list = await call("list pipelines", z.array(PipelineListItemSchema), () =>
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
        await call(`read pipeline #${pipelineId}`, PipelineListItemSchema, () =>
          api.Pipelines.show(options.project, pipelineId),
        ),
      );
    },

    async pipelineJobs(pipelineId) {
      const jobs = await call(`list the jobs of pipeline #${pipelineId}`, z.array(JobSchema), () =>
        api.Jobs.all(options.project, { pipelineId, perPage: 100 }),
      );
      return jobs.map(toJob);
    },

    async jobLog(jobId, maxBytes) {
      const doing = `read the log of job #${jobId}`;
      const path = `projects/${encodeURIComponent(options.project)}/jobs/${jobId}/trace`;
      try {
        // Through gitbeaker's own requester (token, retries), as a stream: the body is read
        // only as far as the cap, and the timeout covers the whole read.
        const response = await withToken(() =>
          api.Jobs.requester.get(path, {
            asStream: true,
            signal: AbortSignal.timeout(timeoutMs),
          }),
        );
        return await readCapped(response.body as ReadableStream<Uint8Array> | null, maxBytes);
      } catch (error) {
        throw gitlabError(error, context(doing));
      }
    },

    async playJob(jobId) {
      return toJob(
        await call(`start job #${jobId}`, JobSchema, () => api.Jobs.play(options.project, jobId)),
      );
    },

    async cancelPipeline(pipelineId) {
      return toSummary(
        await call(`cancel pipeline #${pipelineId}`, PipelineListItemSchema, () =>
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
        const mapped = gitlabError(error, context(`read ${path} from job #${jobId}`));
        if (mapped.code === "gitlab_not_found") return undefined;
        throw mapped;
      }
    },

    async terraformStates() {
      const path = await projectPath();
      const doing = "read the project's Terraform states";
      const answer = await call(doing, TerraformStatesSchema, async () => {
        // Through gitbeaker's own requester (token, timeout, retries): GraphQL lives beside /api/v4.
        const response = await api.Projects.requester.post("../graphql", {
          body: { query: TERRAFORM_STATES_QUERY, variables: { path } },
        });
        return response.body;
      });
      if (answer.errors !== undefined && answer.errors.length > 0) {
        throw gitlabError(
          new Error(answer.errors.map((error) => error.message).join("; ")),
          context(doing),
        );
      }
      const project = answer.data?.project;
      if (project === undefined || project === null) {
        throw new VmbotError(
          "gitlab_project_not_found",
          `GitLab has no project \`${path}\` that the bot's token can see: check GITLAB_PROJECT, and that the token's user is a member of the project.`,
        );
      }
      return project.terraformStates.nodes.map((state) => ({
        name: state.name,
        lockedAt: state.lockedAt ?? null,
        lockedBy: state.lockedByUser?.username ?? null,
      }));
    },

    async unlockTerraformState(name) {
      const doing = `unlock the Terraform state ${name}`;
      try {
        await withToken(() =>
          api.ProjectTerraformState.removeTerraformStateLock(options.project, name),
        );
      } catch (error) {
        const mapped = gitlabError(error, context(doing));
        if (mapped.code === "gitlab_forbidden") {
          throw new VmbotError(
            "gitlab_forbidden",
            `GitLab did not let the bot unlock the Terraform state \`${name}\` (403 Forbidden): unlocking needs the Maintainer role on the project for the bot's token.`,
            { cause: error },
          );
        }
        if (mapped.code === "gitlab_not_found") {
          throw new VmbotError(
            "gitlab_state_not_found",
            `GitLab has no Terraform state \`${name}\` in the project (404 Not Found).`,
            { cause: error },
          );
        }
        throw mapped;
      }
    },

    async findPipeline(requestId, createdAfter) {
      const listed = await call("look for the request's pipeline", z.array(CandidateSchema), () =>
        api.Pipelines.all(options.project, {
          ref: options.ref,
          updatedAfter: createdAfter,
          orderBy: "id",
          sort: "asc",
          perPage: 100,
        }),
      );
      const candidates = listed.filter(
        (p) => (p.source === undefined || p.source === "api") && p.created_at >= createdAfter,
      );
      const toPipeline = (p: z.infer<typeof CandidateSchema>) => ({
        id: p.id,
        iid: p.iid,
        status: p.status,
        webUrl: p.web_url,
      });
      if (options.tagRequests === false) {
        const first = candidates[0];
        return first === undefined ? undefined : { ...toPipeline(first), sure: false };
      }
      for (const candidate of candidates) {
        const variables = await call(
          `read the variables of pipeline #${candidate.id}`,
          z.array(z.object({ key: z.string(), value: z.string().nullish() })),
          () => api.Pipelines.allVariables(options.project, candidate.id),
        );
        if (variables.some((v) => v.key === REQUEST_ID_VARIABLE && v.value === requestId)) {
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
      const body = {
        ...(options.pipelineParams === "inputs" ? { inputs: params.inputs } : {}),
        ...(variableList.length > 0 ? { variables: variableList } : {}),
      };
      let response: unknown;
      try {
        response = await withToken(() => api.Pipelines.create(options.project, options.ref, body));
      } catch (error) {
        throw gitlabError(error, context("create the pipeline"));
      }
      const parsed = PipelineSchema.safeParse(response);
      if (!parsed.success) {
        throw gitlabError(parsed.error, context("create the pipeline"));
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
