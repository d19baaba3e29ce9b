/**
 * An in-memory GitLab that speaks REST API v4 on the wire, for the real `@gitbeaker/rest` client.
 *
 * It keeps a small model (projects → pipelines → jobs) and derives everything the API shows from
 * it: pipeline status from job statuses (GitLab's composite-status rules), stage-by-stage job
 * processing, timestamps, URLs. Routes are declared in one table (`ROUTES`); adding an endpoint is
 * one entry and one handler. Tests drive pipelines with `setJobStatus`/`setJobLog`, and inject
 * HTTP failures, delays and dropped connections with `failNext`.
 *
 * Behaviour and bodies follow GitLab's API code and documentation:
 * - auth: invalid token → 401 `{"message":"401 Unauthorized"}` everywhere; no token → 401 on
 *   non-GET requests and on the Jobs API, 404 `{"message":"404 Project Not Found"}` on other
 *   GETs (projects are private);
 * - unknown project → 404 `{"message":"404 Project Not Found"}`; unknown pipeline or job →
 *   404 `{"message":"404 Not found"}`; missing permission → 403 `{"message":"403 Forbidden"}`;
 * - pipeline creation errors → 400 `{"message":{"base":["…"]}}` with GitLab's texts;
 * - parameter errors (Grape) → 400 `{"error":"ref is missing"}`; unknown route → 404
 *   `{"error":"404 Not Found"}`.
 */
import { createHash, randomBytes } from "node:crypto";
import { STATUS_CODES, type ServerResponse } from "node:http";
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
}

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
}

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
  status: JobStatus;
  failureReason: string | null;
  log: string;
  createdAt: string;
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
  readonly stages: readonly string[];
  readonly jobs: FakeJob[];
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
  /** Resolves when no request is being handled (e.g. a delayed one whose client gave up). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Defaults

/** The VM platform's pipeline (SPEC §1): the apply path, or the destroy path for `action: destroy`. */
export const DEFAULT_PIPELINE: PipelineDefinition = {
  stages: ["validate", "plan", "apply", "configure"],
  jobs: [
    { name: "tf:validate", stage: "validate" },
    { name: "tf:plan", stage: "plan", rules: (c) => !isDestroy(c) },
    { name: "tf:apply", stage: "apply", when: "manual", rules: (c) => !isDestroy(c) },
    { name: "ansible:configure", stage: "configure", rules: (c) => !isDestroy(c) },
    { name: "notify:destroy", stage: "plan", rules: isDestroy },
    { name: "tf:destroy", stage: "apply", when: "manual", rules: isDestroy },
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
  readonly role: Role;
  readonly pipeline: PipelineDefinition;
  readonly variablesMinimumRole: NonNullable<FakeProjectOptions["pipelineVariablesMinimumRole"]>;
  nextIid: number;
}

type Permission =
  | "read_pipeline"
  | "create_pipeline"
  | "read_pipeline_variable"
  | "set_pipeline_variables"
  | "read_build";

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

class GitlabModel {
  readonly projects: Project[];
  readonly pipelines: FakePipeline[] = [];
  readonly user: FakeUser;
  token: string;
  tokenValid = true;
  baseUrl = "";
  private nextPipelineId = FIRST_PIPELINE_ID;
  private nextJobId = FIRST_JOB_ID;

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

  can(project: Project, permission: Permission): boolean {
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

  jobByName(pipelineId: number, jobName: string): FakeJob {
    const pipeline = this.pipelineById(pipelineId);
    const job = pipeline.jobs.find((j) => j.name === jobName);
    if (!job) {
      const known = pipeline.jobs.map((j) => j.name).join(", ");
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
      stages: project.pipeline.stages,
      jobs: [],
    };
    for (const definition of definitions) {
      pipeline.jobs.push({
        id: this.nextJobId++,
        pipelineId: id,
        name: definition.name,
        stage: definition.stage,
        when: definition.when ?? "on_success",
        allowFailure: definition.allowFailure ?? false,
        tags: [...(definition.tags ?? [])].sort(),
        status: "created",
        failureReason: null,
        log: "",
        createdAt: at,
        queuedAt: null,
        startedAt: null,
        finishedAt: null,
      });
    }
    this.pipelines.push(pipeline);
    return pipeline;
  }

  setJobStatus(job: FakeJob, status: JobStatus, failureReason?: string): void {
    const at = this.timestamp();
    job.status = status;
    if (status === "pending" || status === "running") job.queuedAt ??= at;
    if (status === "running") job.startedAt ??= at;
    if (TERMINAL.has(status) && status !== "skipped") job.finishedAt = at;
    if (!TERMINAL.has(status)) job.finishedAt = null;
    job.failureReason = status === "failed" ? (failureReason ?? "script_failure") : null;
  }

  /** Ci::ProcessPipelineService in small: promote created jobs stage by stage. */
  process(pipeline: FakePipeline): void {
    for (const [index, stage] of pipeline.stages.entries()) {
      const earlier = pipeline.jobs.filter((j) => pipeline.stages.indexOf(j.stage) < index);
      const before = compositeStatus(earlier);
      for (const job of pipeline.jobs) {
        if (job.stage !== stage || job.status !== "created") continue;
        const next = promotion(job.when, before);
        if (next !== undefined) this.setJobStatus(job, next);
      }
    }
    const status = compositeStatus(pipeline.jobs) ?? "skipped";
    const at = this.timestamp();
    pipeline.status = status;
    pipeline.updatedAt = at;
    const starts = pipeline.jobs.flatMap((j) => (j.startedAt === null ? [] : [j.startedAt]));
    pipeline.startedAt = starts.sort()[0] ?? null;
    pipeline.finishedAt = TERMINAL.has(status) ? (pipeline.finishedAt ?? at) : null;
  }
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

  /** Entities::Ci::PipelineBasic. */
  pipelineBasic(pipeline: FakePipeline): Record<string, unknown> {
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
    const duration = isoDiffSeconds(pipeline.startedAt, pipeline.finishedAt);
    return {
      ...this.pipelineBasic(pipeline),
      before_sha: "0000000000000000000000000000000000000000",
      tag: pipeline.tag,
      yaml_errors: null,
      user: this.userBasic(),
      started_at: pipeline.startedAt,
      finished_at: pipeline.finishedAt,
      committed_at: null,
      duration: duration === null ? null : Math.round(duration),
      queued_duration: isoDiffSeconds(pipeline.createdAt, pipeline.startedAt),
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
      artifacts: [],
      runner: started
        ? {
            id: 1,
            description: "fake-runner",
            ip_address: "127.0.0.1",
            active: true,
            is_shared: true,
            name: "gitlab-runner",
            online: true,
            status: "online",
          }
        : null,
      runner_manager: null,
      artifacts_expire_at: null,
      archived: false,
      tag_list: [...job.tags],
    };
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
  const source = template.replace(/:([a-z_]+)/g, (_match, key: string) => {
    keys.push(key);
    return "([^/]+)";
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

function authorize(ctx: RouteContext, project: Project, permission: Permission): void {
  if (!ctx.model.can(project, permission)) throw forbidden();
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
  const project = projectFor(ctx);
  authorize(ctx, project, "read_pipeline");
  const pipeline = pipelineFor(ctx, project);
  const scope = scopeFilter(ctx);
  const jobs = pipeline.jobs
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

function jobTrace(ctx: RouteContext): Reply {
  const project = projectFor(ctx);
  authorize(ctx, project, "read_build");
  const { job } = jobFor(ctx, project);
  return {
    kind: "text",
    status: 200,
    text: job.log,
    headers: { "content-disposition": `infile; filename="${job.id}.log"` },
  };
}

/** Every endpoint the fake serves. Add new ones here. */
const ROUTES: readonly Route[] = [
  route("POST", "/projects/:id/pipeline", createPipeline),
  route("GET", "/projects/:id/pipelines/:pipeline_id", showPipeline),
  route("GET", "/projects/:id/pipelines/:pipeline_id/variables", pipelineVariables),
  route("GET", "/projects/:id/pipelines/:pipeline_id/jobs", pipelineJobs),
  route("GET", "/projects/:id/jobs/:job_id", showJob, "always"),
  route("GET", "/projects/:id/jobs/:job_id/trace", jobTrace, "always"),
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
    settled: () =>
      inFlight === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            idleWaiters.push(resolve);
          }),
    close: async () => {
      if (closed) return;
      closed = true;
      for (const [timer, cancel] of timers) {
        clearTimeout(timer);
        cancel();
      }
      timers.clear();
      await server.close();
    },
  };
}
