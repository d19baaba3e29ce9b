/** Routing: the route table's shape, authentication, parameters and pagination. */
import { type RecordedRequest } from "../http.js";
import { API_PREFIX, DEFAULT_PER_PAGE, MAX_PER_PAGE } from "./defaults.js";
import { Entities } from "./entities.js";
import { graphqlEndpoint } from "./graphql.js";
import { apiError, forbidden, projectNotFound, recordNotFound, type Reply } from "./replies.js";
import { GitlabModel } from "./runner.js";
import { type Permission, type Project } from "./state.js";
import { type FakeJob, type FakePipeline } from "./types.js";

export interface Caller {
  /** False: no token was sent. */
  authenticated: boolean;
}

export interface RouteContext {
  readonly req: RecordedRequest;
  readonly params: Readonly<Record<string, string>>;
  readonly caller: Caller;
  readonly model: GitlabModel;
  readonly entities: Entities;
  /** Query and body parameters, body winning, as Grape merges them. */
  readonly input: Readonly<Record<string, unknown>>;
}

type Handler = (ctx: RouteContext) => Reply;

export interface Route {
  method: string;
  pattern: RegExp;
  keys: string[];
  /**
   * `always`: authenticate! (401 without a token); `non-get`: authenticate_non_get!; `graphql`:
   * GraphqlController's (an invalid token is 401, no token is an anonymous caller).
   */
  auth: "always" | "non-get" | "graphql";
  /** `route_setting :authentication, basic_auth_personal_access_token: true`. */
  basicAuth: boolean;
  handler: Handler;
}

/** Path parameters declared `type: Integer`; a non-integer is a Grape validation error. */
export const INTEGER_PARAMS: ReadonlySet<string> = new Set(["pipeline_id", "job_id"]);

export function route(
  method: string,
  template: string,
  handler: Handler,
  auth: "always" | "non-get" = "non-get",
  options: { basicAuth?: boolean } = {},
): Route {
  const keys: string[] = [];
  // `:name` is one path segment; `*name` (Grape's wildcard) is the rest of the path.
  const source = template.replace(/([:*])([a-z_]+)/g, (_match, kind: string, key: string) => {
    keys.push(key);
    return kind === "*" ? "(.+)" : "([^/]+)";
  });
  return {
    method,
    pattern: new RegExp(`^${API_PREFIX}${source}$`),
    keys,
    auth,
    basicAuth: options.basicAuth ?? false,
    handler,
  };
}

/** The GraphQL endpoint, outside the REST API's prefix. */
export function graphqlRoute(method: string): Route {
  return {
    method,
    pattern: /^\/api\/graphql$/,
    keys: [],
    auth: "graphql",
    basicAuth: false,
    handler: graphqlEndpoint,
  };
}

/**
 * The token a request carries: `PRIVATE-TOKEN`, an OAuth-style Bearer, the `private_token` or
 * `access_token` parameter, or (where the route allows it, as Terraform's http backend sends it)
 * the password of HTTP Basic credentials.
 */
export function tokenOf(req: RecordedRequest, basicAuth = false): string | undefined {
  const header = (name: string): string | undefined => {
    const value = req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const privateToken = header("private-token");
  if (privateToken !== undefined) return privateToken;
  const authorization = header("authorization");
  const bearer =
    authorization === undefined ? undefined : /^Bearer\s+(.+)$/i.exec(authorization)?.[1];
  if (bearer !== undefined) return bearer;
  const fromQuery = req.query.get("private_token") ?? req.query.get("access_token");
  if (fromQuery !== null) return fromQuery;
  const basic =
    basicAuth && authorization !== undefined
      ? /^Basic\s+(\S+)$/i.exec(authorization)?.[1]
      : undefined;
  if (basic === undefined) return undefined;
  // GitLab looks the password up as a personal access token; the username is not checked.
  const credentials = Buffer.from(basic, "base64").toString("utf8");
  const colon = credentials.indexOf(":");
  return colon < 0 ? undefined : credentials.slice(colon + 1);
}

export function parseInput(req: RecordedRequest): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [rawKey, value] of req.query) {
    if (rawKey === "private_token" || rawKey === "access_token") continue;
    if (rawKey.endsWith("[]")) {
      const key = rawKey.slice(0, -2);
      const list = input[key];
      input[key] = Array.isArray(list) ? [...(list as unknown[]), value] : [value];
    } else {
      input[rawKey] = value;
    }
  }
  if (req.body.length === 0) return input;
  const contentType = (req.headers["content-type"] ?? "").split(";")[0]?.trim();
  if (contentType === "application/json") {
    let body: unknown;
    try {
      body = JSON.parse(req.body);
    } catch {
      throw apiError(400, "400 Bad request");
    }
    if (typeof body === "object" && body !== null && !Array.isArray(body))
      Object.assign(input, body);
  } else if (contentType === "application/x-www-form-urlencoded") {
    for (const [key, value] of new URLSearchParams(req.body)) {
      const nested = /^([a-z_]+)\[([^\]]+)\]$/i.exec(key);
      if (nested?.[1] !== undefined && nested[2] !== undefined) {
        const existing = input[nested[1]];
        const group = typeof existing === "object" && existing !== null ? existing : {};
        input[nested[1]] = { ...group, [nested[2]]: value };
      } else {
        input[key] = value;
      }
    }
  }
  return input;
}

export function projectFor(ctx: RouteContext): Project {
  const idOrPath = ctx.params.id ?? "";
  const project = ctx.model.findProject(idOrPath);
  // Private projects: a caller without a token, or not a member, is told the project does not exist.
  if (!project || !ctx.caller.authenticated) throw projectNotFound();
  return project;
}

export function authorize(
  ctx: RouteContext,
  project: Project,
  permission: Permission,
  ref?: string,
): void {
  if (!ctx.model.can(project, permission, ref)) throw forbidden();
}

/** A path parameter declared `type: Integer` (checked in `dispatch`). */
function integerParam(ctx: RouteContext, name: string): number {
  return Number(ctx.params[name]);
}

export function pipelineFor(ctx: RouteContext, project: Project): FakePipeline {
  const id = integerParam(ctx, "pipeline_id");
  const pipeline = ctx.model.pipelines.find((p) => p.id === id && p.projectId === project.id);
  if (!pipeline) throw recordNotFound();
  return pipeline;
}

export function jobFor(
  ctx: RouteContext,
  project: Project,
): { job: FakeJob; pipeline: FakePipeline } {
  const id = integerParam(ctx, "job_id");
  for (const pipeline of ctx.model.pipelines) {
    if (pipeline.projectId !== project.id) continue;
    const job = pipeline.jobs.find((j) => j.id === id);
    if (job) return { job, pipeline };
  }
  throw recordNotFound();
}

/** Offset pagination, with the headers GitLab sends (`x-total`, `x-next-page`, `link`, …). */
export function paginate<T>(
  ctx: RouteContext,
  items: readonly T[],
): { page: T[]; headers: Record<string, string> } {
  const number = (name: string, fallback: number): number => {
    const raw = ctx.req.query.get(name);
    const value = raw === null ? NaN : Number.parseInt(raw, 10);
    return Number.isFinite(value) && value > 0 ? value : fallback;
  };
  const perPage = Math.min(number("per_page", DEFAULT_PER_PAGE), MAX_PER_PAGE);
  const page = number("page", 1);
  const total = items.length;
  const totalPages = Math.max(1, Math.ceil(total / perPage));
  const linkTo = (target: number): string => {
    const query = new URLSearchParams(ctx.req.query);
    query.set("page", String(target));
    query.set("per_page", String(perPage));
    return `${ctx.model.baseUrl}${ctx.req.path}?${query.toString()}`;
  };
  const links: string[] = [];
  if (page > 1) links.push(`<${linkTo(page - 1)}>; rel="prev"`);
  if (page < totalPages) links.push(`<${linkTo(page + 1)}>; rel="next"`);
  links.push(`<${linkTo(1)}>; rel="first"`, `<${linkTo(totalPages)}>; rel="last"`);
  return {
    page: items.slice((page - 1) * perPage, page * perPage),
    headers: {
      "x-page": String(page),
      "x-per-page": String(perPage),
      "x-total": String(total),
      "x-total-pages": String(totalPages),
      "x-next-page": page < totalPages ? String(page + 1) : "",
      "x-prev-page": page > 1 ? String(page - 1) : "",
      link: links.join(", "),
    },
  };
}
