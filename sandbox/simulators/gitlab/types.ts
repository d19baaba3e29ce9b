/** The fake GitLab's public types: its model, options and injected failures. */

export type Role = "guest" | "reporter" | "developer" | "maintainer" | "owner";

/** A value of a `spec:inputs` input, as JSON carries it. */
export type InputValue = string | number | boolean;

/** One `spec:inputs` entry. No `default` means the input is required. */
export interface InputSpec {
  default?: InputValue;
  type?: "string" | "number" | "boolean";
  options?: (string | number)[];
  description?: string;
}

export type JobStatus =
  | "created"
  | "waiting_for_resource"
  | "preparing"
  | "pending"
  | "running"
  | "success"
  | "failed"
  | "canceled"
  | "skipped"
  | "manual"
  | "scheduled";

export type PipelineStatus = JobStatus;

export type JobWhen = "on_success" | "on_failure" | "always" | "manual";

/** What a job's rules see when a pipeline is created. */
export interface PipelineContext {
  source: "api";
  ref: string;
  inputs: Readonly<Record<string, InputValue>>;
  variables: Readonly<Record<string, string>>;
}

export interface JobDefinition {
  name: string;
  stage: string;
  /** Default `on_success`. */
  when?: JobWhen;
  /** Default false: a manual job then blocks the pipeline, as `tf:apply` does. */
  allowFailure?: boolean;
  /** Runner tags, shown as `tag_list`. */
  tags?: string[];
  /** Like `rules:`: the job is created only when this returns true. */
  rules?: (context: PipelineContext) => boolean;
  /** What the job's script is, for the log the simulator writes when it finishes. Default `script`. */
  log?: JobLogKind;
  /**
   * Jobs whose artifacts this one downloads before its script (`needs:` / `dependencies:`), as
   * `tf:apply` takes `tfplan` from `tf:plan`. When a needed job's artifacts were deleted, the
   * runner finds nothing to download and the script fails (Terraform: no plan file).
   */
  needs?: string[];
}

/** Which of `traces.ts`'s logs a job gets: its commands, image and default output. */
export type JobLogKind =
  | "terraform-validate"
  | "terraform-plan"
  | "terraform-apply"
  | "terraform-destroy"
  | "ansible"
  | "script";

export interface PipelineDefinition {
  stages: string[];
  jobs: JobDefinition[];
}

export interface FakeProjectOptions {
  id: number;
  /** Full path, e.g. `group/project`. */
  path: string;
  /** Default `main`. */
  defaultBranch?: string;
  /** Branches besides the default one. */
  branches?: string[];
  tags?: string[];
  /** The CI config's `spec:inputs`. Absent: the config has no `spec` header. */
  inputs?: Record<string, InputSpec>;
  /**
   * The token user's role in the project. Default `maintainer`, the role vmbot's README asks for;
   * a `developer` cannot run pipelines on the protected default branch nor take a state lock.
   */
  role?: Role;
  /** Default `DEFAULT_PIPELINE`. */
  pipeline?: PipelineDefinition;
  /** `ci_pipeline_variables_minimum_override_role`. Default `developer`. */
  pipelineVariablesMinimumRole?: "developer" | "maintainer" | "owner" | "no_one_allowed";
  /**
   * Protected branches and the lowest role allowed to push or merge to each. Creating a pipeline,
   * playing a job or canceling a pipeline on a protected ref needs that role (GitLab's
   * `Chain::Validate::Abilities`, `update_build`, `update_pipeline`). Default: the default
   * branch, for maintainers, as GitLab protects it in a new project.
   */
  protectedBranches?: Record<string, "developer" | "maintainer">;
  /**
   * Per job name, the job's output (a plan text, an `ansible-playbook` run) that its log wraps
   * when the simulator finishes it, or a complete runner log used as it is. See `JobTraces`.
   */
  traces?: JobTraces;
  /** Per job name, the files its artifacts hold once it succeeds (path → content). */
  artifacts?: Record<string, Record<string, string>>;
}

/**
 * Job name → what the job printed. A program's output is wrapped in a runner log of the job's
 * `log` kind (`planTrace`, `ansibleTrace`, …); a text that already starts like a runner log
 * (`Running with gitlab-runner …`) is used as it is. An output whose program would exit non-zero
 * (a Terraform `Error:` diagnostic, an Ansible recap with failed or unreachable hosts) makes the
 * job fail, as the runner would.
 */
export type JobTraces = Readonly<Record<string, string>>;

export interface FakeUser {
  id: number;
  username: string;
  name: string;
}

export interface FakeGitlabOptions {
  /** The personal access token the bot is given. */
  token: string;
  /** Default: one project, `DEFAULT_PROJECT`. */
  projects?: FakeProjectOptions[];
  /** The token's user. */
  user?: Partial<FakeUser>;
  /** Other users of the instance, e.g. whoever holds a Terraform state lock. */
  users?: FakeUser[];
  /** Clock for every timestamp. */
  now?: () => Date;
  /**
   * The GitLab version `GET /metadata` and `GET /version` report. Default a current 18.x.
   * Below 17.10 the pipeline-create API has no `inputs` parameter: it ignores one, as Grape
   * ignores any parameter an endpoint does not declare.
   */
  version?: string;
  /**
   * Whether GraphQL offers `Project.ciPipelineCreationInputs` (the spec:inputs of the config on
   * a ref). Default true; false answers the field with graphql-ruby's "doesn't exist" error, as a
   * GitLab from before the field does.
   */
  inputsQuery?: boolean;
}

export interface PipelineVariable {
  key: string;
  value: string;
  variable_type: "env_var" | "file";
}

export interface FakeJob {
  readonly id: number;
  readonly pipelineId: number;
  readonly name: string;
  readonly stage: string;
  readonly when: JobWhen;
  readonly allowFailure: boolean;
  readonly tags: readonly string[];
  readonly logKind: JobLogKind;
  status: JobStatus;
  failureReason: string | null;
  log: string;
  /** Files in the job's artifacts archive, path → content. Empty: the job has no artifacts. */
  artifacts: Map<string, string>;
  /** When its artifacts were deleted (`DELETE …/jobs/:id/artifacts`); null while they are there. */
  artifactsDeletedAt: string | null;
  /** Who created the job, or played it last (the job's `user` in GitLab's job JSON). */
  user: FakeUser;
  readonly needs: readonly string[];
  /** Replaced by a newer run of the same job (a retry, or playing a finished manual job). */
  retried: boolean;
  createdAt: string;
  updatedAt: string;
  queuedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface FakePipeline {
  readonly id: number;
  readonly iid: number;
  readonly projectId: number;
  readonly ref: string;
  readonly sha: string;
  readonly tag: boolean;
  status: PipelineStatus;
  readonly source: "api";
  /** The project's input defaults merged with the inputs given. */
  readonly inputs: Readonly<Record<string, InputValue>>;
  readonly variables: readonly PipelineVariable[];
  readonly webUrl: string;
  readonly createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Seconds the jobs ran (their running periods merged), as GitLab stores it. */
  duration: number | null;
  readonly stages: readonly string[];
  /** Every job, retried ones included, in creation order. */
  readonly jobs: FakeJob[];
  /** Outputs for this pipeline's jobs, over the project's `traces`. */
  traces: JobTraces;
}

/** One job status change made by `advance`. */
export interface JobTransition {
  jobId: number;
  jobName: string;
  from: JobStatus | null;
  to: JobStatus;
}

export type HookEvent = "Pipeline Hook" | "Job Hook";

export interface HookOptions {
  url: string;
  /** Sent as `X-Gitlab-Token`. */
  secretToken?: string;
  /** Default both. */
  events?: readonly ("pipeline" | "job")[];
  /** GitLab's webhook timeout. Default 10 s. */
  timeoutMs?: number;
}

/** A webhook request the fake made, and what came of it. */
export interface HookDelivery {
  event: HookEvent;
  url: string;
  headers: Record<string, string>;
  /** The JSON body, parsed. */
  body: Record<string, unknown>;
  sentAt: string;
  /** The receiver's answer; absent when the request failed (see `error`). */
  response?: { status: number; body: string };
  error?: string;
}

/**
 * The lock info Terraform's http backend sends to lock a state, and reads back from a 409
 * (Go's `statemgr.LockInfo`, marshalled with its field names).
 */
export interface TerraformLockInfo {
  /** The lock ID: a UUID Terraform makes for each lock. */
  ID: string;
  /** `OperationTypePlan`, `OperationTypeApply`, … */
  Operation: string;
  Info: string;
  /** `user@hostname` of the Terraform process. */
  Who: string;
  /** Terraform's version. */
  Version: string;
  /** When Terraform took the lock, RFC 3339. */
  Created: string;
  Path: string;
}

/**
 * A lock on a Terraform state, as GitLab keeps it: the lock ID, the GitLab user whose token took
 * it, and when (`lock_xid`, `locked_by_user`, `locked_at`). The rest of Terraform's lock info is
 * not stored.
 */
export interface FakeTerraformLock {
  readonly id: string;
  readonly user: Readonly<FakeUser>;
  readonly lockedAt: string;
}

/** A stored version of a state's file. */
export interface FakeTerraformStateVersion {
  readonly id: number;
  /** The state's `serial`, when the file has one. */
  readonly serial: number | null;
  readonly content: string;
  /** Null: stored by a handle method rather than through the API. */
  readonly createdBy: Readonly<FakeUser> | null;
  readonly createdAt: string;
}

/** A GitLab-managed Terraform state (`Terraform::State`). */
export interface FakeTerraformState {
  readonly id: number;
  readonly projectId: number;
  readonly name: string;
  /** Null until a file is stored (a lock creates the state without one: GET answers 204). */
  latestVersion: FakeTerraformStateVersion | null;
  lock: FakeTerraformLock | null;
  readonly createdAt: string;
  updatedAt: string;
}

export interface TerraformStateOptions {
  /**
   * The latest version's file; an object is stored as JSON. Default: an empty state of serial 1.
   * Null: no version yet.
   */
  content?: string | Record<string, unknown> | null;
  /** The username of the user holding a lock on the state. Absent: unlocked. */
  lockedBy?: string;
  /** When the lock was taken. Default: now. */
  lockedAt?: Date;
  /** Terraform's lock ID. Default: a random UUID, as Terraform makes. */
  lockId?: string;
  /** Default: now, or `lockedAt` when that is earlier. */
  createdAt?: Date;
}

/** Which requests a failure applies to: `path` is matched against the raw (encoded) path. */
export interface FailureMatch {
  method?: string;
  path: RegExp;
}

/**
 * - `{ status }`: answer with that status and a GitLab-shaped body (or `body`); `retryAfter`
 *   sets `Retry-After` (429 also gets GitLab's `RateLimit-*` headers).
 * - `{ delayMs }`: answer normally after the delay. Like a slow GitLab, the request still takes
 *   effect if the client has given up by then; `settled()` waits for it.
 * - `{ until }`: hold the request until the promise settles, then handle it normally, whether
 *   or not its client is still there: a create that GitLab makes visible only later (after the
 *   caller crashed, or gave up). With `status`, answered with that status in the end, without
 *   acting: a slow GitLab (or its proxy) that fails after all.
 * - `"reset"`: drop the connection without answering.
 * - `{ afterEffect }`: GitLab does the thing at once, then the answer is lost: `"reset"` drops
 *   the connection, `{ delayMs }` holds the answer back (the client times out first), `{ status }`
 *   answers with that status instead (a proxy's 502 after GitLab acted).
 */
export type InjectedFailure =
  | { status: number; body?: unknown; retryAfter?: number }
  | { delayMs: number }
  | { until: Promise<unknown>; status?: number }
  | "reset"
  | { afterEffect: "reset" | { delayMs: number } | { status: number } };
