import { z } from "zod";
import type { SecretSource } from "../secrets.js";
import type { PipelineParams } from "../vm/spec.js";
import type { JobLog, LogConsumer } from "./job-log.js";

/**
 * What vmbot does with GitLab, in its own words, and the shapes of GitLab's answers it reads.
 */

/** A token, or where to read the current one (e.g. Vault, re-read when GitLab refuses it). */
export type GitlabToken = string | SecretSource;

export const PipelineSchema = z.object({
  id: z.number().int(),
  iid: z.number().int().optional(),
  status: z.string(),
  web_url: z.url(),
});

export interface Pipeline {
  id: number;
  iid: number | undefined;
  status: string;
  webUrl: string;
}

export const PipelineListItemSchema = z.object({
  id: z.number().int(),
  status: z.string(),
  updated_at: z.string(),
  web_url: z.url(),
});

export interface PipelineSummary {
  id: number;
  status: string;
  updatedAt: string;
  webUrl: string;
}

export const JobSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  stage: z.string(),
  status: z.string(),
  web_url: z.url(),
  finished_at: z.string().nullish(),
  /** Who created the job, or played it last. */
  user: z.object({ username: z.string() }).nullish(),
  /** The artifacts archive, while the job has one. */
  artifacts_file: z.object({ filename: z.string() }).nullish(),
});

export interface Job {
  id: number;
  name: string;
  stage: string;
  status: string;
  webUrl: string;
  finishedAt: string | null;
  /** The GitLab username of who started the job (for a manual job: who played it). */
  user: string | null;
  hasArtifacts: boolean;
}

export const toJob = (job: z.infer<typeof JobSchema>): Job => ({
  id: job.id,
  name: job.name,
  stage: job.stage,
  status: job.status,
  webUrl: job.web_url,
  finishedAt: job.finished_at ?? null,
  user: job.user?.username ?? null,
  hasArtifacts: job.artifacts_file !== undefined && job.artifacts_file !== null,
});

/** What vmbot does with GitLab, in its own words. */
/** A text read no further than a cap: what was read, and whether it goes on beyond. */
export interface CappedText {
  text: string;
  truncated: boolean;
}

export interface GitlabPort {
  /**
   * Starts the VM pipeline on the configured ref. In variables mode the inputs travel as
   * variables named after them in upper case.
   */
  triggerPipeline(params: PipelineParams, requestId?: string): Promise<Pipeline>;
  /**
   * The pipeline vmbot created for a request, found after a crash between creating it and
   * recording it: by its VMBOT_REQUEST_ID variable, or (when requests are not tagged) the first
   * API pipeline on the ref created since `createdAfter`, marked `sure: false`.
   */
  findPipeline(
    requestId: string,
    createdAfter: string,
  ): Promise<(Pipeline & { sure: boolean }) | undefined>;
  /**
   * Every pipeline on the ref created since `createdAfter` that carries this request's
   * VMBOT_REQUEST_ID, oldest first, skipping the IDs in `known` (already looked at); empty when
   * requests are not tagged.
   */
  requestPipelines(
    requestId: string,
    createdAfter: string,
    known?: ReadonlySet<number>,
  ): Promise<{ pipelines: Pipeline[]; looked: number[] }>;
  /** The project's pipelines on the configured ref changed since `updatedAfter` (ISO 8601). */
  changedPipelines(updatedAfter: string): Promise<PipelineSummary[]>;
  /**
   * When the project's pipeline on the configured ref that changed last did, by GitLab's clock
   * (ISO 8601); undefined when it has none.
   */
  lastPipelineChange(): Promise<string | undefined>;
  pipeline(pipelineId: number): Promise<PipelineSummary>;
  pipelineJobs(pipelineId: number): Promise<Job[]>;
  job(jobId: number): Promise<Job>;
  /**
   * A job's log (its trace), read as a stream and no further than `maxBytes`: a log of any size
   * costs at most that much memory.
   */
  jobLog(jobId: number, maxBytes: number): Promise<JobLog>;
  /**
   * A job's log handed to `consume` a piece at a time as it arrives, no further than
   * `maxBytes`: nothing of it is kept, so memory does not grow with the log.
   */
  streamJobLog(
    jobId: number,
    maxBytes: number,
    consume: LogConsumer,
  ): Promise<{ truncated: boolean }>;
  playJob(jobId: number): Promise<Job>;
  /**
   * Runs a finished (failed, canceled or successful) job again: GitLab creates a NEW job, with
   * its own ID, and marks the old one retried (`POST /projects/:id/jobs/:job_id/retry`).
   */
  retryJob(jobId: number): Promise<Job>;
  cancelPipeline(pipelineId: number): Promise<PipelineSummary>;
  /**
   * A file from a job's artifacts, no further than `maxBytes` (whole characters), or undefined
   * when the job has none by that path.
   */
  jobArtifact(jobId: number, path: string, maxBytes: number): Promise<CappedText | undefined>;
  /**
   * Deletes a job's artifacts (its log stays), e.g. a rejected plan's `tfplan`, so that the
   * apply job has no plan to apply. Needs the Maintainer role.
   */
  eraseJobArtifacts(jobId: number): Promise<void>;
  /**
   * The project's Terraform states with their locks. Read through GraphQL: no REST call reads
   * a lock without taking it.
   */
  terraformStates(): Promise<TerraformState[]>;
  /**
   * The lock on a state with its ID, which GraphQL does not show, read through the state API's
   * lock endpoint: that takes the lock, as `probeId`, when the state is free (`taken`), and the
   * caller is then to release it. Needs the Maintainer role.
   */
  readTerraformStateLock(name: string, probeId: string): Promise<StateLock>;
  /**
   * Removes a state's lock through the state API: only the lock `lockId` names (false when the
   * state holds no lock of that ID), or any lock when none is named. Needs the Maintainer role.
   */
  unlockTerraformState(name: string, lockId?: string): Promise<boolean>;
  /** GitLab's version and the token's own standing in the project, for the start-up check. */
  about(): Promise<GitlabAbout>;
}

export interface GitlabAbout {
  /** As GitLab reports it, e.g. `18.2.1` or `17.9.3-ee`. */
  version: string;
  /** The token user's access level in the project (30 Developer, 40 Maintainer, …), if any. */
  accessLevel: number | null;
  /** The project's minimum role for pipeline variables, when the token may see it. */
  variablesMinimumRole: string | null;
}

export const MetadataSchema = z.object({ version: z.string() });

const AccessSchema = z.object({ access_level: z.number().int() }).nullish();

export const ProjectAboutSchema = z.object({
  ci_pipeline_variables_minimum_override_role: z.string().nullish(),
  permissions: z
    .object({ project_access: AccessSchema, group_access: AccessSchema })
    .partial()
    .nullish(),
});

export type { JobLog };

export interface TerraformState {
  name: string;
  /** ISO 8601, or null when the state is not locked. */
  lockedAt: string | null;
  /** The lock holder's GitLab username, when GitLab knows it. */
  lockedBy: string | null;
}

/** A state's lock as the state API's lock endpoint gives it. */
export interface StateLock {
  /** The lock's ID: the one to name to remove this lock and no other. */
  id: string;
  /** When it was taken, as GitLab writes it; null when GitLab says nothing. */
  created: string | null;
  /** The state was free: the lock is the one the reading took, to be released. */
  taken: boolean;
}

/** A pipeline as listed when looking for the one a request created. */
export const CandidateSchema = z.object({
  id: z.number().int(),
  iid: z.number().int().optional(),
  status: z.string(),
  source: z.string().optional(),
  created_at: z.string(),
  web_url: z.url(),
});

export const toSummary = (p: z.infer<typeof PipelineListItemSchema>): PipelineSummary => ({
  id: p.id,
  status: p.status,
  updatedAt: p.updated_at,
  webUrl: p.web_url,
});

export const toPipeline = (p: z.infer<typeof CandidateSchema>): Pipeline => ({
  id: p.id,
  iid: p.iid,
  status: p.status,
  webUrl: p.web_url,
});
