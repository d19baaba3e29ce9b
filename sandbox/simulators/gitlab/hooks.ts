/** Webhooks: Pipeline Hook and Job Hook payloads, and their delivery. */
import { randomUUID } from "node:crypto";
import { GITLAB_VERSION, RUNNER } from "./defaults.js";
import { Entities } from "./entities.js";
import { hookIsoTime, hookTime, PIPELINE_STATUS, pipelineQueuedDuration } from "./presentation.js";
import type { ModelEvent, Project } from "./state.js";
import { latestJobs } from "./status.js";
import type {
  FakeJob,
  FakePipeline,
  FakeUser,
  HookDelivery,
  HookEvent,
  HookOptions,
} from "./types.js";

/** The entities, and the Pipeline Hook and Job Hook payloads GitLab builds from them. */
export class HookEntities extends Entities {
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
}

/** Webhooks: built when the change happens, delivered one at a time, in order. */
export class Webhooks {
  /** Every delivery, with its answer once it came. */
  readonly deliveries: HookDelivery[] = [];
  private target: HookOptions | undefined;
  private readonly abort = new AbortController();
  private readonly uuid = randomUUID();
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly entities: HookEntities,
    private readonly instanceUrl: () => string,
    private readonly timestamp: () => string,
  ) {}

  deliverTo(target: HookOptions): void {
    this.target = { ...target };
  }

  stop(): void {
    this.target = undefined;
  }

  /** Settles once every webhook queued so far is delivered. */
  get delivered(): Promise<void> {
    return this.queue;
  }

  /** A status change in the model: queued for delivery when the hook wants it. */
  onEvent(event: ModelEvent): void {
    const target = this.target;
    if (target === undefined) return;
    const wanted = target.events ?? ["pipeline", "job"];
    if (!wanted.includes(event.kind)) return;
    const [name, body] =
      event.kind === "job"
        ? (["Job Hook", this.entities.jobHook(event.job, event.pipeline)] as const)
        : (["Pipeline Hook", this.entities.pipelineHook(event.pipeline)] as const);
    this.queue = this.queue.then(() => this.deliver(target, name, body));
  }

  /** Stops delivering, gives up on the one under way, and waits for the queue to end. */
  async close(): Promise<void> {
    this.target = undefined;
    this.abort.abort();
    await this.queue;
  }

  private async deliver(
    target: HookOptions,
    event: HookEvent,
    body: Record<string, unknown>,
  ): Promise<void> {
    const headers: Record<string, string> = {
      "Content-Type": "application/json",
      "User-Agent": `GitLab/${GITLAB_VERSION}`,
      "Idempotency-Key": randomUUID(),
      "X-Gitlab-Event": event,
      "X-Gitlab-Webhook-UUID": this.uuid,
      "X-Gitlab-Instance": this.instanceUrl(),
      "X-Gitlab-Event-UUID": randomUUID(),
      ...(target.secretToken === undefined ? {} : { "X-Gitlab-Token": target.secretToken }),
    };
    const delivery: HookDelivery = {
      event,
      url: target.url,
      headers,
      body,
      sentAt: this.timestamp(),
    };
    this.deliveries.push(delivery);
    try {
      const response = await fetch(target.url, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.any([
          this.abort.signal,
          AbortSignal.timeout(target.timeoutMs ?? 10_000),
        ]),
      });
      delivery.response = { status: response.status, body: await response.text() };
    } catch (error) {
      delivery.error = error instanceof Error ? error.message : String(error);
    }
  }
}
