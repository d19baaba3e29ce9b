import { Gitlab } from "@gitbeaker/rest";
import { z } from "zod";
import type { PipelineParams } from "../vm/spec.js";
import { gitlabError } from "./errors.js";
import { createRequester, type RetryPolicy } from "./requester.js";

/** A token, or a function that returns the current one (e.g. read from Vault). */
export type GitlabToken = string | (() => Promise<string>);

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
  triggerPipeline(params: PipelineParams): Promise<Pipeline>;
  /** The project's pipelines on the configured ref changed since `updatedAfter` (ISO 8601). */
  changedPipelines(updatedAfter: string): Promise<PipelineSummary[]>;
  pipeline(pipelineId: number): Promise<PipelineSummary>;
  pipelineJobs(pipelineId: number): Promise<Job[]>;
  jobLog(jobId: number): Promise<string>;
  playJob(jobId: number): Promise<Job>;
  cancelPipeline(pipelineId: number): Promise<PipelineSummary>;
  /** A file from a job's artifacts, or undefined when the job has none by that path. */
  jobArtifact(jobId: number, path: string): Promise<string | undefined>;
}

export interface GitlabOptions {
  url: string;
  token: GitlabToken;
  project: string;
  ref: string;
  pipelineParams: "inputs" | "variables";
  timeoutMs?: number;
  retry?: RetryPolicy;
}

/** A CI/CD variable key for an input name: `vm_name` → `VM_NAME`. */
export function variableKey(inputName: string): string {
  return inputName.toUpperCase().replace(/[^A-Z0-9_]/g, "_");
}

export function createGitlab(options: GitlabOptions): GitlabPort {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const api = new Gitlab({
    host: options.url,
    token: options.token,
    queryTimeout: timeoutMs,
    requesterFn: createRequester(options.retry),
  });
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
      response = await run();
    } catch (error) {
      throw gitlabError(error, context(doing));
    }
    const parsed = schema.safeParse(response);
    if (!parsed.success) throw gitlabError(parsed.error, context(doing));
    return parsed.data;
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

    async jobLog(jobId) {
      return call(`read the log of job #${jobId}`, z.string(), () =>
        api.Jobs.showLog(options.project, jobId),
      );
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
        const body: unknown = await api.JobArtifacts.downloadArchive(options.project, {
          jobId,
          artifactPath: path,
        });
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

    async triggerPipeline(params) {
      const variables =
        options.pipelineParams === "inputs"
          ? params.variables
          : {
              ...Object.fromEntries(
                Object.entries(params.inputs).map(([name, value]) => [
                  variableKey(name),
                  String(value),
                ]),
              ),
              ...params.variables,
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
        response = await api.Pipelines.create(options.project, options.ref, body);
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
