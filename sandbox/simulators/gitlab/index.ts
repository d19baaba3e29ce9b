/**
 * An in-memory GitLab that speaks REST API v4 on the wire, for the real `@gitbeaker/rest` client,
 * and simulates the runner that moves its pipelines along.
 *
 * It keeps a small model (projects → pipelines → jobs) and derives everything the API shows from
 * it: pipeline status from job statuses (GitLab's composite-status rules), stage-by-stage job
 * processing, timestamps, durations, URLs. Routes are declared in one table (`ROUTES`, in `routes.ts`); adding an
 * endpoint is one entry and one handler.
 *
 * Driving it:
 * - `advance(pipelineId)` does what a runner and GitLab's pipeline processing do next: created
 *   jobs become pending, pending jobs start running, running jobs finish (and the next stage is
 *   processed). A manual job waits as `manual` until it is played (`POST …/jobs/:id/play`, or the
 *   `playJob` driver). `failJob` makes a job fail when it finishes; `autoAdvance` runs `advance`
 *   on a timer. When a job finishes its log is set from `traces.ts` (the `traces` given
 *   for the project or pipeline, or a short built-in default), and its artifacts are stored.
 * - `setJobStatus`/`setJobLog`/`setJobArtifact` set things directly.
 * - `deliverHooks` POSTs a Pipeline Hook and a Job Hook, as GitLab shapes them, to a URL on every
 *   status change, and records each delivery with its answer.
 * - `failNext` injects HTTP failures, delays and dropped connections, before GitLab acts or after
 *   it (`afterEffect`: the thing is done, the answer is lost); `mark`/`requestsSince` count
 *   requests.
 * - A job's `needs` name the jobs whose artifacts it downloads (`tf:apply` needs `tf:plan`'s
 *   `tfplan`); when those were deleted (`DELETE …/jobs/:id/artifacts`, Maintainer only), the job
 *   fails as Terraform does without its plan file.
 * - `addTerraformState`/`lockTerraformState`/`unlockTerraformState` set up GitLab-managed
 *   Terraform states and their locks (held by the token's user or by another user, `addUser`).
 *   They are served by the state API Terraform's http backend uses (`/projects/:id/terraform/
 *   state/:name`, `…/lock`) and by GraphQL (`POST /api/graphql`, `Project.terraformStates`).
 *
 * Behaviour and bodies follow GitLab's API code and documentation:
 * - auth: invalid token → 401 `{"message":"401 Unauthorized"}` everywhere; no token → 401 on
 *   non-GET requests and on the Jobs API, 404 `{"message":"404 Project Not Found"}` on other
 *   GETs (projects are private);
 * - unknown project → 404 `{"message":"404 Project Not Found"}`; unknown pipeline or job →
 *   404 `{"message":"404 Not found"}`; missing permission → 403 `{"message":"403 Forbidden"}`;
 * - pipeline creation errors → 400 `{"message":{"base":["…"]}}` with GitLab's texts;
 * - a job that cannot be played → 400 `{"message":"400 Bad request - Unplayable Job"}`;
 * - parameter errors (Grape) → 400 `{"error":"ref is missing"}`, several joined with ", ";
 *   unknown route → 404 `{"error":"404 Not Found"}`.
 * - Terraform state (`API::Terraform::State`, `Terraform::RemoteStateHandler`): reading needs
 *   Developer, everything else (storing, deleting, locking, unlocking) Maintainer; a missing state
 *   is `{"message":"404 Not found"}`; a lock held by someone else is 409 with the holder's lock
 *   info; unlocking with another lock ID is 409, without one it is a force-unlock.
 * - GraphQL (`GraphqlController`): an invalid token → 401 `{"errors":[{"message":"Invalid
 *   token"}]}`; no token → anonymous, to whom every project is invisible (`project: null`);
 *   query errors → 200 `{"errors":[{message, locations, path, extensions}]}`.
 */

export type { FakeGitlab } from "./fake.js";
export {
  DEFAULT_PIPELINE,
  DEFAULT_PROJECT,
  terraformLockInfo,
  VM_PIPELINE_INPUTS,
} from "./defaults.js";
export { startFakeGitlab } from "./server.js";
export { compositeStatus, vmParamsOf } from "./status.js";
export type * from "./types.js";
