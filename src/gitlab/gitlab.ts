import { Gitlab } from "@gitbeaker/rest";
import { z } from "zod";
import { gitlabError } from "./errors.js";

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

export type PipelineParams = Record<string, string | number>;

/** What vmbot does with GitLab, in its own words. */
export interface GitlabPort {
  /** Starts the VM pipeline on the configured ref with these inputs (or variables). */
  triggerPipeline(params: PipelineParams): Promise<Pipeline>;
}

export interface GitlabOptions {
  url: string;
  token: GitlabToken;
  project: string;
  ref: string;
  pipelineParams: "inputs" | "variables";
  timeoutMs?: number;
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
  });
  const context = (doing: string) => ({
    url: options.url,
    project: options.project,
    doing,
    timeoutMs,
  });

  return {
    async triggerPipeline(params) {
      const body =
        options.pipelineParams === "inputs"
          ? { inputs: params }
          : {
              variables: Object.entries(params).map(([name, value]) => ({
                key: variableKey(name),
                value: String(value),
                variable_type: "env_var" as const,
              })),
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
