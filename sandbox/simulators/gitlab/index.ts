/**
 * An in-memory GitLab that speaks REST API v4 on the wire, for the real `@gitbeaker/rest` client,
 * and simulates the runner that moves its pipelines along.
 *
 * It keeps a small model (projects → pipelines → jobs) and derives everything the API shows from
 * it: pipeline status from job statuses (GitLab's composite-status rules), stage-by-stage job
 * processing, timestamps, durations, URLs. Routes are declared in one table (`ROUTES`); adding an
 * endpoint is one entry and one handler.
 *
 * Driving it:
 * - `advance(pipelineId)` does what a runner and GitLab's pipeline processing do next: created
 *   jobs become pending, pending jobs start running, running jobs finish (and the next stage is
 *   processed). A manual job waits as `manual` until it is played (`POST …/jobs/:id/play`, or the
 *   `playJob` driver). `failJob` makes a job fail when it finishes; `autoAdvance` runs `advance`
 *   on a timer. When a job finishes its log is set from `gitlab-traces.ts` (the `traces` given
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
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { STATUS_CODES, type ServerResponse } from "node:http";
import {
  buildSchema,
  executeSync,
  GraphQLError,
  Kind,
  OperationTypeNode,
  parse,
  validate,
  visit,
  BREAK,
  type ASTNode,
  type DocumentNode,
  type ExecutionResult,
} from "graphql";
import {
  addressOf,
  ansibleTrace,
  applyTrace,
  destroyTrace,
  FAILING_TASKS,
  isRunnerTrace,
  planTrace,
  scriptTrace,
  syntheticAnsibleRun,
  syntheticApply,
  syntheticPlan,
  syntheticPlanError,
  syntheticStateAuthError,
  traceWhileRunning,
  validateTrace,
  type JobOutcome,
  type TraceOptions,
  type VmParams,
} from "./traces.js";
import { sendJson, startFakeServer, type RecordedRequest } from "../http.js";

// ---------------------------------------------------------------------------------------------
// Public types

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

/** Which of `gitlab-traces.ts`'s logs a job gets: its commands, image and default output. */
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
 *   caller crashed, or gave up).
 * - `"reset"`: drop the connection without answering.
 * - `{ afterEffect }`: GitLab does the thing at once, then the answer is lost: `"reset"` drops
 *   the connection, `{ delayMs }` holds the answer back (the client times out first), `{ status }`
 *   answers with that status instead (a proxy's 502 after GitLab acted).
 */
export type InjectedFailure =
  | { status: number; body?: unknown; retryAfter?: number }
  | { delayMs: number }
  | { until: Promise<unknown> }
  | "reset"
  | { afterEffect: "reset" | { delayMs: number } | { status: number } };

export interface FakeGitlab {
  /** Base URL for gitbeaker's `host` (no `/api/v4`). */
  readonly url: string;
  readonly user: Readonly<FakeUser>;
  /** Every request received, in order, including failed ones. */
  readonly requests: readonly RecordedRequest[];
  /** Pipelines created, in order. */
  readonly pipelines: readonly FakePipeline[];
  requestsTo(method: string, pathPattern: RegExp): RecordedRequest[];
  /** Queues a failure for the next `times` (default 1) matching requests. */
  failNext(match: FailureMatch, failure: InjectedFailure, options?: { times?: number }): void;
  /** False: the token is revoked; requests that send it get 401. */
  setTokenValid(valid: boolean): void;
  /** Replaces the valid token (the old one is revoked), as a rotation does. */
  rotateToken(token: string): void;
  /** Changes the token user's role in a project, as an owner editing the members would. */
  setRole(projectId: number, role: Role): void;
  /** Adds a user to the instance (ID: the next free one; name: the username). */
  addUser(user: Pick<FakeUser, "username"> & Partial<FakeUser>): FakeUser;

  /** Every Terraform state, in creation order. */
  readonly terraformStates: readonly FakeTerraformState[];
  /**
   * Creates a Terraform state in a project (by ID or full path), with a file unless `content` is
   * null, locked by `lockedBy` when given.
   */
  addTerraformState(
    project: number | string,
    name: string,
    options?: TerraformStateOptions,
  ): FakeTerraformState;
  /** The project's state of that name, if there is one. */
  terraformState(project: number | string, name: string): FakeTerraformState | undefined;
  /**
   * Locks a state as `POST …/lock` does for `lockedBy`'s token: the state is created if missing,
   * and of `info` (Terraform's lock info) only the `ID` is kept. Throws if it is already locked.
   */
  lockTerraformState(
    project: number | string,
    name: string,
    lock: { lockedBy: string; lockedAt?: Date; info?: Partial<TerraformLockInfo> },
  ): FakeTerraformState;
  /** Removes the state's lock, as a force-unlock does. */
  unlockTerraformState(project: number | string, name: string): FakeTerraformState;
  /** Removes the state, as GitLab's deletion worker does. */
  deleteTerraformState(project: number | string, name: string): void;
  pipeline(pipelineId: number): FakePipeline;
  job(pipelineId: number, jobName: string): FakeJob;
  /**
   * Moves a job to `status`, then processes the pipeline as GitLab does: later stages start
   * (or become manual, or are skipped) when earlier ones finish, and the pipeline's status and
   * timestamps follow.
   */
  setJobStatus(
    pipelineId: number,
    jobName: string,
    status: JobStatus,
    options?: { failureReason?: string },
  ): FakeJob;
  setJobLog(pipelineId: number, jobName: string, log: string): void;
  appendJobLog(pipelineId: number, jobName: string, text: string): void;
  /** Puts a file into the job's artifacts (the job then has an artifacts archive). */
  setJobArtifact(pipelineId: number, jobName: string, path: string, content: string): void;
  /** Outputs for this pipeline's jobs (see `JobTraces`), over the project's. */
  setTraces(pipelineId: number, traces: JobTraces): void;
  /** Calls `listener` with every pipeline created from now on; returns the function that stops it. */
  onPipelineCreated(listener: (pipeline: FakePipeline) => void): () => void;

  /**
   * One step of the pipeline, as its runner and GitLab's processing take it: running jobs finish
   * (their logs and artifacts are set, and the next stage is processed), else pending jobs start
   * running, else created jobs are processed. A pipeline that waits on a manual job, or has
   * finished, does not move: the answer is then empty.
   */
  advance(pipelineId: number): JobTransition[];
  /** Makes the job fail with `reason` (default `script_failure`) when it finishes. */
  failJob(pipelineId: number, jobName: string, reason?: string): void;
  /**
   * Plays a manual job as a user clicking ▶ would (the same rules as the API); `as` names the
   * user (default: the token's), who then shows as the job's `user`.
   */
  playJob(pipelineId: number, jobName: string, options?: { as?: string }): FakeJob;
  /** Retries a finished job as a user clicking ↻ would: a new run of it, pending. */
  retryJob(pipelineId: number, jobName: string): FakeJob;
  /** Cancels a pipeline as a user clicking Cancel would (manual jobs stay playable). */
  cancelPipeline(pipelineId: number): void;
  /** Calls `advance` on every pipeline that can move, every `intervalMs`. */
  autoAdvance(options: { intervalMs: number }): void;
  stopAutoAdvance(): void;

  /** From now on, POSTs Pipeline and Job Hooks to `url` on every status change. */
  deliverHooks(options: HookOptions): void;
  stopHooks(): void;
  /** Every webhook request made, in order, with its answer once it came. */
  readonly hookDeliveries: readonly HookDelivery[];

  /** A mark for `requestsSince`: the number of requests received so far. */
  mark(): number;
  /** Requests received after `mark`. */
  requestsSince(mark: number): RecordedRequest[];

  /**
   * Resolves when no request is being handled (e.g. a delayed one whose client gave up) and
   * every webhook queued so far has been delivered.
   */
  settled(): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Defaults

/** The VM platform's pipeline (SPEC §1): the apply path, or the destroy path for `action: destroy`. */
export const DEFAULT_PIPELINE: PipelineDefinition = {
  stages: ["validate", "plan", "apply", "configure"],
  jobs: [
    { name: "tf:validate", stage: "validate", log: "terraform-validate" },
    { name: "tf:plan", stage: "plan", rules: (c) => !isDestroy(c), log: "terraform-plan" },
    {
      name: "tf:apply",
      stage: "apply",
      when: "manual",
      rules: (c) => !isDestroy(c),
      log: "terraform-apply",
      needs: ["tf:plan"],
    },
    { name: "ansible:configure", stage: "configure", rules: (c) => !isDestroy(c), log: "ansible" },
    { name: "notify:destroy", stage: "plan", rules: isDestroy },
    {
      name: "tf:destroy",
      stage: "apply",
      when: "manual",
      rules: isDestroy,
      log: "terraform-destroy",
    },
  ],
};

function isDestroy(context: PipelineContext): boolean {
  return context.inputs.action === "destroy" || context.variables.ACTION === "destroy";
}

/**
 * The VM pipeline's `spec:inputs`, as `examples/gitlab/.gitlab-ci.yml` declares them (SPEC §1):
 * untyped, so each is a string and GitLab refuses a number for it.
 */
export const VM_PIPELINE_INPUTS: Readonly<Record<string, InputSpec>> = {
  action: { default: "apply", options: ["apply", "destroy"] },
  vm_name: {},
  vm_ip: {},
  vm_gateway: { default: "192.168.1.1" },
  template_vm_id: { default: "9000" },
  proxmox_node: { default: "pve" },
  vm_id: { default: "0" },
  vlan_id: { default: "0" },
};

export const DEFAULT_PROJECT: FakeProjectOptions = {
  id: 42,
  path: "platform/vm-provisioning",
  defaultBranch: "main",
  inputs: { ...VM_PIPELINE_INPUTS },
};

const DEFAULT_USER: FakeUser = { id: 7, username: "vmbot", name: "vmbot" };

/** The Terraform the VM pipeline's jobs run (`hashicorp/terraform:1.9`). */
const TERRAFORM_VERSION = "1.9.8";

/**
 * The lock info Terraform's http backend POSTs to a state's lock address, for an apply run in a
 * CI job; `overrides` replaces any field.
 */
export function terraformLockInfo(overrides: Partial<TerraformLockInfo> = {}): TerraformLockInfo {
  return {
    ID: randomUUID(),
    Operation: "OperationTypeApply",
    Info: "",
    Who: `root@runner-${RUNNER.id}-project-concurrent-0`,
    Version: TERRAFORM_VERSION,
    Created: new Date().toISOString(),
    Path: "",
    ...overrides,
  };
}

/** The file `terraform init` leaves in a new state: no resources, serial 1. */
function emptyTerraformState(): string {
  return `${JSON.stringify(
    {
      version: 4,
      terraform_version: TERRAFORM_VERSION,
      serial: 1,
      lineage: randomUUID(),
      outputs: {},
      resources: [],
      check_results: null,
    },
    null,
    2,
  )}\n`;
}

/** The `serial` of a state file, when it is JSON and has one. */
function serialOf(content: string): number | null {
  try {
    const parsed: unknown = JSON.parse(content);
    const serial =
      typeof parsed === "object" && parsed !== null
        ? (parsed as Record<string, unknown>).serial
        : undefined;
    return typeof serial === "number" && Number.isInteger(serial) ? serial : null;
  } catch {
    return null;
  }
}

/** Stands for the binary plan file `terraform plan -out=tfplan` writes. */
const TFPLAN_PLACEHOLDER = "PK\u0003\u0004 tfplan: a Terraform plan file (zip)\n";

/** The instance runner every job runs on. */
const RUNNER = { id: 12, description: "pve-runner-01" };
const GITLAB_VERSION = "18.2.1";

/** Whether a GitLab version such as `17.9.3-ee` is `major.minor` or later. */
function versionAtLeast(version: string, major: number, minor: number): boolean {
  const [, a = "0", b = "0"] = /^(\d+)\.(\d+)/.exec(version) ?? [];
  return Number(a) > major || (Number(a) === major && Number(b) >= minor);
}

// IDs start in different ranges so a test notices when an iid or job ID is used as a pipeline ID.
const FIRST_PIPELINE_ID = 1001;
const FIRST_JOB_ID = 5001;
const FIRST_TERRAFORM_STATE_ID = 301;

const API_PREFIX = "/api/v4";
const DEFAULT_PER_PAGE = 20;
const MAX_PER_PAGE = 100;

const TERMINAL: ReadonlySet<JobStatus> = new Set(["success", "failed", "canceled", "skipped"]);
const ALL_STATUSES: readonly JobStatus[] = [
  "created",
  "waiting_for_resource",
  "preparing",
  "pending",
  "running",
  "success",
  "failed",
  "canceled",
  "skipped",
  "manual",
  "scheduled",
];

const ROLE_LEVEL: Record<Role, number> = {
  guest: 10,
  reporter: 20,
  developer: 30,
  maintainer: 40,
  owner: 50,
};

// ---------------------------------------------------------------------------------------------
// Errors and replies

type Reply =
  | { kind: "json"; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: "text"; status: number; text: string; headers?: Record<string, string> };

function json(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return { kind: "json", status, body, ...(headers ? { headers } : {}) };
}

/** An API error: thrown by handlers, rendered as GitLab renders it. */
class ApiError extends Error {
  constructor(readonly reply: Reply) {
    super(`GitLab API error ${reply.status}`);
  }
}

/** `render_api_error!`: `{"message": …}`. */
function apiError(status: number, message: unknown): ApiError {
  return new ApiError(json(status, { message }));
}

/** Grape parameter errors and the catch-all route: `{"error": …}`. */
function grapeError(status: number, error: string): ApiError {
  return new ApiError(json(status, { error }));
}

const unauthorized = (): ApiError => apiError(401, "401 Unauthorized");
const forbidden = (): ApiError => apiError(403, "403 Forbidden");
const projectNotFound = (): ApiError => apiError(404, "404 Project Not Found");
/** `ActiveRecord::RecordNotFound`, as the API rescues it. */
const recordNotFound = (): ApiError => apiError(404, "404 Not found");
/** Pipeline creation failed: `render_validation_error!` of `errors.base`. */
const pipelineError = (message: string): ApiError => apiError(400, { base: [message] });

/** The body GitLab (or Workhorse, for 502) answers with for a status. */
function defaultFailureReply(status: number, retryAfter: number | undefined, now: Date): Reply {
  const headers: Record<string, string> = {};
  if (retryAfter !== undefined) headers["retry-after"] = String(retryAfter);
  if (status === 429) {
    // Rack::Attack's throttle response (Gitlab::RackAttack.throttled_response_headers).
    const wait = retryAfter ?? 60;
    const reset = new Date(now.getTime() + wait * 1000);
    return {
      kind: "text",
      status,
      text: "Retry later\n",
      headers: {
        "ratelimit-name": "throttle_authenticated_api",
        "ratelimit-limit": "2000",
        "ratelimit-observed": "2001",
        "ratelimit-remaining": "0",
        "ratelimit-reset": String(Math.floor(reset.getTime() / 1000)),
        "ratelimit-resettime": reset.toUTCString(),
        "retry-after": String(wait),
      },
    };
  }
  if (status === 502) {
    return { kind: "text", status, text: "GitLab is not responding", headers };
  }
  const messages: Record<number, string> = {
    400: "400 Bad request",
    401: "401 Unauthorized",
    403: "403 Forbidden",
    404: "404 Not Found",
    409: "409 Conflict",
    500: "500 Internal Server Error",
  };
  const message = messages[status] ?? `${status} ${STATUS_CODES[status] ?? "Error"}`;
  return json(status, { message }, headers);
}

// ---------------------------------------------------------------------------------------------
// The model

interface Project {
  readonly id: number;
  readonly path: string;
  readonly defaultBranch: string;
  readonly branches: ReadonlySet<string>;
  readonly tags: ReadonlySet<string>;
  readonly inputs: Readonly<Record<string, InputSpec>> | undefined;
  role: Role;
  readonly pipeline: PipelineDefinition;
  readonly variablesMinimumRole: NonNullable<FakeProjectOptions["pipelineVariablesMinimumRole"]>;
  readonly protectedBranches: Readonly<Record<string, "developer" | "maintainer">>;
  readonly traces: JobTraces;
  readonly artifacts: Readonly<Record<string, Record<string, string>>> | undefined;
  nextIid: number;
}

type Permission =
  | "read_pipeline"
  | "create_pipeline"
  | "read_pipeline_variable"
  | "set_pipeline_variables"
  | "read_build"
  | "update_build"
  | "update_pipeline"
  | "read_terraform_state"
  | "admin_terraform_state"
  | "destroy_artifacts";

/** A status change in the model, for webhooks. */
type ModelEvent =
  | { kind: "job"; job: FakeJob; pipeline: FakePipeline }
  | { kind: "pipeline"; pipeline: FakePipeline };

/** `Ci::HasStatus::CANCELABLE_STATUSES`: what canceling a pipeline cancels (not `manual`). */
const CANCELABLE: ReadonlySet<JobStatus> = new Set([
  "created",
  "waiting_for_resource",
  "preparing",
  "pending",
  "running",
  "scheduled",
]);
const QUEUED: ReadonlySet<JobStatus> = new Set(["waiting_for_resource", "preparing", "pending"]);

/** The jobs a pipeline shows: the latest run of each. */
function latestJobs(pipeline: FakePipeline): FakeJob[] {
  return pipeline.jobs.filter((job) => !job.retried);
}

/** GitLab's composite status of a set of jobs (`Gitlab::Ci::Status::Composite`). */
export function compositeStatus(
  jobs: readonly Pick<FakeJob, "status" | "allowFailure">[],
): JobStatus | undefined {
  if (jobs.length === 0) return undefined;
  const set = new Set<string>();
  for (const job of jobs) {
    if (job.allowFailure && (job.status === "failed" || job.status === "canceled")) {
      set.add("success_with_warnings");
    } else if (job.allowFailure && job.status === "manual") {
      set.add("ignored");
    } else {
      set.add(job.status);
    }
  }
  const onlyOf = (...names: string[]): boolean => {
    const matching = names.filter((name) => set.has(name)).length;
    return matching > 0 && matching === set.size;
  };
  const anyOf = (...names: string[]): boolean => names.some((name) => set.has(name));
  if (onlyOf("skipped", "ignored")) return "skipped";
  if (onlyOf("success", "skipped", "success_with_warnings", "ignored")) return "success";
  if (onlyOf("created", "success_with_warnings", "ignored")) return "created";
  if (onlyOf("preparing", "success_with_warnings", "ignored")) return "preparing";
  if (onlyOf("canceled", "success", "skipped", "success_with_warnings", "ignored")) {
    return "canceled";
  }
  if (onlyOf("pending", "created", "skipped", "success_with_warnings", "ignored")) return "pending";
  if (anyOf("running", "pending")) return "running";
  if (anyOf("waiting_for_resource")) return "waiting_for_resource";
  if (anyOf("manual")) return "manual";
  if (anyOf("scheduled")) return "scheduled";
  if (anyOf("preparing")) return "preparing";
  if (anyOf("created")) return "running";
  return "failed";
}

/** What a `created` job becomes once the stages before it have this composite status. */
function promotion(when: JobWhen, before: JobStatus | undefined): JobStatus | undefined {
  if (before === undefined || before === "success" || before === "skipped") {
    if (when === "manual") return "manual";
    return when === "on_failure" ? "skipped" : "pending";
  }
  if (before === "failed" || before === "canceled") {
    return when === "on_failure" || when === "always" ? "pending" : "skipped";
  }
  return undefined; // earlier stages are still running or blocked
}

/** What the simulator writes into a job's log and artifacts, from the pipeline's parameters. */
/** The VM a pipeline was asked for, from its inputs (or their upper-case variables). */
export function vmParamsOf(pipeline: FakePipeline): VmParams {
  const variables = new Map(pipeline.variables.map((v) => [v.key, v.value]));
  const text = (name: string): string | undefined => {
    const value = pipeline.inputs[name] ?? variables.get(name.toUpperCase());
    return value === undefined ? undefined : String(value);
  };
  const number = (name: string): number | undefined => {
    const value = text(name);
    return value === undefined || !/^\d+$/.test(value) ? undefined : Number(value);
  };
  const params: VmParams = {};
  const name = text("vm_name");
  const ip = text("vm_ip");
  const gateway = text("vm_gateway");
  const node = text("proxmox_node");
  const dns = text("dns_server");
  if (name !== undefined) params.name = name;
  if (ip !== undefined) params.ip = ip;
  if (gateway !== undefined) params.gateway = gateway;
  if (node !== undefined) params.node = node;
  if (dns !== undefined) params.dns = dns;
  const templateId = number("template_vm_id");
  const cores = number("cpu_cores");
  const memoryMb = number("memory_mb");
  const diskGb = number("disk_size_gb");
  if (templateId !== undefined) params.templateId = templateId;
  if (cores !== undefined) params.cores = cores;
  if (memoryMb !== undefined) params.memoryMb = memoryMb;
  if (diskGb !== undefined) params.diskGb = diskGb;
  return params;
}

class GitlabModel {
  readonly projects: Project[];
  readonly pipelines: FakePipeline[] = [];
  readonly createdListeners = new Set<(pipeline: FakePipeline) => void>();
  readonly user: FakeUser;
  /** Every user of the instance, the token's first. */
  readonly users: FakeUser[];
  readonly terraformStates: FakeTerraformState[] = [];
  token: string;
  tokenValid = true;
  baseUrl = "";
  readonly version: string;
  readonly inputsQuery: boolean;
  /** Told of every job and pipeline status change, synchronously. */
  onEvent: (event: ModelEvent) => void = () => undefined;
  private nextPipelineId = FIRST_PIPELINE_ID;
  private nextJobId = FIRST_JOB_ID;
  private nextTerraformStateId = FIRST_TERRAFORM_STATE_ID;
  private nextTerraformVersionId = 1;
  /** Job ID → the failure reason it finishes with. */
  private readonly failures = new Map<number, string>();

  constructor(
    options: FakeGitlabOptions,
    readonly now: () => Date,
  ) {
    this.token = options.token;
    this.version = options.version ?? GITLAB_VERSION;
    this.inputsQuery = options.inputsQuery ?? true;
    this.user = { ...DEFAULT_USER, ...options.user };
    this.users = [this.user];
    for (const user of options.users ?? []) this.addUser(user);
    this.projects = (options.projects ?? [DEFAULT_PROJECT]).map((p) => toProject(p));
  }

  addUser(user: Pick<FakeUser, "username"> & Partial<FakeUser>): FakeUser {
    const taken = this.users.find((u) => u.username === user.username || u.id === user.id);
    if (taken) {
      throw new Error(`the fake GitLab already has a user ${taken.username} (#${taken.id})`);
    }
    const id = user.id ?? Math.max(...this.users.map((u) => u.id)) + 1;
    const added: FakeUser = { id, username: user.username, name: user.name ?? user.username };
    this.users.push(added);
    return added;
  }

  userByUsername(username: string): FakeUser {
    const user = this.users.find((u) => u.username === username);
    if (!user) {
      const known = this.users.map((u) => u.username).join(", ");
      throw new Error(
        `no user ${username} in the fake GitLab (users: ${known}); add it with addUser`,
      );
    }
    return user;
  }

  /** For handle methods: the project by ID or full path, or an error naming the known ones. */
  projectByIdOrPath(idOrPath: number | string): Project {
    const project = this.findProject(String(idOrPath));
    if (!project) {
      const known = this.projects.map((p) => `${p.id} (${p.path})`).join(", ");
      throw new Error(`no project ${idOrPath} in the fake GitLab (projects: ${known})`);
    }
    return project;
  }

  // -------------------------------------------------------------------------------------------
  // Terraform states (`Terraform::State`, `Terraform::RemoteStateHandler`)

  findTerraformState(project: Project, name: string): FakeTerraformState | undefined {
    return this.terraformStates.find((s) => s.projectId === project.id && s.name === name);
  }

  /** `Terraform::State.safe_find_or_create_by(project:, name:)`. */
  findOrCreateTerraformState(project: Project, name: string, at?: Date): FakeTerraformState {
    const existing = this.findTerraformState(project, name);
    if (existing) return existing;
    const timestamp = (at ?? this.now()).toISOString();
    const state: FakeTerraformState = {
      id: this.nextTerraformStateId++,
      projectId: project.id,
      name,
      latestVersion: null,
      lock: null,
      createdAt: timestamp,
      updatedAt: timestamp,
    };
    this.terraformStates.push(state);
    return state;
  }

  /** `Terraform::State#update_file!`: a new latest version. */
  storeTerraformState(
    state: FakeTerraformState,
    content: string,
    createdBy: FakeUser | null,
    at?: Date,
  ): void {
    const timestamp = (at ?? this.now()).toISOString();
    state.latestVersion = {
      id: this.nextTerraformVersionId++,
      serial: serialOf(content),
      content,
      createdBy,
      createdAt: timestamp,
    };
    state.updatedAt = latest(state.updatedAt, timestamp);
  }

  /** `RemoteStateHandler#lock!` once the state is known to be unlocked. */
  lockTerraformState(state: FakeTerraformState, id: string, user: FakeUser, at?: Date): void {
    const timestamp = (at ?? this.now()).toISOString();
    state.lock = { id, user, lockedAt: timestamp };
    state.updatedAt = latest(state.updatedAt, timestamp);
  }

  /** `RemoteStateHandler#unlock!` once the ID is known to match (or none was given). */
  unlockTerraformState(state: FakeTerraformState): void {
    // `save!` of an unchanged row does not touch `updated_at`.
    if (state.lock === null) return;
    state.lock = null;
    state.updatedAt = latest(state.updatedAt, this.timestamp());
  }

  removeTerraformState(state: FakeTerraformState): void {
    const index = this.terraformStates.indexOf(state);
    if (index >= 0) this.terraformStates.splice(index, 1);
  }

  timestamp(): string {
    return this.now().toISOString();
  }

  findProject(idOrPath: string): Project | undefined {
    if (/^\d+$/.test(idOrPath)) return this.projects.find((p) => p.id === Number(idOrPath));
    const wanted = idOrPath.toLowerCase();
    return this.projects.find((p) => p.path.toLowerCase() === wanted);
  }

  projectOf(pipeline: FakePipeline): Project {
    const project = this.projects.find((p) => p.id === pipeline.projectId);
    if (!project) throw new Error(`pipeline ${pipeline.id} has no project`);
    return project;
  }

  /** `ref`: for the actions that protected branches restrict. */
  can(project: Project, permission: Permission, ref?: string): boolean {
    const level = ROLE_LEVEL[project.role];
    switch (permission) {
      case "read_pipeline":
      case "read_build":
        return level >= ROLE_LEVEL.reporter;
      case "create_pipeline":
      case "read_pipeline_variable":
      case "read_terraform_state":
        return level >= ROLE_LEVEL.developer;
      case "admin_terraform_state":
      case "destroy_artifacts":
        return level >= ROLE_LEVEL.maintainer;
      case "set_pipeline_variables":
        return (
          project.variablesMinimumRole !== "no_one_allowed" &&
          level >= ROLE_LEVEL[project.variablesMinimumRole]
        );
      case "update_build":
      case "update_pipeline": {
        if (level < ROLE_LEVEL.developer) return false;
        const needed = ref === undefined ? undefined : project.protectedBranches[ref];
        return needed === undefined || level >= ROLE_LEVEL[needed];
      }
    }
  }

  pipelineById(pipelineId: number): FakePipeline {
    const pipeline = this.pipelines.find((p) => p.id === pipelineId);
    if (!pipeline) {
      const known = this.pipelines.map((p) => p.id).join(", ") || "none";
      throw new Error(`no pipeline ${pipelineId} in the fake GitLab (pipelines: ${known})`);
    }
    return pipeline;
  }

  /** The latest run of the job with that name. */
  jobByName(pipelineId: number, jobName: string): FakeJob {
    const pipeline = this.pipelineById(pipelineId);
    const job = latestJobs(pipeline).find((j) => j.name === jobName);
    if (!job) {
      const known = latestJobs(pipeline)
        .map((j) => j.name)
        .join(", ");
      throw new Error(`pipeline ${pipelineId} has no job ${jobName} (jobs: ${known})`);
    }
    return job;
  }

  createPipeline(
    project: Project,
    ref: string,
    inputs: Record<string, InputValue>,
    variables: PipelineVariable[],
    definitions: JobDefinition[],
  ): FakePipeline {
    const id = this.nextPipelineId++;
    const at = this.timestamp();
    const pipeline: FakePipeline = {
      id,
      iid: project.nextIid++,
      projectId: project.id,
      ref,
      sha: createHash("sha1").update(`${project.path}@${ref}`).digest("hex"),
      tag: project.tags.has(ref) && !project.branches.has(ref),
      status: "created",
      source: "api",
      inputs,
      variables,
      webUrl: `${this.baseUrl}/${project.path}/-/pipelines/${id}`,
      createdAt: at,
      updatedAt: at,
      startedAt: null,
      finishedAt: null,
      duration: null,
      stages: project.pipeline.stages,
      jobs: [],
      traces: {},
    };
    for (const definition of definitions) {
      pipeline.jobs.push(
        this.newJob(pipeline, {
          name: definition.name,
          stage: definition.stage,
          when: definition.when ?? "on_success",
          allowFailure: definition.allowFailure ?? false,
          tags: [...(definition.tags ?? [])].sort(),
          logKind: definition.log ?? "script",
          needs: [...(definition.needs ?? [])],
          user: this.user,
        }),
      );
    }
    this.pipelines.push(pipeline);
    for (const listener of [...this.createdListeners]) listener(pipeline);
    // Ci::Build runs its hooks after it is created, with status `created`.
    for (const job of pipeline.jobs) this.onEvent({ kind: "job", job, pipeline });
    return pipeline;
  }

  private newJob(
    pipeline: FakePipeline,
    from: Pick<
      FakeJob,
      "name" | "stage" | "when" | "allowFailure" | "tags" | "logKind" | "needs" | "user"
    >,
  ): FakeJob {
    const at = this.timestamp();
    return {
      id: this.nextJobId++,
      pipelineId: pipeline.id,
      name: from.name,
      stage: from.stage,
      when: from.when,
      allowFailure: from.allowFailure,
      tags: from.tags,
      logKind: from.logKind,
      needs: from.needs,
      user: from.user,
      status: "created",
      failureReason: null,
      log: "",
      artifacts: new Map(),
      artifactsDeletedAt: null,
      retried: false,
      createdAt: at,
      updatedAt: at,
      queuedAt: null,
      startedAt: null,
      finishedAt: null,
    };
  }

  /** A job's status transition, with the timestamps `CommitStatus`'s state machine sets. */
  setJobStatus(job: FakeJob, status: JobStatus, failureReason?: string): void {
    const from = job.status;
    const at = this.timestamp();
    job.status = status;
    if (status === "pending" || status === "running") job.queuedAt ??= at;
    if (status === "running") job.startedAt ??= at;
    if (TERMINAL.has(status) && status !== "skipped") job.finishedAt = at;
    if (!TERMINAL.has(status)) job.finishedAt = null;
    job.failureReason = status === "failed" ? (failureReason ?? "script_failure") : null;
    job.updatedAt = at;
    if (from !== status) {
      this.onEvent({ kind: "job", job, pipeline: this.pipelineById(job.pipelineId) });
    }
  }

  /**
   * `Ci::PipelineProcessing::AtomicProcessingService` in small: promote created jobs stage by
   * stage, then set the pipeline's status from its latest jobs.
   */
  process(pipeline: FakePipeline): void {
    const jobs = latestJobs(pipeline);
    for (const [index, stage] of pipeline.stages.entries()) {
      const earlier = jobs.filter((j) => pipeline.stages.indexOf(j.stage) < index);
      const before = compositeStatus(earlier);
      for (const job of jobs) {
        if (job.stage !== stage || job.status !== "created") continue;
        const next = promotion(job.when, before);
        if (next !== undefined) this.setJobStatus(job, next);
      }
    }
    this.setPipelineStatus(pipeline, compositeStatus(jobs) ?? "skipped");
  }

  /**
   * `Ci::Pipeline`'s state machine: `started_at` when it starts running, `finished_at` and the
   * duration when it succeeds, fails or is canceled, the duration again when it blocks on a
   * manual job. The row (and `updated_at`) changes only when the status does.
   */
  private setPipelineStatus(pipeline: FakePipeline, status: PipelineStatus): void {
    const from = pipeline.status;
    if (from === status) return;
    const at = this.timestamp();
    pipeline.status = status;
    if (
      status === "running" &&
      ["created", "waiting_for_resource", "preparing", "pending"].includes(from)
    ) {
      pipeline.startedAt = at;
    }
    if (status === "success" || status === "failed" || status === "canceled") {
      pipeline.finishedAt = at;
      pipeline.duration = this.durationOf(pipeline);
    }
    if (status === "manual") pipeline.duration = this.durationOf(pipeline);
    pipeline.updatedAt = at;
    this.onEvent({ kind: "pipeline", pipeline });
  }

  /** `Gitlab::Ci::Pipeline::Duration`: the union of the jobs' running periods, whole seconds. */
  private durationOf(pipeline: FakePipeline): number {
    const now = this.now().getTime();
    const periods = latestJobs(pipeline)
      .filter(
        (job) =>
          job.startedAt !== null &&
          ["success", "failed", "running", "canceled"].includes(job.status),
      )
      .map((job) => ({
        first: Date.parse(job.startedAt ?? ""),
        last: job.finishedAt === null ? now : Date.parse(job.finishedAt),
      }))
      .sort((a, b) => a.first - b.first);
    let total = 0;
    let current: { first: number; last: number } | undefined;
    for (const period of periods) {
      if (current !== undefined && period.first <= current.last) {
        current.last = Math.max(current.last, period.last);
      } else {
        if (current !== undefined) total += current.last - current.first;
        current = { ...period };
      }
    }
    if (current !== undefined) total += current.last - current.first;
    return Math.trunc(total / 1000);
  }

  /**
   * `Ci::Build#playable?` and `Ci::PlayBuildService`: a manual job waiting as `manual` is
   * enqueued; a finished one is retried (a new job); anything else cannot be played
   * (undefined). The player becomes the job's user.
   */
  play(job: FakeJob, by: FakeUser = this.user): FakeJob | undefined {
    if (job.when !== "manual" || job.retried) return undefined;
    const pipeline = this.pipelineById(job.pipelineId);
    if (job.status === "manual") {
      job.user = by;
      this.setJobStatus(job, "pending");
      this.process(pipeline);
      return job;
    }
    if (job.status === "success" || job.status === "failed" || job.status === "canceled") {
      job.retried = true;
      job.updatedAt = this.timestamp();
      const fresh = this.newJob(pipeline, { ...job, user: by });
      pipeline.jobs.push(fresh);
      this.onEvent({ kind: "job", job: fresh, pipeline });
      this.setJobStatus(fresh, "pending");
      this.process(pipeline);
      return fresh;
    }
    return undefined;
  }

  /**
   * `Ci::JobArtifacts::DeleteService`: the job's erasable artifacts (the archive and its
   * metadata) go; its log stays.
   */
  deleteArtifacts(job: FakeJob): void {
    job.artifacts.clear();
    job.artifactsDeletedAt ??= this.timestamp();
    job.updatedAt = this.timestamp();
  }

  /**
   * `Ci::RetryJobService`: a finished job (success, failed or canceled) that is not manual gets
   * a new run, pending; the old one is marked retried. Undefined when it cannot be retried.
   */
  retry(job: FakeJob): FakeJob | undefined {
    if (job.when === "manual" || job.retried) return undefined;
    if (!["success", "failed", "canceled"].includes(job.status)) return undefined;
    const pipeline = this.pipelineById(job.pipelineId);
    job.retried = true;
    job.updatedAt = this.timestamp();
    const fresh = this.newJob(pipeline, job);
    pipeline.jobs.push(fresh);
    this.onEvent({ kind: "job", job: fresh, pipeline });
    this.setJobStatus(fresh, "pending");
    this.process(pipeline);
    return fresh;
  }

  /** `Ci::CancelPipelineService`: cancels the cancelable jobs; manual ones stay playable. */
  cancel(pipeline: FakePipeline): void {
    for (const job of latestJobs(pipeline)) {
      if (CANCELABLE.has(job.status)) this.setJobStatus(job, "canceled");
    }
    this.process(pipeline);
  }

  // -------------------------------------------------------------------------------------------
  // The simulated runner

  failJob(job: FakeJob, reason: string): void {
    if (TERMINAL.has(job.status)) {
      throw new Error(`job ${job.name} (#${job.id}) has already finished as ${job.status}`);
    }
    this.failures.set(job.id, reason);
  }

  /** One step of a pipeline; see `FakeGitlab.advance`. */
  advance(pipeline: FakePipeline): JobTransition[] {
    const before = new Map(pipeline.jobs.map((job) => [job.id, job.status]));
    const jobs = latestJobs(pipeline);
    const running = jobs.filter((job) => job.status === "running");
    const queued = jobs.filter((job) => QUEUED.has(job.status));
    if (running.length > 0) {
      for (const job of running) this.finish(job, pipeline);
    } else {
      for (const job of queued) this.start(job, pipeline);
    }
    this.process(pipeline);
    const transitions: JobTransition[] = [];
    for (const job of pipeline.jobs) {
      const from = before.get(job.id) ?? null;
      if (from !== job.status) {
        transitions.push({ jobId: job.id, jobName: job.name, from, to: job.status });
      }
    }
    return transitions;
  }

  private start(job: FakeJob, pipeline: FakePipeline): void {
    this.setJobStatus(job, "running");
    job.log = traceWhileRunning(this.traceOf(job, pipeline, "success"));
  }

  private finish(job: FakeJob, pipeline: FakePipeline): void {
    const planned = this.failures.get(job.id);
    // A needed job's artifacts were deleted: the runner downloads nothing, the script fails.
    const missing = latestJobs(pipeline).find(
      (other) => job.needs.includes(other.name) && other.artifactsDeletedAt !== null,
    );
    const log =
      missing === undefined
        ? this.traceOf(job, pipeline, planned === undefined ? undefined : "failed")
        : this.missingArtifactsTrace(job, pipeline, missing);
    const failed = planned !== undefined || log.includes("ERROR: Job failed");
    job.log = log;
    if (!failed) {
      const project = this.projectOf(pipeline);
      const files = project.artifacts?.[job.name] ?? this.defaultArtifacts(job, pipeline);
      for (const [path, content] of Object.entries(files)) {
        if (!job.artifacts.has(path)) job.artifacts.set(path, content);
      }
    }
    this.setJobStatus(job, failed ? "failed" : "success", planned ?? "script_failure");
  }

  /** The log of a job whose needed artifacts are gone: Terraform finds no plan file. */
  private missingArtifactsTrace(job: FakeJob, pipeline: FakePipeline, gone: FakeJob): string {
    const project = this.projectOf(pipeline);
    const options: TraceOptions = {
      startedAt: job.startedAt === null ? this.now() : new Date(job.startedAt),
      finishedAt: this.now(),
      jobId: job.id,
      projectId: project.id,
      projectPath: project.path,
      ref: pipeline.ref,
      sha: pipeline.sha,
      outcome: "failed",
    };
    const output = [
      `No artifacts of ${gone.name} (#${gone.id}) to download: they were deleted.`,
      "",
      'Error: Failed to load "tfplan" as a plan file',
      "",
      "Error: stat tfplan: no such file or directory",
      "",
    ].join("\n");
    return job.logKind === "terraform-apply"
      ? applyTrace(output, options)
      : scriptTrace(output, options);
  }

  private defaultArtifacts(job: FakeJob, pipeline: FakePipeline): Record<string, string> {
    // `terraform plan -out=tfplan`, kept as an artifact for the apply job.
    if (job.logKind === "terraform-plan") return { tfplan: TFPLAN_PLACEHOLDER };
    if (job.logKind !== "terraform-apply") return {};
    const ip = vmParamsOf(pipeline).ip ?? "192.168.1.50/24";
    // `terraform output -raw vm_ip > vm_ip.txt`: no newline.
    return { "vm_ip.txt": addressOf(ip) };
  }

  /** The job's log for `outcome` (undefined: as its output decides). */
  private traceOf(job: FakeJob, pipeline: FakePipeline, outcome: JobOutcome | undefined): string {
    const project = this.projectOf(pipeline);
    const given = pipeline.traces[job.name] ?? project.traces[job.name];
    if (given !== undefined && isRunnerTrace(given)) return given;
    const options: TraceOptions = {
      startedAt: job.startedAt === null ? this.now() : new Date(job.startedAt),
      finishedAt: this.now(),
      jobId: job.id,
      projectId: project.id,
      projectPath: project.path,
      ref: pipeline.ref,
      sha: pipeline.sha,
    };
    if (outcome !== undefined) options.outcome = outcome;
    const failing = outcome === "failed";
    const vm = vmParamsOf(pipeline);
    // The job token acts as the user who started (or played) the job; GitLab refuses the state
    // lock to anyone below Maintainer, and Terraform stops there.
    const locksState = ["terraform-plan", "terraform-apply", "terraform-destroy"];
    if (given === undefined && locksState.includes(job.logKind)) {
      if (ROLE_LEVEL[project.role] < ROLE_LEVEL.maintainer) {
        const trace = job.logKind === "terraform-plan" ? planTrace : applyTrace;
        return trace(syntheticStateAuthError(), options);
      }
    }
    switch (job.logKind) {
      case "terraform-validate":
        return validateTrace(given ?? (failing ? terraformFailure() : undefined), options);
      case "terraform-plan":
        return planTrace(given ?? (failing ? syntheticPlanError() : syntheticPlan(vm)), options);
      case "terraform-apply":
        return applyTrace(given ?? (failing ? terraformFailure() : syntheticApply(vm)), options);
      case "terraform-destroy":
        return destroyTrace(given ?? (failing ? terraformFailure() : syntheticDestroy()), options);
      case "ansible":
        return ansibleTrace(
          given ??
            syntheticAnsibleRun({
              host: vm.name ?? "web-01",
              ...(failing ? { tasks: [...FAILING_TASKS] } : {}),
            }),
          options,
        );
      case "script":
        return scriptTrace(given ?? "", options);
    }
  }
}

/** The later of two ISO 8601 UTC timestamps. */
function latest(a: string, b: string): string {
  return a > b ? a : b;
}

function terraformFailure(): string {
  return `╷
│ Error: error waiting for VM clone: All attempts fail:
│ #1: task "UPID:pve:0001A2B3:00C4D5E6:6752A1B0:qmclone:9000:root@pam!terraform:" failed to complete with exit code: clone failed: storage 'local-lvm' does not exist
│
│   with proxmox_virtual_environment_vm.vm,
│   on main.tf line 12, in resource "proxmox_virtual_environment_vm" "vm":
│   12: resource "proxmox_virtual_environment_vm" "vm" {
│
╵
`;
}

function syntheticDestroy(): string {
  return `proxmox_virtual_environment_vm.vm: Refreshing state... [id=105]
proxmox_virtual_environment_vm.vm: Destroying... [id=105]
proxmox_virtual_environment_vm.vm: Destruction complete after 6s

Destroy complete! Resources: 1 destroyed.
`;
}

function toProject(options: FakeProjectOptions): Project {
  const defaultBranch = options.defaultBranch ?? "main";
  for (const [inputName, spec] of Object.entries(options.inputs ?? {})) {
    const problem =
      spec.default !== undefined && !inputTypeMatches(spec, spec.default)
        ? `its default is not a ${inputType(spec)}`
        : spec.options !== undefined && inputType(spec) === "boolean"
          ? "options can only be used with string and number inputs"
          : spec.default !== undefined &&
              spec.options?.some((option) => option === spec.default) === false
            ? "its default is not one of its options"
            : undefined;
    if (problem !== undefined) {
      throw new Error(`fake project ${options.path}: input ${inputName}: ${problem}`);
    }
  }
  const pipeline = options.pipeline ?? DEFAULT_PIPELINE;
  for (const job of pipeline.jobs) {
    if (!pipeline.stages.includes(job.stage)) {
      throw new Error(
        `fake project ${options.path}: job ${job.name} is in unknown stage ${job.stage}`,
      );
    }
  }
  return {
    id: options.id,
    path: options.path,
    defaultBranch,
    branches: new Set([defaultBranch, ...(options.branches ?? [])]),
    tags: new Set(options.tags ?? []),
    inputs: options.inputs,
    role: options.role ?? "maintainer",
    pipeline,
    variablesMinimumRole: options.pipelineVariablesMinimumRole ?? "developer",
    protectedBranches: options.protectedBranches ?? { [defaultBranch]: "maintainer" },
    traces: { ...options.traces },
    artifacts: options.artifacts,
    nextIid: 1,
  };
}

// ---------------------------------------------------------------------------------------------
// spec:inputs, as Gitlab::Ci::Config::Interpolation::Inputs checks them

function inputType(spec: InputSpec): "string" | "number" | "boolean" {
  return spec.type ?? "string";
}

function inputTypeMatches(spec: InputSpec, value: unknown): boolean {
  switch (inputType(spec)) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "boolean":
      return typeof value === "boolean";
  }
}

function formatInputValue(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Returns the inputs the pipeline runs with, or GitLab's error text (first 3 errors joined). */
function resolveInputs(
  specs: Readonly<Record<string, InputSpec>> | undefined,
  given: Record<string, unknown>,
): { inputs: Record<string, InputValue> } | { error: string } {
  const givenNames = Object.keys(given);
  if (specs === undefined) {
    if (givenNames.length > 0) {
      return {
        error: "Given inputs not defined in the `spec` section of the included configuration file",
      };
    }
    return { inputs: {} };
  }
  const errors: string[] = [];
  const unknown = givenNames.filter((name) => !Object.hasOwn(specs, name));
  if (unknown.length > 0) errors.push(`unknown input arguments: ${unknown.join(", ")}`);

  const inputs: Record<string, InputValue> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const raw = given[name];
    const provided = raw !== undefined && raw !== null;
    const fail = (message: string): void => {
      errors.push(`\`${name}\` input: ${message}`);
    };
    if (!provided) {
      if (spec.default === undefined) fail("required value has not been provided");
      else inputs[name] = spec.default;
      continue;
    }
    const type = inputType(spec);
    const typeOk = inputTypeMatches(spec, raw);
    if (!typeOk) fail(`provided value is not a ${type}`);
    if (spec.options !== undefined && !spec.options.some((option) => option === raw)) {
      // The two wordings are GitLab's own (StringInput and NumberInput differ by "the").
      const list =
        type === "number" ? "the list of the allowed options" : "the list of allowed options";
      fail(`\`${formatInputValue(raw)}\` cannot be used because it is not in ${list}`);
    }
    if (typeOk) inputs[name] = raw as InputValue;
  }
  return errors.length > 0 ? { error: errors.slice(0, 3).join(", ") } : { inputs };
}

// ---------------------------------------------------------------------------------------------
// JSON entities

function isoDiffSeconds(from: string | null, to: string | null): number | null {
  if (from === null || to === null) return null;
  return (Date.parse(to) - Date.parse(from)) / 1000;
}

/** `Ci::Pipeline#queued_duration`: whole seconds from creation to start, null when none. */
function pipelineQueuedDuration(pipeline: FakePipeline): number | null {
  const seconds = isoDiffSeconds(pipeline.createdAt, pipeline.startedAt);
  if (seconds === null) return null;
  const whole = Math.trunc(seconds);
  return whole === 0 ? null : whole;
}

/** How webhook payloads show a time (Ruby's `Time#to_s` in UTC): `2016-08-12 15:23:28 UTC`. */
function hookTime(iso: string | null): string | null {
  return iso === null ? null : `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** The `*_iso` fields of a Job Hook: ISO 8601 to the second, `2021-02-23T02:41:37Z`. */
function hookIsoTime(iso: string | null): string | null {
  return iso === null ? null : `${iso.slice(0, 19)}Z`;
}

/** The size of a ZIP archive holding the files uncompressed (stored), for `artifacts_file.size`. */
function storedZipSize(files: ReadonlyMap<string, string>): number {
  let size = 22; // end of central directory
  for (const [path, content] of files) {
    const name = Buffer.byteLength(path);
    size += 30 + name + Buffer.byteLength(content) + 46 + name;
  }
  return size;
}

/** Workhorse's `mime.TypeByExtension` (Go's built-in table) for an artifact entry. */
function artifactContentType(path: string): string {
  const extension = /\.[^./]+$/.exec(path)?.[0].toLowerCase() ?? "";
  const types: Record<string, string> = {
    ".avif": "image/avif",
    ".css": "text/css; charset=utf-8",
    ".gif": "image/gif",
    ".htm": "text/html; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".jpeg": "image/jpeg",
    ".jpg": "image/jpeg",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".mjs": "text/javascript; charset=utf-8",
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
    ".wasm": "application/wasm",
    ".webp": "image/webp",
    ".xml": "text/xml; charset=utf-8",
  };
  return types[extension] ?? "application/octet-stream";
}

/** A user's Gravatar, as GitLab links it for a user without an uploaded avatar. */
function avatarUrl(username: string): string {
  const hash = createHash("md5").update(`${username}@example.com`).digest("hex");
  return `https://www.gravatar.com/avatar/${hash}?s=80&d=identicon`;
}

interface StatusPresentation {
  text: string;
  label: string;
  icon: string;
  group: string;
  illustration: { image: string; size: string; title: string; content?: string } | null;
}

const NOT_TRIGGERED = {
  image: "/assets/illustrations/job_not_triggered.svg",
  size: "svg-306",
  title: "This job has not been triggered yet",
  content:
    "This job depends on upstream jobs that need to succeed in order for this job to be triggered",
};

/** Gitlab::Ci::Status::* for a pipeline (a `manual` pipeline is "blocked"). */
const PIPELINE_STATUS: Record<PipelineStatus, StatusPresentation> = {
  created: {
    text: "Created",
    label: "created",
    icon: "status_created",
    group: "created",
    illustration: NOT_TRIGGERED,
  },
  waiting_for_resource: {
    text: "Waiting",
    label: "waiting for resource",
    icon: "status_pending",
    group: "waiting-for-resource",
    illustration: null,
  },
  preparing: {
    text: "Preparing",
    label: "preparing",
    icon: "status_preparing",
    group: "preparing",
    illustration: null,
  },
  pending: {
    text: "Pending",
    label: "pending",
    icon: "status_pending",
    group: "pending",
    illustration: {
      image: "/assets/illustrations/pending_job_empty.svg",
      size: "svg-430",
      title: "This job has not started yet",
      content: "This job is in pending state and is waiting to be picked by a runner",
    },
  },
  running: {
    text: "Running",
    label: "running",
    icon: "status_running",
    group: "running",
    illustration: null,
  },
  success: {
    text: "Passed",
    label: "passed",
    icon: "status_success",
    group: "success",
    illustration: null,
  },
  failed: {
    text: "Failed",
    label: "failed",
    icon: "status_failed",
    group: "failed",
    illustration: null,
  },
  canceled: {
    text: "Canceled",
    label: "canceled",
    icon: "status_canceled",
    group: "canceled",
    illustration: null,
  },
  skipped: {
    text: "Skipped",
    label: "skipped",
    icon: "status_skipped",
    group: "skipped",
    illustration: {
      image: "/assets/illustrations/skipped-job_empty.svg",
      size: "svg-430",
      title: "This job has been skipped",
    },
  },
  manual: {
    text: "Blocked",
    label: "waiting for manual action",
    icon: "status_manual",
    group: "manual",
    illustration: null,
  },
  scheduled: {
    text: "Scheduled",
    label: "scheduled",
    icon: "status_scheduled",
    group: "scheduled",
    illustration: null,
  },
};

class Entities {
  constructor(private readonly model: GitlabModel) {}

  private get url(): string {
    return this.model.baseUrl;
  }

  userBasic(user: FakeUser = this.model.user): Record<string, unknown> {
    const { id, username, name } = user;
    return {
      id,
      username,
      name,
      state: "active",
      avatar_url: avatarUrl(username),
      web_url: `${this.url}/${username}`,
    };
  }

  /** Entities::User, as jobs show their user. */
  user(user: FakeUser = this.model.user): Record<string, unknown> {
    return {
      ...this.userBasic(user),
      created_at: "2024-01-15T09:00:00.000Z",
      bio: "",
      location: "",
      public_email: null,
      linkedin: "",
      twitter: "",
      discord: "",
      website_url: "",
      organization: "",
      job_title: "",
      pronouns: null,
      bot: false,
      work_information: null,
      local_time: null,
    };
  }

  commit(pipeline: FakePipeline, project: Project): Record<string, unknown> {
    const title = `Update ${pipeline.ref}`;
    const date = "2024-01-15T09:00:00.000Z";
    return {
      id: pipeline.sha,
      short_id: pipeline.sha.slice(0, 8),
      created_at: date,
      parent_ids: [],
      title,
      message: `${title}\n`,
      author_name: this.model.user.name,
      author_email: `${this.model.user.username}@example.com`,
      authored_date: date,
      committer_name: this.model.user.name,
      committer_email: `${this.model.user.username}@example.com`,
      committed_date: date,
      trailers: {},
      extended_trailers: {},
      web_url: `${this.url}/${project.path}/-/commit/${pipeline.sha}`,
    };
  }

  /** Entities::Ci::PipelineBasic, or PipelineBasicWithMetadata (the list) with `name`. */
  pipelineBasic(pipeline: FakePipeline, withMetadata = false): Record<string, unknown> {
    return {
      id: pipeline.id,
      iid: pipeline.iid,
      project_id: pipeline.projectId,
      sha: pipeline.sha,
      ref: pipeline.ref,
      status: pipeline.status,
      source: pipeline.source,
      created_at: pipeline.createdAt,
      updated_at: pipeline.updatedAt,
      web_url: pipeline.webUrl,
      ...(withMetadata ? { name: null } : {}),
    };
  }

  detailedStatus(pipeline: FakePipeline, project: Project): Record<string, unknown> {
    const status = PIPELINE_STATUS[pipeline.status];
    return {
      icon: status.icon,
      text: status.text,
      label: status.label,
      group: status.group,
      tooltip: status.label,
      has_details: true,
      details_path: `/${project.path}/-/pipelines/${pipeline.id}`,
      illustration: status.illustration,
      favicon: `/assets/ci_favicons/favicon_${status.icon}.png`,
    };
  }

  /** Entities::Ci::Pipeline (create), or PipelineWithMetadata (show) with `name`. */
  pipeline(pipeline: FakePipeline, withMetadata: boolean): Record<string, unknown> {
    const project = this.model.projectOf(pipeline);
    return {
      ...this.pipelineBasic(pipeline),
      before_sha: "0000000000000000000000000000000000000000",
      tag: pipeline.tag,
      yaml_errors: null,
      user: this.userBasic(),
      started_at: pipeline.startedAt,
      finished_at: pipeline.finishedAt,
      committed_at: null,
      duration: pipeline.duration,
      queued_duration: pipelineQueuedDuration(pipeline),
      coverage: null,
      detailed_status: this.detailedStatus(pipeline, project),
      ...(withMetadata ? { name: null } : {}),
    };
  }

  /** Entities::Ci::Job. */
  job(job: FakeJob, pipeline: FakePipeline): Record<string, unknown> {
    const project = this.model.projectOf(pipeline);
    const now = this.model.timestamp();
    const started = job.startedAt !== null;
    const archive = this.artifactsFile(job);
    return {
      id: job.id,
      status: job.status,
      stage: job.stage,
      name: job.name,
      ref: pipeline.ref,
      tag: pipeline.tag,
      coverage: null,
      allow_failure: job.allowFailure,
      created_at: job.createdAt,
      started_at: job.startedAt,
      finished_at: job.finishedAt,
      erased_at: null,
      duration: started ? isoDiffSeconds(job.startedAt, job.finishedAt ?? now) : null,
      queued_duration:
        job.queuedAt === null ? null : isoDiffSeconds(job.queuedAt, job.startedAt ?? now),
      user: this.user(job.user),
      commit: this.commit(pipeline, project),
      pipeline: this.pipelineBasic(pipeline),
      ...(job.status === "failed" ? { failure_reason: job.failureReason } : {}),
      web_url: `${this.url}/${project.path}/-/jobs/${job.id}`,
      project: { ci_job_token_scope_enabled: false },
      ...(archive === null ? {} : { artifacts_file: archive }),
      artifacts: this.jobArtifacts(job),
      runner: started
        ? {
            id: RUNNER.id,
            description: RUNNER.description,
            ip_address: "127.0.0.1",
            active: true,
            is_shared: true,
            name: "gitlab-runner",
            online: true,
            status: "online",
          }
        : null,
      runner_manager: null,
      artifacts_expire_at: archive === null ? null : this.artifactsExpireAt(job),
      archived: false,
      tag_list: [...job.tags],
    };
  }

  /** `artifacts_file`: the archive, when the job has one. */
  artifactsFile(job: FakeJob): { filename: string; size: number } | null {
    return job.artifacts.size === 0
      ? null
      : { filename: "artifacts.zip", size: storedZipSize(job.artifacts) };
  }

  /** `artifacts_expire_at`: the instance's default `expire_in` (30 days) after the job ended. */
  private artifactsExpireAt(job: FakeJob): string {
    const from = Date.parse(job.finishedAt ?? job.updatedAt);
    return new Date(from + 30 * 24 * 3600 * 1000).toISOString();
  }

  /** Entities::Ci::JobArtifact for each artifact: archive and metadata, then the archived log. */
  private jobArtifacts(job: FakeJob): Record<string, unknown>[] {
    const list: Record<string, unknown>[] = [];
    const archive = this.artifactsFile(job);
    if (archive !== null) {
      list.push(
        { file_type: "archive", size: archive.size, filename: "artifacts.zip", file_format: "zip" },
        {
          file_type: "metadata",
          size: 40 + 24 * job.artifacts.size,
          filename: "metadata.gz",
          file_format: "gzip",
        },
      );
    }
    if (job.finishedAt !== null && job.log !== "") {
      list.push({
        file_type: "trace",
        size: Buffer.byteLength(job.log),
        filename: "job.log",
        file_format: "raw",
      });
    }
    return list;
  }

  /** User#hook_attrs: no public email, so GitLab sends `[REDACTED]`. */
  private hookUser(user?: FakeUser): Record<string, unknown> {
    const basic = this.userBasic(user);
    return {
      id: basic.id,
      name: basic.name,
      username: basic.username,
      avatar_url: basic.avatar_url,
      email: "[REDACTED]",
    };
  }

  /** Project#hook_attrs(backward: false). */
  private hookProject(project: Project): Record<string, unknown> {
    const host = new URL(this.url).host;
    const segments = project.path.split("/");
    return {
      id: project.id,
      name: segments.at(-1) ?? project.path,
      description: "",
      web_url: `${this.url}/${project.path}`,
      avatar_url: null,
      git_ssh_url: `git@${host.split(":")[0] ?? host}:${project.path}.git`,
      git_http_url: `${this.url}/${project.path}.git`,
      namespace: segments.slice(0, -1).join("/") || project.path,
      visibility_level: 0,
      path_with_namespace: project.path,
      default_branch: project.defaultBranch,
      ci_config_path: null,
    };
  }

  private hookRunner(job: FakeJob): Record<string, unknown> | null {
    return job.startedAt === null
      ? null
      : {
          id: RUNNER.id,
          description: RUNNER.description,
          runner_type: "instance_type",
          active: true,
          is_shared: true,
          tags: [...job.tags],
        };
  }

  /** Gitlab::DataBuilder::Pipeline: the Pipeline Hook body. */
  pipelineHook(pipeline: FakePipeline): Record<string, unknown> {
    const project = this.model.projectOf(pipeline);
    const title = `Update ${pipeline.ref}`;
    return {
      object_kind: "pipeline",
      object_attributes: {
        id: pipeline.id,
        iid: pipeline.iid,
        name: null,
        ref: pipeline.ref,
        tag: pipeline.tag,
        sha: pipeline.sha,
        before_sha: "0000000000000000000000000000000000000000",
        source: pipeline.source,
        status: pipeline.status,
        detailed_status: PIPELINE_STATUS[pipeline.status].label,
        stages: [...pipeline.stages],
        created_at: hookTime(pipeline.createdAt),
        finished_at: hookTime(pipeline.finishedAt),
        duration: pipeline.duration,
        queued_duration: pipelineQueuedDuration(pipeline),
        protected_ref: project.protectedBranches[pipeline.ref] !== undefined,
        variables: pipeline.variables.map((v) => ({ key: v.key, value: v.value })),
        url: pipeline.webUrl,
      },
      merge_request: null,
      user: this.hookUser(),
      project: this.hookProject(project),
      commit: {
        id: pipeline.sha,
        message: `${title}\n`,
        title,
        timestamp: "2024-01-15T09:00:00+00:00",
        url: `${this.url}/${project.path}/-/commit/${pipeline.sha}`,
        author: { name: this.model.user.name, email: `${this.model.user.username}@example.com` },
      },
      builds: latestJobs(pipeline).map((job) => ({
        id: job.id,
        stage: job.stage,
        name: job.name,
        status: job.status,
        created_at: hookTime(job.createdAt),
        started_at: hookTime(job.startedAt),
        finished_at: hookTime(job.finishedAt),
        duration: this.jobDuration(job),
        queued_duration: this.jobQueuedDuration(job),
        failure_reason: job.status === "failed" ? job.failureReason : null,
        when: job.when,
        manual: job.when === "manual",
        allow_failure: job.allowFailure,
        user: this.hookUser(),
        runner: this.hookRunner(job),
        artifacts_file: {
          filename: this.artifactsFile(job)?.filename ?? null,
          size: this.artifactsFile(job)?.size ?? null,
        },
        environment: null,
      })),
    };
  }

  /** Gitlab::DataBuilder::Build: the Job Hook body. */
  jobHook(job: FakeJob, pipeline: FakePipeline): Record<string, unknown> {
    const project = this.model.projectOf(pipeline);
    const projectAttrs = this.hookProject(project);
    const title = `Update ${pipeline.ref}`;
    return {
      object_kind: "build",
      ref: pipeline.ref,
      tag: pipeline.tag,
      before_sha: "0000000000000000000000000000000000000000",
      sha: pipeline.sha,
      retries_count: pipeline.jobs.filter((j) => j.name === job.name && j.id < job.id).length,
      build_id: job.id,
      build_name: job.name,
      build_stage: job.stage,
      build_status: job.status,
      build_created_at: hookTime(job.createdAt),
      build_started_at: hookTime(job.startedAt),
      build_finished_at: hookTime(job.finishedAt),
      build_created_at_iso: hookIsoTime(job.createdAt),
      build_started_at_iso: hookIsoTime(job.startedAt),
      build_finished_at_iso: hookIsoTime(job.finishedAt),
      build_duration: this.jobDuration(job),
      build_queued_duration: this.jobQueuedDuration(job),
      build_allow_failure: job.allowFailure,
      build_failure_reason: job.failureReason ?? "unknown_failure",
      pipeline_id: pipeline.id,
      runner: this.hookRunner(job),
      project_id: project.id,
      project_name: project.path.split("/").join(" / "),
      user: this.hookUser(job.user),
      commit: {
        id: pipeline.id,
        name: null,
        sha: pipeline.sha,
        message: `${title}\n`,
        author_name: this.model.user.name,
        author_email: `${this.model.user.username}@example.com`,
        author_url: `${this.url}/${this.model.user.username}`,
        status: pipeline.status,
        duration: pipeline.duration,
        started_at: hookTime(pipeline.startedAt),
        finished_at: hookTime(pipeline.finishedAt),
        started_at_iso: hookIsoTime(pipeline.startedAt),
        finished_at_iso: hookIsoTime(pipeline.finishedAt),
      },
      repository: {
        name: projectAttrs.name,
        url: projectAttrs.git_ssh_url,
        description: "",
        homepage: projectAttrs.web_url,
        git_http_url: projectAttrs.git_http_url,
        git_ssh_url: projectAttrs.git_ssh_url,
        visibility_level: 0,
      },
      project: projectAttrs,
      environment: null,
    };
  }

  /** Ci::Processable#duration: running time so far, or in all once finished. */
  private jobDuration(job: FakeJob): number | null {
    return job.startedAt === null
      ? null
      : isoDiffSeconds(job.startedAt, job.finishedAt ?? this.model.timestamp());
  }

  private jobQueuedDuration(job: FakeJob): number | null {
    return job.queuedAt === null
      ? null
      : isoDiffSeconds(job.queuedAt, job.startedAt ?? this.model.timestamp());
  }

  /** Entities::Ci::Variable for a pipeline variable. */
  variable(variable: PipelineVariable): Record<string, unknown> {
    return {
      variable_type: variable.variable_type,
      key: variable.key,
      value: variable.value,
      raw: false,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Routing

interface Caller {
  /** False: no token was sent. */
  authenticated: boolean;
}

interface RouteContext {
  readonly req: RecordedRequest;
  readonly params: Readonly<Record<string, string>>;
  readonly caller: Caller;
  readonly model: GitlabModel;
  readonly entities: Entities;
  /** Query and body parameters, body winning, as Grape merges them. */
  readonly input: Readonly<Record<string, unknown>>;
}

type Handler = (ctx: RouteContext) => Reply;

interface Route {
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
const INTEGER_PARAMS: ReadonlySet<string> = new Set(["pipeline_id", "job_id"]);

function route(
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
function graphqlRoute(method: string): Route {
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
function tokenOf(req: RecordedRequest, basicAuth = false): string | undefined {
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

function parseInput(req: RecordedRequest): Record<string, unknown> {
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

function projectFor(ctx: RouteContext): Project {
  const idOrPath = ctx.params.id ?? "";
  const project = ctx.model.findProject(idOrPath);
  // Private projects: a caller without a token, or not a member, is told the project does not exist.
  if (!project || !ctx.caller.authenticated) throw projectNotFound();
  return project;
}

function authorize(
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

function pipelineFor(ctx: RouteContext, project: Project): FakePipeline {
  const id = integerParam(ctx, "pipeline_id");
  const pipeline = ctx.model.pipelines.find((p) => p.id === id && p.projectId === project.id);
  if (!pipeline) throw recordNotFound();
  return pipeline;
}

function jobFor(ctx: RouteContext, project: Project): { job: FakeJob; pipeline: FakePipeline } {
  const id = integerParam(ctx, "job_id");
  for (const pipeline of ctx.model.pipelines) {
    if (pipeline.projectId !== project.id) continue;
    const job = pipeline.jobs.find((j) => j.id === id);
    if (job) return { job, pipeline };
  }
  throw recordNotFound();
}

/** Offset pagination, with the headers GitLab sends (`x-total`, `x-next-page`, `link`, …). */
function paginate<T>(
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

// ---------------------------------------------------------------------------------------------
// Handlers

/** POST /projects/:id/pipeline (Ci::CreatePipelineService, source `api`). */
function createPipeline(ctx: RouteContext): Reply {
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

function showPipeline(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  const pipeline = pipelineFor(ctx, project);
  authorize(ctx, project, "read_pipeline");
  return json(200, ctx.entities.pipeline(pipeline, true));
}

function pipelineVariables(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  const pipeline = pipelineFor(ctx, project);
  authorize(ctx, project, "read_pipeline_variable");
  return json(
    200,
    pipeline.variables.map((v) => ctx.entities.variable(v)),
  );
}

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

function pipelineJobs(ctx: RouteContext): Reply {
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

function showJob(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  authorize(ctx, project, "read_build");
  const { job, pipeline } = jobFor(ctx, project);
  return json(200, ctx.entities.job(job, pipeline));
}

/** GET …/jobs/:job_id/trace: the raw log, `Content-Type: text/plain` as the Jobs API sets it. */
function jobTrace(ctx: RouteContext): Reply {
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

/** A Grape `Boolean` parameter: undefined when absent. */
function booleanParam(ctx: RouteContext, name: string): boolean | undefined | "invalid" {
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
function listPipelines(ctx: RouteContext): Reply {
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
function cancelPipeline(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  const pipeline = pipelineFor(ctx, project);
  authorize(ctx, project, "update_pipeline", pipeline.ref);
  ctx.model.cancel(pipeline);
  return json(200, ctx.entities.pipeline(pipeline, false));
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
function playJob(ctx: RouteContext): Reply {
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
function retryJob(ctx: RouteContext): Reply {
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
function jobArtifactFile(ctx: RouteContext): Reply {
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
function deleteJobArtifacts(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  authorize(ctx, project, "destroy_artifacts");
  const { job } = jobFor(ctx, project);
  ctx.model.deleteArtifacts(job);
  return noContent();
}

// ---------------------------------------------------------------------------------------------
// Terraform state (API::Terraform::State and Terraform::RemoteStateHandler)

/** What Terraform's http backend sends to lock a state (`requires` of `POST …/lock`). */
const LOCK_INFO_FIELDS: readonly (keyof TerraformLockInfo)[] = [
  "ID",
  "Operation",
  "Info",
  "Who",
  "Version",
  "Created",
  "Path",
];

const INVALID = Symbol("invalid");

/** Grape's coercion of a `type: String` parameter: absent → undefined, JSON null → null. */
function coerceString(raw: unknown): string | null | undefined | typeof INVALID {
  if (raw === undefined || raw === null) return raw;
  if (typeof raw === "string") return raw;
  if (typeof raw === "number" || typeof raw === "boolean") return String(raw);
  return INVALID;
}

/**
 * The state API's `before` block (`authenticate!`, then `read_terraform_state` on the project),
 * then its parameters as Grape checks them: the namespace's `optional :ID, limit: 255`, then the
 * endpoint's `requires`. Answers the project and the `ID` parameter.
 */
function terraformStateRequest(
  ctx: RouteContext,
  required: readonly string[] = [],
): { project: Project; lockId: string | null | undefined } {
  const project = projectFor(ctx);
  authorize(ctx, project, "read_terraform_state");
  const errors: string[] = [];
  const lockId = coerceString(ctx.input.ID);
  if (lockId === INVALID) {
    errors.push("ID is invalid");
  } else if (typeof lockId === "string" && lockId.length > 255) {
    // The Limit validator's message names the parameter, and Grape puts the name before it too.
    errors.push("ID ID must be less than 255 characters");
  }
  for (const name of required) {
    if (!Object.hasOwn(ctx.input, name)) errors.push(`${name} is missing`);
    else if (coerceString(ctx.input[name]) === INVALID) errors.push(`${name} is invalid`);
  }
  if (errors.length > 0) throw grapeError(400, [...new Set(errors)].join(", "));
  return { project, lockId: lockId === INVALID ? undefined : lockId };
}

/** `find_with_lock`: the state must exist (`ActiveRecord::RecordNotFound` otherwise). */
function existingTerraformState(ctx: RouteContext, project: Project): FakeTerraformState {
  const state = ctx.model.findTerraformState(project, ctx.params.name ?? "");
  if (!state) throw recordNotFound();
  return state;
}

/** `RemoteStateHandler#lock_matches?`: no lock and no ID, or the lock's own ID. */
function lockMatches(state: FakeTerraformState, lockId: string | null | undefined): boolean {
  const held = state.lock?.id;
  if (held === undefined && (lockId === undefined || lockId === null)) return true;
  return (held ?? "") === (lockId ?? "");
}

/** An exception the API does not rescue itself (`handle_api_exception`). */
const internalServerError = (): ApiError => apiError(500, "500 Internal Server Error");

/**
 * A body the endpoint sends past Grape's JSON formatter (`env['api.format'] = :binary`). The API
 * registers no content type for that format, so Rails sends none and Workhorse (Go's net/http)
 * sniffs one: plain text for a JSON document.
 */
function unformatted(status: number, text: string): Reply {
  return { kind: "text", status, text, headers: { "content-type": "text/plain; charset=utf-8" } };
}

/** `no_content!`: 204, no body. */
function noContent(): Reply {
  return { kind: "text", status: 204, text: "", headers: { "content-type": "application/json" } };
}

/**
 * `body false` then `status :ok`: Grape's JSON formatter renders the empty body as the JSON
 * string `""`.
 */
const emptyJsonBody = (): Reply => json(200, "");

/** GET …/terraform/state/:name: the latest version's file as it was stored; 204 before one. */
function showTerraformState(ctx: RouteContext): Reply {
  const { project } = terraformStateRequest(ctx);
  const state = existingTerraformState(ctx, project);
  if (state.latestVersion === null) return noContent();
  return unformatted(200, state.latestVersion.content);
}

/**
 * POST …/terraform/state/:name: stores the body as the latest version (creating the state), if
 * the state is unlocked and no `ID` is given, or `ID` is its lock's. A lock mismatch raises
 * `StateLockedError`, which this endpoint does not rescue: 500.
 */
function storeTerraformState(ctx: RouteContext): Reply {
  const { project, lockId } = terraformStateRequest(ctx);
  authorize(ctx, project, "admin_terraform_state");
  const data = ctx.req.body;
  if (data.length === 0) return noContent();
  const state = ctx.model.findOrCreateTerraformState(project, ctx.params.name ?? "");
  if (!lockMatches(state, lockId)) throw internalServerError();
  ctx.model.storeTerraformState(state, data, ctx.model.user);
  return emptyJsonBody();
}

/**
 * DELETE …/terraform/state/:name: `TriggerDestroyService` removes an unlocked state (here at
 * once, as its worker would); it refuses a locked one, and the endpoint answers 200 either way.
 */
function deleteTerraformState(ctx: RouteContext): Reply {
  const { project } = terraformStateRequest(ctx);
  authorize(ctx, project, "admin_terraform_state");
  const state = existingTerraformState(ctx, project);
  if (state.lock === null) ctx.model.removeTerraformState(state);
  return emptyJsonBody();
}

/**
 * POST …/terraform/state/:name/lock: locks the state (creating it) for the token's user, or 409
 * if it is locked already. Either way the body is the request's lock info with `ID`, `Who` (a
 * GitLab username) and `Created` taken from the state's lock, the holder's.
 */
function lockTerraformState(ctx: RouteContext): Reply {
  const { project, lockId } = terraformStateRequest(ctx, LOCK_INFO_FIELDS);
  authorize(ctx, project, "admin_terraform_state");
  // `lock!` raises ArgumentError for a blank ID.
  if (lockId === undefined || lockId === null || lockId.trim() === "") {
    throw internalServerError();
  }
  const state = ctx.model.findOrCreateTerraformState(project, ctx.params.name ?? "");
  const conflict = state.lock !== null;
  if (!conflict) ctx.model.lockTerraformState(state, lockId, ctx.model.user);
  const lock = state.lock;
  if (lock === null) throw new Error(`Terraform state ${state.name} was not locked`);
  const text = (name: string): string | null => {
    const value = coerceString(ctx.input[name]);
    return value === INVALID || value === undefined ? null : value;
  };
  const info = {
    Operation: text("Operation"),
    Info: text("Info"),
    Version: text("Version"),
    Path: text("Path"),
    ID: lock.id,
    Who: lock.user.username,
    Created: lock.lockedAt,
  };
  return unformatted(conflict ? 409 : 200, JSON.stringify(info));
}

/**
 * DELETE …/terraform/state/:name/lock: unlocks when `ID` is the lock's, or when no `ID` is given
 * (a force-unlock); another `ID` is 409. The state is created if missing, as `unlock!` finds or
 * creates it. The body is what the endpoint returns, the status code: `200` or `409`.
 */
function unlockTerraformState(ctx: RouteContext): Reply {
  const { project, lockId } = terraformStateRequest(ctx);
  authorize(ctx, project, "admin_terraform_state");
  const state = ctx.model.findOrCreateTerraformState(project, ctx.params.name ?? "");
  const force = lockId === undefined || lockId === null;
  if (!force && !lockMatches(state, lockId)) return json(409, 409);
  ctx.model.unlockTerraformState(state);
  return json(200, 200);
}

// ---------------------------------------------------------------------------------------------
// GraphQL (/api/graphql): a slice of GitLab's schema, executed by graphql-js

const GRAPHQL_SCHEMA = buildSchema(`
"""Time represented in ISO 8601."""
scalar Time

"""Represents untyped JSON."""
scalar JSON

type Query {
  """Find a project."""
  project(fullPath: ID!): Project
}

type Project {
  id: ID!
  fullPath: ID!
  name: String!
  path: String!
  nameWithNamespace: String!
  webUrl: String
  """Find a single Terraform state by name."""
  terraformState(name: String!): TerraformState
  """Terraform states associated with the project."""
  terraformStates(after: String, before: String, first: Int, last: Int): TerraformStateConnection
  """Inputs to create a pipeline."""
  ciPipelineCreationInputs(ref: String!): [CiInputsSpecification]
}

enum CiInputsType {
  ARRAY
  BOOLEAN
  NUMBER
  STRING
}

"""Input for pipeline creation inputs."""
type CiInputsSpecification {
  default: JSON
  description: String
  name: String
  options: JSON
  regex: String
  required: Boolean
  type: CiInputsType
}

"""The connection type for TerraformState."""
type TerraformStateConnection {
  """Total count of collection."""
  count: Int!
  edges: [TerraformStateEdge]
  nodes: [TerraformState]
  pageInfo: PageInfo!
}

type TerraformStateEdge {
  cursor: String!
  node: TerraformState
}

type PageInfo {
  endCursor: String
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
}

type TerraformState {
  createdAt: Time!
  deletedAt: Time
  id: ID!
  latestVersion: TerraformStateVersion
  lockedAt: Time
  lockedByUser: UserCore
  name: String!
  updatedAt: Time!
}

type TerraformStateVersion {
  createdAt: Time!
  createdByUser: UserCore
  downloadPath: String
  id: ID!
  serial: Int
  updatedAt: Time!
}

enum UserState {
  active
  banned
  blocked
  blocked_pending_approval
  deactivated
  ldap_blocked
}

interface User {
  avatarUrl: String
  bot: Boolean!
  id: ID!
  name: String!
  publicEmail: String
  state: UserState!
  username: String!
  webPath: String!
  webUrl: String!
}

"""Core representation of a GitLab user."""
type UserCore implements User {
  avatarUrl: String
  bot: Boolean!
  id: ID!
  name: String!
  publicEmail: String
  state: UserState!
  username: String!
  webPath: String!
  webUrl: String!
}
`);

/** GitlabSchema's `default_max_page_size`. */
const GRAPHQL_MAX_PAGE_SIZE = 100;
/** `GraphqlController::MAX_QUERY_SIZE`. */
const GRAPHQL_MAX_QUERY_SIZE = 10_000;

/** Rails' `render json:`. */
function graphqlReply(status: number, body: unknown): Reply {
  return json(status, body, { "content-type": "application/json; charset=utf-8" });
}

/** A global ID, `gid://gitlab/Project/42`. */
function gid(model: string, id: number): string {
  return `gid://gitlab/${model}/${id}`;
}

/** `Types::TimeType`: ISO 8601 to the second. */
function graphqlTime(iso: string): string;
function graphqlTime(iso: string | null): string | null;
function graphqlTime(iso: string | null): string | null {
  return iso === null ? null : `${iso.slice(0, 19)}Z`;
}

function graphqlUser(model: GitlabModel, user: FakeUser | null): Record<string, unknown> | null {
  if (user === null) return null;
  return {
    avatarUrl: avatarUrl(user.username),
    bot: false,
    id: gid("User", user.id),
    name: user.name,
    publicEmail: null,
    state: "active",
    username: user.username,
    webPath: `/${user.username}`,
    webUrl: `${model.baseUrl}/${user.username}`,
  };
}

function graphqlTerraformState(
  model: GitlabModel,
  state: FakeTerraformState,
): Record<string, unknown> {
  const version = state.latestVersion;
  return {
    createdAt: graphqlTime(state.createdAt),
    deletedAt: null,
    id: gid("Terraform::State", state.id),
    latestVersion:
      version === null
        ? null
        : {
            createdAt: graphqlTime(version.createdAt),
            createdByUser: graphqlUser(model, version.createdBy),
            downloadPath:
              version.serial === null
                ? null
                : `${API_PREFIX}/projects/${state.projectId}/terraform/state/${encodeURIComponent(state.name)}/versions/${version.serial}`,
            id: gid("Terraform::StateVersion", version.id),
            serial: version.serial,
            updatedAt: graphqlTime(version.createdAt),
          },
    lockedAt: graphqlTime(state.lock?.lockedAt ?? null),
    lockedByUser: graphqlUser(model, state.lock?.user ?? null),
    name: state.name,
    updatedAt: graphqlTime(state.updatedAt),
  };
}

interface ConnectionArgs {
  after?: string | null;
  before?: string | null;
  first?: number | null;
  last?: number | null;
}

/** A keyset cursor for the states' order (`ordered_by_name`): Base64 of the row's keys. */
function stateCursor(state: FakeTerraformState): string {
  return Buffer.from(JSON.stringify({ name: state.name, id: String(state.id) })).toString("base64");
}

function cursorName(cursor: string): string {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, "base64").toString("utf8"));
    const name =
      typeof decoded === "object" && decoded !== null
        ? (decoded as Record<string, unknown>).name
        : undefined;
    if (typeof name === "string") return name;
  } catch {
    // not a cursor this connection made
  }
  throw new GraphQLError("Please provide a valid cursor");
}

/** `Types::CountableConnectionType` over the states, ordered by name, paged by keyset. */
function terraformStateConnection(
  model: GitlabModel,
  states: readonly FakeTerraformState[],
  args: ConnectionArgs,
): Record<string, unknown> {
  const all = [...states].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let window = all;
  if (args.after) {
    const after = cursorName(args.after);
    window = window.filter((s) => s.name > after);
  }
  if (args.before) {
    const before = cursorName(args.before);
    window = window.filter((s) => s.name < before);
  }
  const size = (n: number | null | undefined): number | undefined =>
    n === undefined || n === null ? undefined : Math.min(Math.max(n, 0), GRAPHQL_MAX_PAGE_SIZE);
  const first = size(args.first);
  const last = size(args.last);
  let page = window.slice(0, first ?? (last === undefined ? GRAPHQL_MAX_PAGE_SIZE : undefined));
  if (last !== undefined) page = page.slice(Math.max(page.length - last, 0));
  const firstIndex = page[0] === undefined ? -1 : all.indexOf(page[0]);
  const lastItem = page.at(-1);
  const lastIndex = lastItem === undefined ? -1 : all.indexOf(lastItem);
  return {
    count: all.length,
    edges: page.map((state) => ({
      cursor: stateCursor(state),
      node: graphqlTerraformState(model, state),
    })),
    nodes: page.map((state) => graphqlTerraformState(model, state)),
    pageInfo: {
      endCursor: lastItem === undefined ? null : stateCursor(lastItem),
      hasNextPage: lastIndex >= 0 && lastIndex < all.length - 1,
      hasPreviousPage: firstIndex > 0,
      startCursor: page[0] === undefined ? null : stateCursor(page[0]),
    },
  };
}

/**
 * `Query.project(fullPath:)`: a project the caller can see (every fake project is private, and
 * the token's user is a member of each), else null. Its states need `read_terraform_state`
 * (`Terraform::StatesFinder`): below Developer the list is empty.
 */
function graphqlRoot(model: GitlabModel, caller: Caller): Record<string, unknown> {
  return {
    project: ({ fullPath }: { fullPath: string }) => {
      const wanted = fullPath.toLowerCase();
      const project = model.projects.find((p) => p.path.toLowerCase() === wanted);
      if (!project || !caller.authenticated) return null;
      const segments = project.path.split("/");
      const leaf = segments.at(-1) ?? project.path;
      const states = (): FakeTerraformState[] =>
        model.can(project, "read_terraform_state")
          ? model.terraformStates.filter((s) => s.projectId === project.id)
          : [];
      return {
        id: gid("Project", project.id),
        fullPath: project.path,
        name: leaf,
        path: leaf,
        nameWithNamespace: segments.join(" / "),
        webUrl: `${model.baseUrl}/${project.path}`,
        terraformState: ({ name }: { name: string }) => {
          const state = states().find((s) => s.name === name);
          return state === undefined ? null : graphqlTerraformState(model, state);
        },
        terraformStates: (args: ConnectionArgs) => terraformStateConnection(model, states(), args),
        // `Ci::PipelineCreation::FindPipelineInputsService`: the spec of the config on `ref`.
        ciPipelineCreationInputs: ({ ref }: { ref: string }) => {
          if (!model.inputsQuery) {
            throw new Error("Field 'ciPipelineCreationInputs' doesn't exist on type 'Project'");
          }
          if (!model.can(project, "create_pipeline")) return null;
          if (!project.branches.has(ref) && !project.tags.has(ref)) {
            throw new Error("The branch or tag does not exist");
          }
          return Object.entries(project.inputs ?? {}).map(([name, spec]) => ({
            name,
            type: (spec.type ?? "string").toUpperCase(),
            description: spec.description ?? null,
            required: spec.default === undefined,
            default: spec.default ?? null,
            options: spec.options ?? null,
            regex: null,
          }));
        },
      };
    },
  };
}

/** How graphql-ruby names a node in an error's `path`. */
function pathSegment(node: ASTNode): string[] {
  switch (node.kind) {
    case Kind.OPERATION_DEFINITION:
      return [node.name ? `${node.operation} ${node.name.value}` : node.operation];
    case Kind.FRAGMENT_DEFINITION:
      return [`fragment ${node.name.value}`];
    case Kind.FIELD:
      return [node.alias?.value ?? node.name.value];
    case Kind.INLINE_FRAGMENT:
      return [node.typeCondition ? `... on ${node.typeCondition.name.value}` : "..."];
    case Kind.FRAGMENT_SPREAD:
      return [`... ${node.name.value}`];
    case Kind.ARGUMENT:
      return [node.name.value];
    default:
      return [];
  }
}

/** Where a node sits in the query, as a static validation error's `path` shows it. */
function documentPath(document: DocumentNode, target: ASTNode): string[] | undefined {
  let found: string[] | undefined;
  visit(document, {
    enter(node, _key, _parent, _path, ancestors) {
      if (node !== target) return undefined;
      const chain = ancestors.filter((a): a is ASTNode => !Array.isArray(a));
      found = [...chain, node].flatMap((a) => pathSegment(a));
      return BREAK;
    },
  });
  return found;
}

/** graphql-js's wording of the common validation errors, and graphql-ruby's (message, extensions). */
const VALIDATION_WORDING: readonly {
  pattern: RegExp;
  ruby: (m: RegExpExecArray) => { message: string; extensions: Record<string, string> };
}[] = [
  {
    pattern: /^Cannot query field "(\w+)" on type "(\w+)"\./,
    ruby: ([, field = "", type = ""]) => ({
      message: `Field '${field}' doesn't exist on type '${type}'`,
      extensions: { code: "undefinedField", typeName: type, fieldName: field },
    }),
  },
  {
    pattern: /^Unknown argument "(\w+)" on field "\w+\.(\w+)"\./,
    ruby: ([, argument = "", field = ""]) => ({
      message: `Field '${field}' doesn't accept argument '${argument}'`,
      extensions: {
        code: "argumentNotAccepted",
        name: field,
        typeName: "Field",
        argumentName: argument,
      },
    }),
  },
  {
    pattern:
      /^Field "(\w+)" argument "(\w+)" of type "[^"]+" is required, but it was not provided\./,
    ruby: ([, field = "", argument = ""]) => ({
      message: `Field '${field}' is missing required arguments: ${argument}`,
      extensions: {
        code: "missingRequiredArguments",
        className: "Field",
        name: field,
        arguments: argument,
      },
    }),
  },
  {
    pattern: /^Field "(\w+)" of type "\[*(\w+)[\]!]*" must have a selection of subfields\./,
    ruby: ([, field = "", type = ""]) => ({
      message: `Field must have selections (field '${field}' returns ${type} but has no selections. Did you mean '${field} { ... }'?)`,
      extensions: { code: "selectionMismatch", nodeName: `field '${field}'`, typeName: type },
    }),
  },
];

/**
 * An error as GitLab's GraphQL answers it: `message`, `locations`, for a static validation error
 * (`document` given) the node's `path` in the query and graphql-ruby's wording where graphql-js's
 * differs, for an execution error the response `path`.
 */
function graphqlError(error: GraphQLError, document?: DocumentNode): Record<string, unknown> {
  let message = error.message;
  let extensions: Record<string, string> | undefined;
  if (document !== undefined) {
    for (const { pattern, ruby } of VALIDATION_WORDING) {
      const match = pattern.exec(message);
      if (match) {
        ({ message, extensions } = ruby(match));
        break;
      }
    }
  }
  const node = error.nodes?.[0];
  const path =
    document !== undefined && node !== undefined ? documentPath(document, node) : error.path;
  return {
    message,
    ...(error.locations === undefined ? {} : { locations: error.locations }),
    ...(path === undefined ? {} : { path }),
    ...(extensions === undefined ? {} : { extensions }),
  };
}

interface GraphqlRequest {
  query: unknown;
  variables: unknown;
  operationName: unknown;
}

/** `Gitlab::Graphql::Variables`: a JSON text or an object; anything else is 422. */
function graphqlVariables(raw: unknown): { values: Record<string, unknown> } | { error: string } {
  if (raw === undefined || raw === null) return { values: {} };
  if (typeof raw === "string") {
    if (raw.trim() === "") return { values: {} };
    try {
      const parsed: unknown = JSON.parse(raw);
      return {
        values:
          typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
            ? (parsed as Record<string, unknown>)
            : {},
      };
    } catch {
      return { error: `unexpected token at '${raw}'` };
    }
  }
  if (typeof raw === "object" && !Array.isArray(raw)) {
    return { values: raw as Record<string, unknown> };
  }
  return { error: `Unexpected parameter: ${JSON.stringify(raw)}` };
}

/** One query: parse, validate, execute, as `GitlabSchema.execute` answers it. */
function runGraphql(
  ctx: RouteContext,
  request: GraphqlRequest,
  variableValues: Record<string, unknown>,
): Record<string, unknown> {
  const source = typeof request.query === "string" ? request.query : "";
  if (source.trim() === "") return { errors: [{ message: "No query string was present" }] };
  let document: DocumentNode;
  try {
    document = parse(source);
  } catch (error) {
    if (error instanceof GraphQLError) return { errors: [graphqlError(error)] };
    throw error;
  }
  const invalid = validate(GRAPHQL_SCHEMA, document);
  if (invalid.length > 0) return { errors: invalid.map((e) => graphqlError(e, document)) };
  const result: ExecutionResult = executeSync({
    schema: GRAPHQL_SCHEMA,
    document,
    rootValue: graphqlRoot(ctx.model, ctx.caller),
    variableValues,
    operationName: typeof request.operationName === "string" ? request.operationName : null,
  });
  return {
    ...(result.errors === undefined ? {} : { errors: result.errors.map((e) => graphqlError(e)) }),
    ...(result.data === undefined ? {} : { data: result.data }),
  };
}

/**
 * GET or POST /api/graphql (`GraphqlController#execute`): one query (`query`, `variables`,
 * `operationName`, from the JSON body or the query string) or a batch (a JSON array). Query
 * errors are answered with 200 and an `errors` list; `data` holds what could be resolved.
 */
function graphqlEndpoint(ctx: RouteContext): Reply {
  const { req } = ctx;
  const fromQuery: GraphqlRequest = {
    query: req.query.get("query") ?? undefined,
    variables: req.query.get("variables") ?? undefined,
    operationName: req.query.get("operationName") ?? undefined,
  };
  let body: unknown = {};
  const contentType = (req.headers["content-type"] ?? "").split(";")[0]?.trim();
  if (req.body.length > 0 && contentType === "application/json") {
    try {
      body = JSON.parse(req.body);
    } catch {
      // ActionDispatch::Http::Parameters::ParseError: Rails' own 400 page.
      return {
        kind: "text",
        status: 400,
        text: "400 Bad Request\n",
        headers: { "content-type": "text/html; charset=utf-8" },
      };
    }
  } else if (req.body.length > 0 && contentType === "application/x-www-form-urlencoded") {
    body = Object.fromEntries(new URLSearchParams(req.body));
  }
  const batch = Array.isArray(body) ? (body as unknown[]) : undefined;
  const requests: GraphqlRequest[] = (batch ?? [body]).map((item) => {
    const fields =
      typeof item === "object" && item !== null ? (item as Record<string, unknown>) : {};
    return batch !== undefined
      ? { query: fields.query, variables: fields.variables, operationName: fields.operationName }
      : {
          query: fields.query ?? fromQuery.query,
          variables: fields.variables ?? fromQuery.variables,
          operationName: fields.operationName ?? fromQuery.operationName,
        };
  });

  const size = requests.reduce(
    (total, r) => total + (typeof r.query === "string" ? r.query.length : 0),
    0,
  );
  if (size > GRAPHQL_MAX_QUERY_SIZE) {
    return graphqlReply(422, { errors: [{ message: "Query too large" }] });
  }
  const variables: Record<string, unknown>[] = [];
  for (const request of requests) {
    const parsed = graphqlVariables(request.variables);
    if ("error" in parsed) return graphqlReply(422, { errors: [{ message: parsed.error }] });
    variables.push(parsed.values);
  }
  if (req.method === "GET" && requests.some((r) => isMutation(r.query))) {
    return graphqlReply(422, { errors: [{ message: "Mutations are forbidden in GET requests" }] });
  }
  const results = requests.map((request, index) =>
    runGraphql(ctx, request, variables[index] ?? {}),
  );
  return graphqlReply(200, batch === undefined ? results[0] : results);
}

function isMutation(query: unknown): boolean {
  if (typeof query !== "string") return false;
  try {
    return parse(query).definitions.some(
      (d) => d.kind === Kind.OPERATION_DEFINITION && d.operation === OperationTypeNode.MUTATION,
    );
  } catch {
    return false;
  }
}

/** GET /metadata (and the older GET /version): any authenticated caller. */
function metadata(ctx: RouteContext): Reply {
  const { version } = ctx.model;
  return json(200, {
    version,
    revision: "6d9b3a1c2f0",
    kas: { enabled: false, externalUrl: null, externalK8sProxyUrl: null, version: null },
    enterprise: version.endsWith("-ee"),
  });
}

/** GET /projects/:id: the fields vmbot reads, and the caller's own access in `permissions`. */
function showProject(ctx: RouteContext): Reply {
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

function dispatch(model: GitlabModel, entities: Entities, req: RecordedRequest): Reply {
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

// ---------------------------------------------------------------------------------------------
// The server

interface QueuedFailure {
  match: FailureMatch;
  failure: InjectedFailure;
  remaining: number;
}

function requestId(): string {
  return randomBytes(13).toString("hex").toUpperCase();
}

function write(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.writableEnded) return; // the client has gone
  const id = requestId();
  const common = {
    "cache-control": "max-age=0, private, must-revalidate",
    "x-request-id": id,
    "x-gitlab-meta": JSON.stringify({ correlation_id: id, version: "1" }),
    "x-content-type-options": "nosniff",
    "x-frame-options": "SAMEORIGIN",
  };
  if (reply.kind === "json") {
    sendJson(res, reply.status, reply.body, {
      ...common,
      "content-type": "application/json",
      ...reply.headers,
    });
    return;
  }
  res.writeHead(reply.status, {
    ...common,
    "content-type": "text/plain; charset=utf-8",
    "content-length": Buffer.byteLength(reply.text),
    ...reply.headers,
  });
  res.end(reply.text);
}

export async function startFakeGitlab(options: FakeGitlabOptions): Promise<FakeGitlab> {
  const model = new GitlabModel(options, options.now ?? (() => new Date()));
  const entities = new Entities(model);
  const requests: RecordedRequest[] = [];
  const failures: QueuedFailure[] = [];
  const timers = new Map<NodeJS.Timeout, () => void>();
  let inFlight = 0;
  let idleWaiters: (() => void)[] = [];
  let closed = false;

  const takeFailure = (req: RecordedRequest): InjectedFailure | undefined => {
    const index = failures.findIndex(
      (f) =>
        (f.match.method === undefined || f.match.method.toUpperCase() === req.method) &&
        new RegExp(f.match.path.source, f.match.path.flags.replace("g", "")).test(req.path),
    );
    const queued = failures[index];
    if (queued === undefined) return undefined;
    queued.remaining -= 1;
    if (queued.remaining <= 0) failures.splice(index, 1);
    return queued.failure;
  };

  /** Waits `ms`; resolves false if the fake is closed first. */
  const sleep = (ms: number): Promise<boolean> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve(true);
      }, ms);
      timers.set(timer, () => {
        resolve(false);
      });
    });

  /** Waits for `until`; resolves false if the fake is closed first. */
  const hold = (until: Promise<unknown>): Promise<boolean> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => undefined, 2 ** 31 - 1).unref();
      timers.set(timer, () => {
        resolve(false);
      });
      const done = () => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve(true);
      };
      until.then(done, done);
    });

  const handle = async (req: RecordedRequest, res: ServerResponse): Promise<void> => {
    requests.push(req);
    const failure = takeFailure(req);
    if (failure === "reset") {
      res.socket?.destroy();
      return;
    }
    if (failure !== undefined && "afterEffect" in failure) {
      // GitLab acts; the answer does not reach the client.
      const reply = dispatch(model, entities, req);
      const lost = failure.afterEffect;
      if (lost === "reset") {
        res.socket?.destroy();
      } else if ("delayMs" in lost) {
        if (await sleep(lost.delayMs)) write(res, reply);
        else res.destroy();
      } else {
        write(res, defaultFailureReply(lost.status, undefined, model.now()));
      }
      return;
    }
    if (failure !== undefined && "delayMs" in failure) {
      const awake = await sleep(failure.delayMs);
      if (!awake) {
        res.destroy();
        return;
      }
    } else if (failure !== undefined && "until" in failure) {
      const awake = await hold(failure.until);
      if (!awake) {
        res.destroy();
        return;
      }
    } else if (failure !== undefined) {
      const retryHeaders: Record<string, string> =
        failure.retryAfter === undefined ? {} : { "retry-after": String(failure.retryAfter) };
      const reply: Reply =
        failure.body === undefined
          ? defaultFailureReply(failure.status, failure.retryAfter, model.now())
          : typeof failure.body === "string"
            ? { kind: "text", status: failure.status, text: failure.body, headers: retryHeaders }
            : json(failure.status, failure.body, retryHeaders);
      write(res, reply);
      return;
    }
    write(res, dispatch(model, entities, req));
  };

  // Webhooks: built when the change happens, delivered one at a time in order.
  let hooks: HookOptions | undefined;
  const hookDeliveries: HookDelivery[] = [];
  const hookAbort = new AbortController();
  const hookUuid = randomUUID();
  let hookQueue: Promise<void> = Promise.resolve();

  const deliver = async (
    target: HookOptions,
    event: HookEvent,
    body: Record<string, unknown>,
  ): Promise<void> => {
    const eventUuid = randomUUID();
    const headers: Record<string, string> = {
      "Content-Type": "application/json",
      "User-Agent": `GitLab/${GITLAB_VERSION}`,
      "Idempotency-Key": randomUUID(),
      "X-Gitlab-Event": event,
      "X-Gitlab-Webhook-UUID": hookUuid,
      "X-Gitlab-Instance": model.baseUrl,
      "X-Gitlab-Event-UUID": eventUuid,
      ...(target.secretToken === undefined ? {} : { "X-Gitlab-Token": target.secretToken }),
    };
    const delivery: HookDelivery = {
      event,
      url: target.url,
      headers,
      body,
      sentAt: model.timestamp(),
    };
    hookDeliveries.push(delivery);
    try {
      const response = await fetch(target.url, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.any([
          hookAbort.signal,
          AbortSignal.timeout(target.timeoutMs ?? 10_000),
        ]),
      });
      delivery.response = { status: response.status, body: await response.text() };
    } catch (error) {
      delivery.error = error instanceof Error ? error.message : String(error);
    }
  };

  model.onEvent = (event) => {
    const target = hooks;
    if (target === undefined) return;
    const wanted = target.events ?? ["pipeline", "job"];
    if (!wanted.includes(event.kind)) return;
    const [name, body] =
      event.kind === "job"
        ? (["Job Hook", entities.jobHook(event.job, event.pipeline)] as const)
        : (["Pipeline Hook", entities.pipelineHook(event.pipeline)] as const);
    hookQueue = hookQueue.then(() => deliver(target, name, body));
  };

  let autoTimer: NodeJS.Timeout | undefined;
  const stopAutoAdvance = (): void => {
    if (autoTimer !== undefined) clearInterval(autoTimer);
    autoTimer = undefined;
  };

  const requestsIdle = (): Promise<void> =>
    inFlight === 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          idleWaiters.push(resolve);
        });

  const server = await startFakeServer(async (req, res) => {
    inFlight += 1;
    try {
      await handle(req, res);
    } finally {
      inFlight -= 1;
      if (inFlight === 0) {
        const waiters = idleWaiters;
        idleWaiters = [];
        for (const resolve of waiters) resolve();
      }
    }
  });
  model.baseUrl = server.url;

  return {
    url: server.url,
    user: model.user,
    requests,
    pipelines: model.pipelines,
    requestsTo: (method, pathPattern) =>
      requests.filter(
        (r) =>
          r.method === method.toUpperCase() &&
          new RegExp(pathPattern.source, pathPattern.flags.replace("g", "")).test(r.path),
      ),
    failNext: (match, failure, failOptions) => {
      failures.push({ match, failure, remaining: failOptions?.times ?? 1 });
    },
    setTokenValid: (valid) => {
      model.tokenValid = valid;
    },
    rotateToken: (token) => {
      model.token = token;
      model.tokenValid = true;
    },
    setRole: (projectId, role) => {
      const project = model.projects.find((p) => p.id === projectId);
      if (!project) throw new Error(`no project ${projectId} in the fake GitLab`);
      project.role = role;
    },
    addUser: (user) => model.addUser(user),
    terraformStates: model.terraformStates,
    addTerraformState: (projectIdOrPath, name, stateOptions = {}) => {
      const project = model.projectByIdOrPath(projectIdOrPath);
      if (model.findTerraformState(project, name)) {
        throw new Error(`project ${project.path} already has a Terraform state ${name}`);
      }
      const holder =
        stateOptions.lockedBy === undefined
          ? undefined
          : model.userByUsername(stateOptions.lockedBy);
      const now = model.now();
      const lockedAt = stateOptions.lockedAt ?? now;
      const createdAt =
        stateOptions.createdAt ?? (holder !== undefined && lockedAt < now ? lockedAt : now);
      const state = model.findOrCreateTerraformState(project, name, createdAt);
      const content =
        stateOptions.content === undefined ? emptyTerraformState() : stateOptions.content;
      if (content !== null) {
        const text =
          typeof content === "string" ? content : `${JSON.stringify(content, null, 2)}\n`;
        model.storeTerraformState(state, text, null, createdAt);
      }
      if (holder !== undefined) {
        model.lockTerraformState(state, stateOptions.lockId ?? randomUUID(), holder, lockedAt);
      }
      return state;
    },
    terraformState: (projectIdOrPath, name) =>
      model.findTerraformState(model.projectByIdOrPath(projectIdOrPath), name),
    lockTerraformState: (projectIdOrPath, name, lock) => {
      const project = model.projectByIdOrPath(projectIdOrPath);
      const holder = model.userByUsername(lock.lockedBy);
      const state = model.findOrCreateTerraformState(project, name, lock.lockedAt);
      if (state.lock !== null) {
        throw new Error(
          `Terraform state ${name} of ${project.path} is already locked by ${state.lock.user.username}`,
        );
      }
      model.lockTerraformState(state, lock.info?.ID ?? randomUUID(), holder, lock.lockedAt);
      return state;
    },
    unlockTerraformState: (projectIdOrPath, name) => {
      const project = model.projectByIdOrPath(projectIdOrPath);
      const state = model.findTerraformState(project, name);
      if (!state) throw new Error(`project ${project.path} has no Terraform state ${name}`);
      model.unlockTerraformState(state);
      return state;
    },
    deleteTerraformState: (projectIdOrPath, name) => {
      const project = model.projectByIdOrPath(projectIdOrPath);
      const state = model.findTerraformState(project, name);
      if (!state) throw new Error(`project ${project.path} has no Terraform state ${name}`);
      model.removeTerraformState(state);
    },
    pipeline: (pipelineId) => model.pipelineById(pipelineId),
    job: (pipelineId, jobName) => model.jobByName(pipelineId, jobName),
    setJobStatus: (pipelineId, jobName, status, statusOptions) => {
      const job = model.jobByName(pipelineId, jobName);
      model.setJobStatus(job, status, statusOptions?.failureReason);
      model.process(model.pipelineById(pipelineId));
      return job;
    },
    setJobLog: (pipelineId, jobName, log) => {
      model.jobByName(pipelineId, jobName).log = log;
    },
    appendJobLog: (pipelineId, jobName, text) => {
      model.jobByName(pipelineId, jobName).log += text;
    },
    setJobArtifact: (pipelineId, jobName, path, content) => {
      model.jobByName(pipelineId, jobName).artifacts.set(path, content);
    },
    onPipelineCreated: (listener) => {
      model.createdListeners.add(listener);
      return () => {
        model.createdListeners.delete(listener);
      };
    },
    setTraces: (pipelineId, traces) => {
      const pipeline = model.pipelineById(pipelineId);
      pipeline.traces = { ...pipeline.traces, ...traces };
    },
    advance: (pipelineId) => model.advance(model.pipelineById(pipelineId)),
    failJob: (pipelineId, jobName, reason = "script_failure") => {
      model.failJob(model.jobByName(pipelineId, jobName), reason);
    },
    cancelPipeline: (pipelineId) => {
      model.cancel(model.pipelineById(pipelineId));
    },
    retryJob: (pipelineId, jobName) => {
      const job = model.jobByName(pipelineId, jobName);
      const retried = model.retry(job);
      if (retried === undefined) {
        throw new Error(`job ${jobName} (#${job.id}) cannot be retried as ${job.status}`);
      }
      return retried;
    },
    playJob: (pipelineId, jobName, playOptions) => {
      const job = model.jobByName(pipelineId, jobName);
      const by = playOptions?.as === undefined ? model.user : model.userByUsername(playOptions.as);
      const played = model.play(job, by);
      if (played === undefined) {
        throw new Error(
          `job ${jobName} (#${job.id}, ${job.when}) cannot be played as ${job.status}`,
        );
      }
      return played;
    },
    autoAdvance: ({ intervalMs }) => {
      stopAutoAdvance();
      autoTimer = setInterval(() => {
        for (const pipeline of model.pipelines) model.advance(pipeline);
      }, intervalMs);
    },
    stopAutoAdvance,
    deliverHooks: (options) => {
      hooks = { ...options };
    },
    stopHooks: () => {
      hooks = undefined;
    },
    hookDeliveries,
    mark: () => requests.length,
    requestsSince: (mark) => requests.slice(mark),
    settled: async () => {
      // A delivered hook can cause requests, and a request can cause hooks: wait for both.
      for (;;) {
        const queue = hookQueue;
        await queue;
        await requestsIdle();
        if (queue === hookQueue && inFlight === 0) return;
      }
    },
    close: async () => {
      if (closed) return;
      closed = true;
      stopAutoAdvance();
      hooks = undefined;
      hookAbort.abort();
      await hookQueue;
      for (const [timer, cancel] of timers) {
        clearTimeout(timer);
        cancel();
      }
      timers.clear();
      await server.close();
    },
  };
}
