/** Pipelines and jobs: creation, stage-by-stage processing, play, retry and cancel. */
import { createHash } from "node:crypto";
import { TERMINAL } from "./defaults.js";
import { CANCELABLE, GitlabState, type Project } from "./state.js";
import { compositeStatus, latestJobs, promotion } from "./status.js";
import {
  type FakeJob,
  type FakePipeline,
  type FakeUser,
  type InputValue,
  type JobDefinition,
  type JobStatus,
  type PipelineStatus,
  type PipelineVariable,
} from "./types.js";

export class GitlabPipelines extends GitlabState {
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
      // As GitLab's `stages` (in hooks too): only the stages this pipeline has jobs in.
      stages: project.pipeline.stages.filter((stage) =>
        definitions.some((definition) => definition.stage === stage),
      ),
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

  protected newJob(
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
  protected setPipelineStatus(pipeline: FakePipeline, status: PipelineStatus): void {
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
  protected durationOf(pipeline: FakePipeline): number {
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
}
