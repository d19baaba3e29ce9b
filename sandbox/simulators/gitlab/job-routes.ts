/** REST: jobs (list, show, log, play, retry, artifacts). */
import { ALL_STATUSES } from "./defaults.js";
import { booleanParam } from "./pipeline-routes.js";
import { artifactContentType } from "./presentation.js";
import { apiError, grapeError, json, type Reply } from "./replies.js";
import {
  authorize,
  jobFor,
  paginate,
  pipelineFor,
  projectFor,
  type RouteContext,
} from "./routing.js";
import { noContent } from "./terraform-state-routes.js";
import { type JobStatus } from "./types.js";

function scopeFilter(ctx: RouteContext): ReadonlySet<string> | undefined {
  const scope = ctx.input.scope;
  if (scope === undefined) return undefined;
  const list = Array.isArray(scope) ? scope : [scope];
  if (
    !list.every(
      (s): s is JobStatus => typeof s === "string" && (ALL_STATUSES as string[]).includes(s),
    )
  ) {
    throw grapeError(400, "scope does not have a valid value");
  }
  return new Set(list);
}

export function pipelineJobs(ctx: RouteContext): Reply {
  const includeRetried = booleanParam(ctx, "include_retried");
  if (includeRetried === "invalid") throw grapeError(400, "include_retried is invalid");
  const project = projectFor(ctx);
  authorize(ctx, project, "read_pipeline");
  const pipeline = pipelineFor(ctx, project);
  const scope = scopeFilter(ctx);
  const jobs = pipeline.jobs
    .filter((job) => includeRetried === true || !job.retried)
    .filter((job) => scope === undefined || scope.has(job.status))
    .sort((a, b) => b.id - a.id);
  const { page, headers } = paginate(ctx, jobs);
  return json(
    200,
    page.map((job) => ctx.entities.job(job, pipeline)),
    headers,
  );
}

export function showJob(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  authorize(ctx, project, "read_build");
  const { job, pipeline } = jobFor(ctx, project);
  return json(200, ctx.entities.job(job, pipeline));
}

/** GET …/jobs/:job_id/trace: the raw log, `Content-Type: text/plain` as the Jobs API sets it. */
export function jobTrace(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  authorize(ctx, project, "read_build");
  const { job } = jobFor(ctx, project);
  return {
    kind: "text",
    status: 200,
    text: job.log,
    headers: {
      "content-type": "text/plain",
      "content-disposition": `infile; filename="${job.id}.log"`,
    },
  };
}

/** The `job_variables_attributes` of a play request, checked as Grape does. */
function readJobVariables(raw: unknown): void {
  if (raw === undefined || raw === null) return;
  if (!Array.isArray(raw)) throw grapeError(400, "job_variables_attributes is invalid");
  const errors: string[] = [];
  for (const [index, item] of raw.entries()) {
    const record =
      typeof item === "object" && item !== null ? (item as Record<string, unknown>) : {};
    for (const field of ["key", "value"]) {
      if (record[field] === undefined) {
        errors.push(`job_variables_attributes[${index}][${field}] is missing`);
      }
    }
  }
  if (errors.length > 0) throw grapeError(400, errors.join(", "));
}

/** POST /projects/:id/jobs/:job_id/play: 200 with the job that runs (a new one for a retry). */
export function playJob(ctx: RouteContext): Reply {
  readJobVariables(ctx.input.job_variables_attributes);
  const project = projectFor(ctx);
  authorize(ctx, project, "read_build");
  const { job, pipeline } = jobFor(ctx, project);
  authorize(ctx, project, "update_build", pipeline.ref);
  const played = ctx.model.play(job);
  if (played === undefined) throw apiError(400, "400 Bad request - Unplayable Job");
  return json(200, ctx.entities.job(played, pipeline));
}

/** POST /projects/:id/jobs/:job_id/retry: 201 with the new run, or 403 when it cannot be retried. */
export function retryJob(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  authorize(ctx, project, "read_build");
  const { job, pipeline } = jobFor(ctx, project);
  authorize(ctx, project, "update_build", pipeline.ref);
  const retried = ctx.model.retry(job);
  if (retried === undefined) throw apiError(403, "403 Forbidden - Job is not retryable");
  return json(201, ctx.entities.job(retried, pipeline));
}

/**
 * GET /projects/:id/jobs/:job_id/artifacts/*artifact_path: one file of the archive, sent by
 * Workhorse with the type its extension gives. A job without artifacts is Rails' 404; a path the
 * archive lacks is Workhorse's (`http.NotFound`, plain text).
 */
export function jobArtifactFile(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  authorize(ctx, project, "read_build");
  const { job } = jobFor(ctx, project);
  if (job.artifacts.size === 0) throw apiError(404, "404 Not Found");
  const path = ctx.params.artifact_path ?? "";
  // Gitlab::Ci::Build::Artifacts::Path#valid?: no NUL bytes, valid UTF-8.
  if (path.includes("\0")) throw apiError(400, "400 Bad request");
  const content = job.artifacts.get(path);
  if (content === undefined) {
    return {
      kind: "text",
      status: 404,
      text: "404 page not found\n",
      headers: { "content-type": "text/plain; charset=utf-8" },
    };
  }
  const basename = path.split("/").at(-1) ?? path;
  return {
    kind: "text",
    status: 200,
    text: content,
    headers: {
      "content-type": artifactContentType(path),
      "content-disposition": `attachment; filename="${basename.replace(/"/g, '\\"')}"`,
    },
  };
}

/**
 * DELETE /projects/:id/jobs/:job_id/artifacts (`API::Ci::JobArtifacts`): `destroy_artifacts`
 * (Maintainer) is checked on the project before the job is looked up; the archive goes, the log
 * stays; 204 whether or not the job had artifacts.
 */
export function deleteJobArtifacts(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  authorize(ctx, project, "destroy_artifacts");
  const { job } = jobFor(ctx, project);
  ctx.model.deleteArtifacts(job);
  return noContent();
}
