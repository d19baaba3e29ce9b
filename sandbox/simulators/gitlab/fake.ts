/** The fake GitLab as its callers drive it. */
import { type RecordedRequest } from "../http.js";
import {
  type FailureMatch,
  type FakeJob,
  type FakePipeline,
  type FakeTerraformState,
  type FakeUser,
  type HookDelivery,
  type HookOptions,
  type InjectedFailure,
  type JobStatus,
  type JobTraces,
  type JobTransition,
  type Role,
  type TerraformLockInfo,
  type TerraformStateOptions,
} from "./types.js";

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
