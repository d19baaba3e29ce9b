/** REST: metadata and projects. */
import { ROLE_LEVEL } from "./defaults.js";
import { json, type Reply } from "./replies.js";
import { projectFor, type RouteContext } from "./routing.js";

/** GET /metadata (and the older GET /version): any authenticated caller. */
export function metadata(ctx: RouteContext): Reply {
  const { version } = ctx.model;
  return json(200, {
    version,
    revision: "6d9b3a1c2f0",
    kas: { enabled: false, externalUrl: null, externalK8sProxyUrl: null, version: null },
    enterprise: version.endsWith("-ee"),
  });
}

/** GET /projects/:id: the fields vmbot reads, and the caller's own access in `permissions`. */
export function showProject(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  const name = project.path.split("/").at(-1) ?? project.path;
  const maintainer = ROLE_LEVEL[project.role] >= ROLE_LEVEL.maintainer;
  return json(200, {
    id: project.id,
    name,
    path: name,
    path_with_namespace: project.path,
    default_branch: project.defaultBranch,
    web_url: `${ctx.model.baseUrl}/${project.path}`,
    // Settings only Maintainers see, as Entities::Project exposes them.
    ...(maintainer
      ? { ci_pipeline_variables_minimum_override_role: project.variablesMinimumRole }
      : {}),
    permissions: {
      project_access: { access_level: ROLE_LEVEL[project.role], notification_level: 3 },
      group_access: null,
    },
  });
}
