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

/** What vmbot does with GitLab, in its own words. */
export interface GitlabPort {
  /**
   * Starts the VM pipeline on the configured ref. In variables mode the inputs travel as
   * variables named after them in upper case.
   */
  triggerPipeline(params: PipelineParams): Promise<Pipeline>;
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

  return {
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
