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
 * - `failNext` injects HTTP failures, delays and dropped connections; `mark`/`requestsSince`
 *   count requests.
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
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { STATUS_CODES, type ServerResponse } from "node:http";
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
  traceWhileRunning,
  validateTrace,
  type JobOutcome,
  type TraceOptions,
  type VmParams,
} from "./gitlab-traces.js";
import { sendJson, startFakeServer, type RecordedRequest } from "./http.js";

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
  /** The token user's role in the project. Default `developer`. */
  role?: Role;
  /** Default `DEFAULT_PIPELINE`. */
  pipeline?: PipelineDefinition;
  /** `ci_pipeline_variables_minimum_override_role`. Default `developer`. */
  pipelineVariablesMinimumRole?: "developer" | "maintainer" | "owner" | "no_one_allowed";
  /**
   * Protected branches and the lowest role allowed to push or merge to each. Creating a pipeline,
   * playing a job or canceling a pipeline on a protected ref needs that role (GitLab's
   * `Chain::Validate::Abilities`, `update_build`, `update_pipeline`). Default: none protected.
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
  /** Clock for every timestamp. */
  now?: () => Date;
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
 * - `"reset"`: drop the connection without answering.
 */
export type InjectedFailure =
  { status: number; body?: unknown; retryAfter?: number } | { delayMs: number } | "reset";

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

  /**
   * One step of the pipeline, as its runner and GitLab's processing take it: running jobs finish
   * (their logs and artifacts are set, and the next stage is processed), else pending jobs start
   * running, else created jobs are processed. A pipeline that waits on a manual job, or has
   * finished, does not move: the answer is then empty.
   */
  advance(pipelineId: number): JobTransition[];
  /** Makes the job fail with `reason` (default `script_failure`) when it finishes. */
  failJob(pipelineId: number, jobName: string, reason?: string): void;
  /** Plays a manual job as a user clicking ▶ would (the same rules as the API). */
  playJob(pipelineId: number, jobName: string): FakeJob;
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

/** The VM pipeline's `spec:inputs` (SPEC §1). */
export const VM_PIPELINE_INPUTS: Readonly<Record<string, InputSpec>> = {
  action: { default: "apply", options: ["apply", "destroy"] },
  vm_name: {},
  vm_ip: {},
  vm_gateway: { default: "192.168.1.1" },
  template_vm_id: { type: "number", default: 9000 },
  proxmox_node: { default: "pve" },
  vm_id: { type: "number", default: 0 },
  vlan_id: { type: "number", default: 0 },
};

export const DEFAULT_PROJECT: FakeProjectOptions = {
  id: 42,
  path: "platform/vm-provisioning",
  defaultBranch: "main",
  inputs: { ...VM_PIPELINE_INPUTS },
};

const DEFAULT_USER: FakeUser = { id: 7, username: "vmbot", name: "vmbot" };

/** The instance runner every job runs on. */
const RUNNER = { id: 12, description: "pve-runner-01" };
const GITLAB_VERSION = "18.2.1";

// IDs start in different ranges so a test notices when an iid or job ID is used as a pipeline ID.
const FIRST_PIPELINE_ID = 1001;
const FIRST_JOB_ID = 5001;

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
  | "update_pipeline";

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
function vmParamsOf(pipeline: FakePipeline): VmParams {
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
  readonly user: FakeUser;
  token: string;
  tokenValid = true;
  baseUrl = "";
  /** Told of every job and pipeline status change, synchronously. */
  onEvent: (event: ModelEvent) => void = () => undefined;
  private nextPipelineId = FIRST_PIPELINE_ID;
  private nextJobId = FIRST_JOB_ID;
  /** Job ID → the failure reason it finishes with. */
  private readonly failures = new Map<number, string>();

  constructor(
    options: FakeGitlabOptions,
    readonly now: () => Date,
  ) {
    this.token = options.token;
    this.user = { ...DEFAULT_USER, ...options.user };
    this.projects = (options.projects ?? [DEFAULT_PROJECT]).map((p) => toProject(p));
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
        return level >= ROLE_LEVEL.developer;
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
        }),
      );
    }
    this.pipelines.push(pipeline);
    // Ci::Build runs its hooks after it is created, with status `created`.
    for (const job of pipeline.jobs) this.onEvent({ kind: "job", job, pipeline });
    return pipeline;
  }

  private newJob(
    pipeline: FakePipeline,
    from: Pick<FakeJob, "name" | "stage" | "when" | "allowFailure" | "tags" | "logKind">,
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
      status: "created",
      failureReason: null,
      log: "",
      artifacts: new Map(),
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
   * (undefined).
   */
  play(job: FakeJob): FakeJob | undefined {
    if (job.when !== "manual" || job.retried) return undefined;
    const pipeline = this.pipelineById(job.pipelineId);
    if (job.status === "manual") {
      this.setJobStatus(job, "pending");
      this.process(pipeline);
      return job;
    }
    if (job.status === "success" || job.status === "failed" || job.status === "canceled") {
      job.retried = true;
      job.updatedAt = this.timestamp();
      const fresh = this.newJob(pipeline, job);
      pipeline.jobs.push(fresh);
      this.onEvent({ kind: "job", job: fresh, pipeline });
      this.setJobStatus(fresh, "pending");
      this.process(pipeline);
      return fresh;
    }
    return undefined;
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
    const log = this.traceOf(job, pipeline, planned === undefined ? undefined : "failed");
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

  private defaultArtifacts(job: FakeJob, pipeline: FakePipeline): Record<string, string> {
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
    role: options.role ?? "developer",
    pipeline,
    variablesMinimumRole: options.pipelineVariablesMinimumRole ?? "developer",
    protectedBranches: { ...options.protectedBranches },
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

  userBasic(): Record<string, unknown> {
    const { id, username, name } = this.model.user;
    const hash = createHash("md5").update(`${username}@example.com`).digest("hex");
    return {
      id,
      username,
      name,
      state: "active",
      avatar_url: `https://www.gravatar.com/avatar/${hash}?s=80&d=identicon`,
      web_url: `${this.url}/${username}`,
    };
  }

  /** Entities::User, as jobs show their user. */
  user(): Record<string, unknown> {
    return {
      ...this.userBasic(),
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
      user: this.user(),
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
  private hookUser(): Record<string, unknown> {
    const basic = this.userBasic();
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
      user: this.hookUser(),
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
  /** `always`: authenticate! (401 without a token); `non-get`: authenticate_non_get!. */
  auth: "always" | "non-get";
  handler: Handler;
}

/** Path parameters declared `type: Integer`; a non-integer is a Grape validation error. */
const INTEGER_PARAMS: ReadonlySet<string> = new Set(["pipeline_id", "job_id"]);

function route(
  method: string,
  template: string,
  handler: Handler,
  auth: Route["auth"] = "non-get",
): Route {
  const keys: string[] = [];
  // `:name` is one path segment; `*name` (Grape's wildcard) is the rest of the path.
  const source = template.replace(/([:*])([a-z_]+)/g, (_match, kind: string, key: string) => {
    keys.push(key);
    return kind === "*" ? "(.+)" : "([^/]+)";
  });
  return { method, pattern: new RegExp(`^${API_PREFIX}${source}$`), keys, auth, handler };
}

function tokenOf(req: RecordedRequest): string | undefined {
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
  return req.query.get("private_token") ?? req.query.get("access_token") ?? undefined;
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
  const rawInputs = ctx.input.inputs ?? {};
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

/** Every endpoint the fake serves. Add new ones here. */
const ROUTES: readonly Route[] = [
  route("POST", "/projects/:id/pipeline", createPipeline),
  route("GET", "/projects/:id/pipelines", listPipelines),
  route("GET", "/projects/:id/pipelines/:pipeline_id", showPipeline),
  route("GET", "/projects/:id/pipelines/:pipeline_id/variables", pipelineVariables),
  route("GET", "/projects/:id/pipelines/:pipeline_id/jobs", pipelineJobs),
  route("POST", "/projects/:id/pipelines/:pipeline_id/cancel", cancelPipeline),
  route("GET", "/projects/:id/jobs/:job_id", showJob, "always"),
  route("GET", "/projects/:id/jobs/:job_id/trace", jobTrace, "always"),
  route("POST", "/projects/:id/jobs/:job_id/play", playJob, "always"),
  route("GET", "/projects/:id/jobs/:job_id/artifacts/*artifact_path", jobArtifactFile),
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
      const token = tokenOf(req);
      if (token !== undefined && (token !== model.token || !model.tokenValid)) throw unauthorized();
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

  const handle = async (req: RecordedRequest, res: ServerResponse): Promise<void> => {
    requests.push(req);
    const failure = takeFailure(req);
    if (failure === "reset") {
      res.socket?.destroy();
      return;
    }
    if (failure !== undefined && "delayMs" in failure) {
      const awake = await sleep(failure.delayMs);
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
    setTraces: (pipelineId, traces) => {
      const pipeline = model.pipelineById(pipelineId);
      pipeline.traces = { ...pipeline.traces, ...traces };
    },
    advance: (pipelineId) => model.advance(model.pipelineById(pipelineId)),
    failJob: (pipelineId, jobName, reason = "script_failure") => {
      model.failJob(model.jobByName(pipelineId, jobName), reason);
    },
    playJob: (pipelineId, jobName) => {
      const job = model.jobByName(pipelineId, jobName);
      const played = model.play(job);
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
