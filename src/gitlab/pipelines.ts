import { z } from "zod";
import type { GitlabAsk } from "../errors.js";
import type { PipelineParams } from "../vm/spec.js";
import type { GitlabClient } from "./client.js";
import { gitlabError } from "./errors.js";
import { byServerClock } from "./server-clock.js";
import {
  INPUT_TYPES_MAX_AGE_MS,
  PIPELINE_INPUTS_QUERY,
  PipelineInputsSchema,
  typedInputs,
} from "./graphql.js";
import {
  CandidateSchema,
  PipelineListItemSchema,
  PipelineSchema,
  toPipeline,
  toSummary,
  type GitlabPort,
  type Pipeline,
} from "./port.js";

/** The pipeline variable that carries the request ID, so a restart can find its pipeline. */
export const REQUEST_ID_VARIABLE = "VMBOT_REQUEST_ID";

/** A CI/CD variable key for an input name: `vm_name` → `VM_NAME`. */
export function variableKey(inputName: string): string {
  return inputName.toUpperCase().replace(/[^A-Z0-9_]/g, "_");
}

/**
 * API pipelines on the ref created since `createdAfter`, oldest first. `createdAfter` is the bot's
 * clock: GitLab stamps pipelines by its own, which may run behind (server-clock.ts).
 */
async function apiPipelinesSince(c: GitlabClient, since: string, ask: GitlabAsk) {
  const createdAfter = byServerClock(c.serverClock, since);
  const listed = await c.call(ask, z.array(CandidateSchema), () =>
    c.api.Pipelines.all(c.options.project, {
      ref: c.options.ref,
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
async function carriesRequest(
  c: GitlabClient,
  pipelineId: number,
  requestId: string,
): Promise<boolean> {
  const variables = await c.call(
    { what: "read_variables", pipelineId },
    z.array(z.object({ key: z.string(), value: z.string().nullish() })),
    () => c.api.Pipelines.allVariables(c.options.project, pipelineId),
  );
  return variables.some((v) => v.key === REQUEST_ID_VARIABLE && v.value === requestId);
}

/**
 * The types the pipeline on the ref declares for its inputs, read through GraphQL where GitLab
 * offers it (`ciPipelineCreationInputs`), else undefined: then the inputs go as configured
 * (GITLAB_NUMBER_INPUTS). Read again after a while.
 */
function createInputTypes(c: GitlabClient): () => Promise<ReadonlyMap<string, string> | undefined> {
  let inputTypes:
    { at: number; types: Promise<ReadonlyMap<string, string> | undefined> } | undefined;
  return () => {
    if (inputTypes !== undefined && Date.now() - inputTypes.at < INPUT_TYPES_MAX_AGE_MS) {
      return inputTypes.types;
    }
    const types = (async () => {
      const path = await c.projectPath();
      const answer = await c.call({ what: "read_inputs" }, PipelineInputsSchema, async () => {
        const response = await c.api.Projects.requester.post("../graphql", {
          body: { query: PIPELINE_INPUTS_QUERY, variables: { path, ref: c.options.ref } },
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
  };
}

/** The body of the create call: inputs or variables as configured, and the request's tag. */
async function pipelineBody(
  c: GitlabClient,
  declaredInputTypes: () => Promise<ReadonlyMap<string, string> | undefined>,
  params: PipelineParams,
  requestId: string | undefined,
) {
  const { options } = c;
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
  return {
    ...(options.pipelineParams === "inputs" ? { inputs } : {}),
    ...(variableList.length > 0 ? { variables: variableList } : {}),
  };
}

/** Every pipeline of this request created since `createdAfter`, skipping those in `known`. */
async function requestPipelines(
  c: GitlabClient,
  requestId: string,
  createdAfter: string,
  known: ReadonlySet<number> = new Set<number>(),
): Promise<{ pipelines: Pipeline[]; looked: number[] }> {
  if (c.options.tagRequests === false) return { pipelines: [], looked: [] };
  const candidates = (
    await apiPipelinesSince(c, createdAfter, { what: "find_request_pipelines" })
  ).filter((p) => !known.has(p.id));
  const pipelines: Pipeline[] = [];
  for (const candidate of candidates) {
    if (await carriesRequest(c, candidate.id, requestId)) pipelines.push(toPipeline(candidate));
  }
  return { pipelines, looked: candidates.map((p) => p.id) };
}

/** The pipeline this request created, by its tag, or by time alone when requests are not tagged. */
async function findPipeline(
  c: GitlabClient,
  requestId: string,
  createdAfter: string,
): Promise<(Pipeline & { sure: boolean }) | undefined> {
  const candidates = await apiPipelinesSince(c, createdAfter, { what: "find_request_pipeline" });
  if (c.options.tagRequests === false) {
    const first = candidates[0];
    return first === undefined ? undefined : { ...toPipeline(first), sure: false };
  }
  for (const candidate of candidates) {
    if (await carriesRequest(c, candidate.id, requestId)) {
      return { ...toPipeline(candidate), sure: true };
    }
  }
  return undefined;
}

type PipelineCalls = Pick<
  GitlabPort,
  | "triggerPipeline"
  | "findPipeline"
  | "requestPipelines"
  | "changedPipelines"
  | "lastPipelineChange"
  | "pipeline"
  | "cancelPipeline"
>;

/** Starting, finding, reading and canceling pipelines. */
export function pipelineCalls(c: GitlabClient): PipelineCalls {
  const { api, options } = c;
  const declaredInputTypes = createInputTypes(c);
  return {
    async changedPipelines(updatedAfter) {
      const list = await c.call({ what: "list_pipelines" }, z.array(PipelineListItemSchema), () =>
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

    async lastPipelineChange() {
      const [last] = await c.call({ what: "list_pipelines" }, z.array(PipelineListItemSchema), () =>
        api.Pipelines.all(options.project, {
          ref: options.ref,
          orderBy: "updated_at",
          sort: "desc",
          perPage: 1,
          maxPages: 1,
        }),
      );
      return last === undefined ? undefined : toSummary(last).updatedAt;
    },

    async pipeline(pipelineId) {
      return toSummary(
        await c.call({ what: "read_pipeline", pipelineId }, PipelineListItemSchema, () =>
          api.Pipelines.show(options.project, pipelineId),
        ),
      );
    },

    async cancelPipeline(pipelineId) {
      return toSummary(
        await c.call({ what: "cancel_pipeline", pipelineId }, PipelineListItemSchema, () =>
          api.Pipelines.cancel(options.project, pipelineId),
        ),
      );
    },

    requestPipelines: (requestId, createdAfter, known) =>
      requestPipelines(c, requestId, createdAfter, known),

    findPipeline: (requestId, createdAfter) => findPipeline(c, requestId, createdAfter),

    async triggerPipeline(params, requestId) {
      const body = await pipelineBody(c, declaredInputTypes, params, requestId);
      let response: unknown;
      try {
        response = await c.withToken(() =>
          api.Pipelines.create(options.project, options.ref, body),
        );
      } catch (error) {
        throw gitlabError(error, c.context({ what: "create_pipeline" }));
      }
      const parsed = PipelineSchema.safeParse(response);
      if (!parsed.success) {
        throw gitlabError(parsed.error, c.context({ what: "create_pipeline" }));
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
