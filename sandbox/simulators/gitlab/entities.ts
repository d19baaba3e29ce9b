/** JSON entities, as GitLab's API serializes them. */
import { RUNNER } from "./defaults.js";
import {
  avatarUrl,
  isoDiffSeconds,
  PIPELINE_STATUS,
  pipelineQueuedDuration,
  storedZipSize,
} from "./presentation.js";
import { GitlabModel } from "./runner.js";
import { type Project } from "./state.js";
import { type FakeJob, type FakePipeline, type FakeUser, type PipelineVariable } from "./types.js";

export class Entities {
  constructor(protected readonly model: GitlabModel) {}

  protected get url(): string {
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
  protected artifactsExpireAt(job: FakeJob): string {
    const from = Date.parse(job.finishedAt ?? job.updatedAt);
    return new Date(from + 30 * 24 * 3600 * 1000).toISOString();
  }

  /** Entities::Ci::JobArtifact for each artifact: archive and metadata, then the archived log. */
  protected jobArtifacts(job: FakeJob): Record<string, unknown>[] {
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

  /** Ci::Processable#duration: running time so far, or in all once finished. */
  protected jobDuration(job: FakeJob): number | null {
    return job.startedAt === null
      ? null
      : isoDiffSeconds(job.startedAt, job.finishedAt ?? this.model.timestamp());
  }

  protected jobQueuedDuration(job: FakeJob): number | null {
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
