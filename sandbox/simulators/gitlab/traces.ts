/**
 * GitLab job logs as a GitLab Runner (Docker executor) writes them, around a job's own output.
 *
 * A raw log, as `GET /projects/:id/jobs/:job_id/trace` returns it, is the runner's preamble
 * (`Running with gitlab-runner …`, `  on <runner> …`), then one collapsible section per stage of
 * the job (`prepare_executor`, `prepare_script`, `get_sources`, `step_script`,
 * `upload_artifacts_on_success`, `cleanup_file_variables`), then `Job succeeded` or
 * `ERROR: Job failed: exit code N`. Sections are delimited by GitLab's markers,
 * `section_start:<unix>:<name>\r\e[0K` and `section_end:<unix>:<name>\r\e[0K`; the runner's own
 * lines carry its ANSI colours (`\e[36;1m` section titles, `\e[32;1m` commands and progress,
 * `\e[31;1m` errors, `\e[0;m` reset). The shape follows the logs in
 * `../shared/fixtures/gitlab-trace/` and what current runners print.
 *
 * Everything here is pure: the program output (a Terraform plan, an `ansible-playbook` run) is
 * passed in, typically read from the shared fixtures by the caller; nothing reads files.
 */

export {
  ansibleExitCode,
  ansibleTrace,
  FAILING_TASKS,
  syntheticAnsibleRun,
  type SyntheticAnsibleRun,
  type SyntheticTask,
  UNREACHABLE_TASKS,
} from "./traces/ansible.js";
export {
  isRunnerTrace,
  type JobOutcome,
  type RunnerContext,
  runnerTrace,
  type RunnerTraceOptions,
  type ScriptStep,
  scriptTrace,
  traceWhileRunning,
} from "./traces/runner.js";
export {
  addressOf,
  syntheticApply,
  syntheticLockError,
  syntheticPlan,
  syntheticPlanError,
  syntheticReplaceApply,
  syntheticReplacePlan,
  syntheticStateAuthError,
} from "./traces/terraform-output.js";
export {
  applyTrace,
  destroyTrace,
  planTrace,
  terraformExitCode,
  type TraceOptions,
  validateTrace,
  type VmParams,
} from "./traces/terraform.js";
