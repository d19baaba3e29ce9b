/** Every endpoint the fake serves, and the dispatch from a request to its handler. */
import { type RecordedRequest } from "../http.js";
import { Entities } from "./entities.js";
import { graphqlReply } from "./graphql-schema.js";
import {
  deleteJobArtifacts,
  jobArtifactFile,
  jobTrace,
  pipelineJobs,
  playJob,
  retryJob,
  showJob,
} from "./job-routes.js";
import {
  cancelPipeline,
  createPipeline,
  listPipelines,
  pipelineVariables,
  showPipeline,
} from "./pipeline-routes.js";
import { metadata, showProject } from "./project-routes.js";
import { ApiError, grapeError, type Reply, unauthorized } from "./replies.js";
import { graphqlRoute, INTEGER_PARAMS, parseInput, route, type Route, tokenOf } from "./routing.js";
import { GitlabModel } from "./runner.js";
import {
  deleteTerraformState,
  lockTerraformState,
  showTerraformState,
  storeTerraformState,
  unlockTerraformState,
} from "./terraform-state-routes.js";

/** Every endpoint the fake serves. Add new ones here. */
const ROUTES: readonly Route[] = [
  route("GET", "/metadata", metadata, "always"),
  route("GET", "/version", metadata, "always"),
  route("GET", "/projects/:id", showProject),
  route("POST", "/projects/:id/pipeline", createPipeline),
  route("GET", "/projects/:id/pipelines", listPipelines),
  route("GET", "/projects/:id/pipelines/:pipeline_id", showPipeline),
  route("GET", "/projects/:id/pipelines/:pipeline_id/variables", pipelineVariables),
  route("GET", "/projects/:id/pipelines/:pipeline_id/jobs", pipelineJobs),
  route("POST", "/projects/:id/pipelines/:pipeline_id/cancel", cancelPipeline),
  route("GET", "/projects/:id/jobs/:job_id", showJob, "always"),
  route("GET", "/projects/:id/jobs/:job_id/trace", jobTrace, "always"),
  route("POST", "/projects/:id/jobs/:job_id/play", playJob, "always"),
  route("POST", "/projects/:id/jobs/:job_id/retry", retryJob, "always"),
  route("GET", "/projects/:id/jobs/:job_id/artifacts/*artifact_path", jobArtifactFile),
  route("DELETE", "/projects/:id/jobs/:job_id/artifacts", deleteJobArtifacts, "always"),
  // Terraform's http backend sends the token as the password of Basic credentials.
  ...(
    [
      ["GET", "/projects/:id/terraform/state/:name", showTerraformState],
      ["POST", "/projects/:id/terraform/state/:name", storeTerraformState],
      ["DELETE", "/projects/:id/terraform/state/:name", deleteTerraformState],
      ["POST", "/projects/:id/terraform/state/:name/lock", lockTerraformState],
      ["DELETE", "/projects/:id/terraform/state/:name/lock", unlockTerraformState],
    ] as const
  ).map(([method, template, handler]) =>
    route(method, template, handler, "always", { basicAuth: true }),
  ),
  graphqlRoute("GET"),
  graphqlRoute("POST"),
];

export function dispatch(model: GitlabModel, entities: Entities, req: RecordedRequest): Reply {
  try {
    for (const candidate of ROUTES) {
      if (candidate.method !== req.method) continue;
      const match = candidate.pattern.exec(req.path);
      if (!match) continue;
      const params: Record<string, string> = {};
      for (const [index, key] of candidate.keys.entries()) {
        try {
          params[key] = decodeURIComponent(match[index + 1] ?? "");
        } catch {
          throw grapeError(404, "404 Not Found");
        }
      }
      const token = tokenOf(req, candidate.basicAuth);
      const tokenValid = token === model.token && model.tokenValid;
      if (candidate.auth === "graphql") {
        if (token !== undefined && !tokenValid) {
          return graphqlReply(401, { errors: [{ message: "Invalid token" }] });
        }
        return candidate.handler({
          req,
          params,
          caller: { authenticated: token !== undefined },
          model,
          entities,
          input: {},
        });
      }
      if (token !== undefined && !tokenValid) throw unauthorized();
      if (token === undefined && (candidate.auth === "always" || req.method !== "GET"))
        throw unauthorized();
      for (const key of candidate.keys) {
        if (INTEGER_PARAMS.has(key) && !/^\d+$/.test(params[key] ?? "")) {
          throw grapeError(400, `${key} is invalid`);
        }
      }
      const input = parseInput(req);
      return candidate.handler({
        req,
        params,
        caller: { authenticated: token !== undefined },
        model,
        entities,
        input,
      });
    }
    // The API's catch-all route.
    throw grapeError(404, "404 Not Found");
  } catch (error) {
    if (error instanceof ApiError) return error.reply;
    throw error;
  }
}
