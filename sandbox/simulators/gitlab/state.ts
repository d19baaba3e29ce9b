/** The model's state: users, projects, Terraform states, and who may do what. */
import {
  DEFAULT_PIPELINE,
  DEFAULT_PROJECT,
  DEFAULT_USER,
  FIRST_JOB_ID,
  FIRST_PIPELINE_ID,
  FIRST_TERRAFORM_STATE_ID,
  GITLAB_VERSION,
  ROLE_LEVEL,
  serialOf,
} from "./defaults.js";
import { inputType, inputTypeMatches } from "./inputs.js";
import { latest } from "./runner.js";
import { latestJobs } from "./status.js";
import {
  type FakeGitlabOptions,
  type FakeJob,
  type FakePipeline,
  type FakeProjectOptions,
  type FakeTerraformState,
  type FakeUser,
  type InputSpec,
  type JobStatus,
  type JobTraces,
  type PipelineDefinition,
  type Role,
} from "./types.js";

export interface Project {
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

export type Permission =
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
export type ModelEvent =
  | { kind: "job"; job: FakeJob; pipeline: FakePipeline }
  | { kind: "pipeline"; pipeline: FakePipeline };

/** `Ci::HasStatus::CANCELABLE_STATUSES`: what canceling a pipeline cancels (not `manual`). */
export const CANCELABLE: ReadonlySet<JobStatus> = new Set([
  "created",
  "waiting_for_resource",
  "preparing",
  "pending",
  "running",
  "scheduled",
]);
export const QUEUED: ReadonlySet<JobStatus> = new Set([
  "waiting_for_resource",
  "preparing",
  "pending",
]);

export class GitlabState {
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
  protected nextPipelineId = FIRST_PIPELINE_ID;
  protected nextJobId = FIRST_JOB_ID;
  protected nextTerraformStateId = FIRST_TERRAFORM_STATE_ID;
  protected nextTerraformVersionId = 1;

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
