/** REST: pipelines (create, show, list, variables, cancel). */
import { ALL_STATUSES, versionAtLeast } from "./defaults.js";
import { resolveInputs } from "./inputs.js";
import { grapeError, json, pipelineError, type Reply } from "./replies.js";
import { authorize, paginate, pipelineFor, projectFor, type RouteContext } from "./routing.js";
import { type FakePipeline, type PipelineContext, type PipelineVariable } from "./types.js";

/** POST /projects/:id/pipeline (Ci::CreatePipelineService, source `api`). */
export function createPipeline(ctx: RouteContext): Reply {
  // Grape validates the declared parameters before the endpoint looks up the project.
  const { ref } = ctx.input;
  if (ref === undefined || ref === null) throw grapeError(400, "ref is missing");
  if (typeof ref !== "string") throw grapeError(400, "ref is invalid");

  const variables = readVariables(ctx.input.variables);
  // The `inputs` parameter arrived in 17.10: an older GitLab drops it unread.
  const rawInputs =
    (versionAtLeast(ctx.model.version, 17, 10) ? ctx.input.inputs : undefined) ?? {};
  if (typeof rawInputs !== "object" || Array.isArray(rawInputs)) {
    throw grapeError(400, "inputs is invalid");
  }

  const project = projectFor(ctx);
  authorize(ctx, project, "create_pipeline");

  // The creation chain, in GitLab's order: variables, ref, config (inputs), then rules.
  if (variables.length > 0 && !ctx.model.can(project, "set_pipeline_variables")) {
    throw pipelineError("Insufficient permissions to set pipeline variables");
  }
  const counts = new Map<string, number>();
  for (const v of variables) counts.set(v.key, (counts.get(v.key) ?? 0) + 1);
  const duplicated = [...counts].filter(([, count]) => count > 1).map(([key]) => key);
  if (duplicated.length > 0) {
    const noun = duplicated.length === 1 ? "name" : "names";
    throw pipelineError(`Duplicate variable ${noun}: ${duplicated.join(", ")}`);
  }
  if (!ctx.model.can(project, "update_pipeline", ref)) {
    // Chain::Validate::Abilities: a protected ref needs push or merge rights to it.
    throw pipelineError(
      `You do not have sufficient permission to run a pipeline on '${ref}'. Please select a different branch or contact your administrator for assistance.`,
    );
  }
  if (!project.branches.has(ref) && !project.tags.has(ref))
    throw pipelineError("Reference not found");

  const resolved = resolveInputs(project.inputs, rawInputs as Record<string, unknown>);
  if ("error" in resolved) throw pipelineError(resolved.error);

  const context: PipelineContext = {
    source: "api",
    ref,
    inputs: resolved.inputs,
    variables: Object.fromEntries(variables.map((v) => [v.key, v.value])),
  };
  const jobs = project.pipeline.jobs.filter((job) => job.rules?.(context) ?? true);
  if (jobs.length === 0) {
    throw pipelineError(
      "Pipeline will not run for the selected trigger. The rules configuration prevented any jobs from being added to the pipeline.",
    );
  }
  const pipeline = ctx.model.createPipeline(project, ref, resolved.inputs, variables, jobs);
  return json(201, ctx.entities.pipeline(pipeline, false));
}

function readVariables(raw: unknown): PipelineVariable[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw grapeError(400, "variables is invalid");
  return raw.map((item: unknown, index) => {
    if (typeof item !== "object" || item === null) throw grapeError(400, "variables is invalid");
    const { key, value, variable_type: type } = item as Record<string, unknown>;
    const variableType = type ?? "env_var";
    if (variableType !== "env_var" && variableType !== "file") {
      throw grapeError(400, `variables[${index}][variable_type] does not have a valid value`);
    }
    const text = (v: unknown): string =>
      typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : "";
    return { key: text(key), value: text(value), variable_type: variableType };
  });
}

export function showPipeline(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  const pipeline = pipelineFor(ctx, project);
  authorize(ctx, project, "read_pipeline");
  return json(200, ctx.entities.pipeline(pipeline, true));
}

export function pipelineVariables(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  const pipeline = pipelineFor(ctx, project);
  authorize(ctx, project, "read_pipeline_variable");
  return json(
    200,
    pipeline.variables.map((v) => ctx.entities.variable(v)),
  );
}

/** A Grape `Boolean` parameter: undefined when absent. */
export function booleanParam(ctx: RouteContext, name: string): boolean | undefined | "invalid" {
  const raw = ctx.input[name];
  if (raw === undefined) return undefined;
  if (typeof raw === "boolean") return raw;
  if (typeof raw !== "string") return "invalid";
  const value = raw.toLowerCase();
  if (["true", "t", "1", "yes", "y"].includes(value)) return true;
  if (["false", "f", "0", "no", "n"].includes(value)) return false;
  return "invalid";
}

/** `Ci::Pipeline.sources`. */
const PIPELINE_SOURCES: readonly string[] = [
  "unknown",
  "push",
  "web",
  "trigger",
  "schedule",
  "api",
  "external",
  "pipeline",
  "chat",
  "webide",
  "merge_request_event",
  "external_pull_request_event",
  "parent_pipeline",
  "ondemand_dast_scan",
  "ondemand_dast_validation",
  "security_orchestration_policy",
  "container_registry_push",
  "duo_workflow",
  "pipeline_execution_policy_schedule",
];
/** `Ci::PipelinesFinder::ALLOWED_INDEXED_COLUMNS`. */
const PIPELINE_ORDER_BY = ["id", "status", "ref", "updated_at", "user_id"] as const;
type PipelineOrderBy = (typeof PIPELINE_ORDER_BY)[number];

interface PipelineListParams {
  scope?: string;
  status?: string;
  ref?: string;
  sha?: string;
  yamlErrors?: boolean;
  username?: string;
  updatedBefore?: number;
  updatedAfter?: number;
  createdBefore?: number;
  createdAfter?: number;
  orderBy: PipelineOrderBy;
  sort: "asc" | "desc";
  source?: string;
  name?: string;
}

/** The list's parameters, checked as Grape checks them: every problem, joined with ", ". */
function pipelineListParams(ctx: RouteContext): PipelineListParams {
  const errors: string[] = [];
  const text = (name: string): string | undefined => {
    const raw = ctx.input[name];
    if (raw === undefined) return undefined;
    if (typeof raw === "string") return raw;
    if (typeof raw === "number" || typeof raw === "boolean") return String(raw);
    errors.push(`${name} is invalid`);
    return undefined;
  };
  const oneOf = (name: string, values: readonly string[]): string | undefined => {
    const value = text(name);
    if (value !== undefined && !values.includes(value)) {
      errors.push(`${name} does not have a valid value`);
      return undefined;
    }
    return value;
  };
  const time = (name: string): number | undefined => {
    const value = text(name);
    if (value === undefined) return undefined;
    const parsed = Date.parse(value);
    if (Number.isNaN(parsed)) {
      errors.push(`${name} is invalid`);
      return undefined;
    }
    return parsed;
  };
  for (const name of ["page", "per_page"]) {
    const value = text(name);
    if (value !== undefined && !/^-?\d+$/.test(value.trim())) errors.push(`${name} is invalid`);
  }
  const params: PipelineListParams = { orderBy: "id", sort: "desc" };
  const scope = oneOf("scope", ["running", "pending", "finished", "branches", "tags"]);
  const status = oneOf("status", ALL_STATUSES);
  const ref = text("ref");
  const sha = text("sha");
  const yamlErrors = booleanParam(ctx, "yaml_errors");
  if (yamlErrors === "invalid") errors.push("yaml_errors is invalid");
  const username = text("username");
  const updatedBefore = time("updated_before");
  const updatedAfter = time("updated_after");
  const createdBefore = time("created_before");
  const createdAfter = time("created_after");
  const orderBy = oneOf("order_by", PIPELINE_ORDER_BY);
  const sort = oneOf("sort", ["asc", "desc"]);
  const source = oneOf("source", PIPELINE_SOURCES);
  const name = text("name");
  if (errors.length > 0) throw grapeError(400, errors.join(", "));

  if (scope !== undefined) params.scope = scope;
  if (status !== undefined) params.status = status;
  if (ref !== undefined) params.ref = ref;
  if (sha !== undefined) params.sha = sha;
  if (typeof yamlErrors === "boolean") params.yamlErrors = yamlErrors;
  if (username !== undefined) params.username = username;
  if (updatedBefore !== undefined) params.updatedBefore = updatedBefore;
  if (updatedAfter !== undefined) params.updatedAfter = updatedAfter;
  if (createdBefore !== undefined) params.createdBefore = createdBefore;
  if (createdAfter !== undefined) params.createdAfter = createdAfter;
  if (orderBy !== undefined) params.orderBy = orderBy as PipelineOrderBy;
  if (sort === "asc" || sort === "desc") params.sort = sort;
  if (source !== undefined) params.source = source;
  if (name !== undefined) params.name = name;
  return params;
}

/** GET /projects/:id/pipelines (Ci::PipelinesFinder), as PipelineBasicWithMetadata. */
export function listPipelines(ctx: RouteContext): Reply {
  const params = pipelineListParams(ctx);
  const project = projectFor(ctx);
  authorize(ctx, project, "read_pipeline");
  authorize(ctx, project, "read_build");

  let items = ctx.model.pipelines.filter((p) => p.projectId === project.id);
  const latestFor = (refs: ReadonlySet<string>, tag: boolean): FakePipeline[] =>
    [...refs].flatMap((ref) => {
      const forRef = items.filter((p) => p.ref === ref && p.tag === tag);
      const latest = forRef.reduce<FakePipeline | undefined>(
        (best, p) => (best === undefined || p.id > best.id ? p : best),
        undefined,
      );
      return latest === undefined ? [] : [latest];
    });
  switch (params.scope) {
    case "running":
      items = items.filter((p) => p.status === "running");
      break;
    case "pending":
      items = items.filter((p) => p.status === "pending");
      break;
    case "finished":
      items = items.filter((p) => ["success", "failed", "canceled"].includes(p.status));
      break;
    case "branches":
      items = latestFor(project.branches, false);
      break;
    case "tags":
      items = latestFor(project.tags, true);
      break;
  }
  const { status, ref, sha, username, source, name, yamlErrors } = params;
  if (status !== undefined) items = items.filter((p) => p.status === status);
  if (ref !== undefined && ref !== "") items = items.filter((p) => p.ref === ref);
  if (sha !== undefined && sha !== "") items = items.filter((p) => p.sha === sha);
  if (username !== undefined && username !== "" && username !== ctx.model.user.username) {
    items = [];
  }
  // No pipeline here has YAML errors.
  if (yamlErrors === true) items = [];
  const updated = (p: FakePipeline): number => Date.parse(p.updatedAt);
  const created = (p: FakePipeline): number => Date.parse(p.createdAt);
  const { updatedBefore, updatedAfter, createdBefore, createdAfter } = params;
  // UpdatedAtFilterable and CreatedAtFilter: both bounds are inclusive.
  if (updatedBefore !== undefined) items = items.filter((p) => updated(p) <= updatedBefore);
  if (updatedAfter !== undefined) items = items.filter((p) => updated(p) >= updatedAfter);
  if (createdBefore !== undefined) items = items.filter((p) => created(p) <= createdBefore);
  if (createdAfter !== undefined) items = items.filter((p) => created(p) >= createdAfter);
  if (source !== undefined) items = items.filter((p) => p.source === source);
  if (name !== undefined && name !== "") items = []; // no pipeline has a name

  const key = (p: FakePipeline): string | number => {
    switch (params.orderBy) {
      case "id":
        return p.id;
      case "status":
        return p.status;
      case "ref":
        return p.ref;
      case "updated_at":
        return updated(p);
      case "user_id":
        return ctx.model.user.id;
    }
  };
  const direction = params.sort === "asc" ? 1 : -1;
  const sorted = [...items].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    const order = ka < kb ? -1 : ka > kb ? 1 : a.id - b.id;
    return order * direction;
  });
  const { page, headers } = paginate(ctx, sorted);
  return json(
    200,
    page.map((p) => ctx.entities.pipelineBasic(p, true)),
    headers,
  );
}

/** POST /projects/:id/pipelines/:pipeline_id/cancel: 200 with the pipeline, whatever its state. */
export function cancelPipeline(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  const pipeline = pipelineFor(ctx, project);
  authorize(ctx, project, "update_pipeline", pipeline.ref);
  ctx.model.cancel(pipeline);
  return json(200, ctx.entities.pipeline(pipeline, false));
}
