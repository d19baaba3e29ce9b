import { z } from "zod";
import { VmbotError } from "../errors.js";
import type { GitlabClient } from "./client.js";
import { gitlabError } from "./errors.js";
import { streamCapped, type LogConsumer } from "./job-log.js";
import { JobSchema, toJob, type CappedText, type GitlabPort } from "./port.js";

/**
 * Reads a job's log through gitbeaker's own requester (token, retries) as a stream, up to
 * `maxBytes`; the timeout covers the whole read. What `consume` throws comes out as it is: it
 * is not GitLab's failure.
 */
async function readJobLog(
  c: GitlabClient,
  jobId: number,
  maxBytes: number,
  consume: LogConsumer,
): Promise<{ truncated: boolean }> {
  const path = `projects/${encodeURIComponent(c.options.project)}/jobs/${jobId}/trace`;
  const failed: { error?: unknown } = {};
  try {
    const response = await c.withToken(() =>
      c.api.Jobs.requester.get(path, { asStream: true, signal: AbortSignal.timeout(c.timeoutMs) }),
    );
    return await streamCapped(
      response.body as ReadableStream<Uint8Array> | null,
      maxBytes,
      async (text) => {
        try {
          await consume(text);
        } catch (error) {
          failed.error = error;
          throw error;
        }
      },
    );
  } catch (error) {
    if ("error" in failed) throw failed.error;
    throw gitlabError(error, c.context({ what: "read_log", jobId }));
  }
}

/**
 * A file from a job's artifacts, read as a stream no further than `maxBytes` (a plan's JSON can
 * be far larger than anything vmbot needs of it), or undefined when the job has none by that path.
 */
async function jobArtifact(
  c: GitlabClient,
  jobId: number,
  path: string,
  maxBytes: number,
): Promise<CappedText | undefined> {
  const url = `projects/${encodeURIComponent(c.options.project)}/jobs/${jobId}/artifacts/${path}`;
  try {
    const response = await c.withToken(() =>
      c.api.Jobs.requester.get(url, { asStream: true, signal: AbortSignal.timeout(c.timeoutMs) }),
    );
    const parts: string[] = [];
    const { truncated } = await streamCapped(
      response.body as ReadableStream<Uint8Array> | null,
      maxBytes,
      (text) => {
        parts.push(text);
      },
    );
    return { text: parts.join(""), truncated };
  } catch (error) {
    const mapped = gitlabError(error, c.context({ what: "read_artifact", jobId, path }));
    if (mapped.code === "gitlab_not_found") return undefined;
    throw mapped;
  }
}

async function eraseJobArtifacts(c: GitlabClient, jobId: number): Promise<void> {
  // Without a job ID the same endpoint deletes every artifact of the project: never that.
  if (!Number.isSafeInteger(jobId) || jobId <= 0) {
    throw new VmbotError({ code: "internal", why: "not_a_job_id", jobId });
  }
  try {
    await c.withToken(() => c.api.JobArtifacts.remove(c.options.project, { jobId }));
  } catch (error) {
    throw gitlabError(error, c.context({ what: "erase_artifacts", jobId }));
  }
}

type JobCalls = Pick<
  GitlabPort,
  | "pipelineJobs"
  | "job"
  | "jobLog"
  | "streamJobLog"
  | "playJob"
  | "retryJob"
  | "jobArtifact"
  | "eraseJobArtifacts"
>;

/** Reading, playing and retrying jobs, their logs and artifacts. */
export function jobCalls(c: GitlabClient): JobCalls {
  const { api, options } = c;
  return {
    async pipelineJobs(pipelineId) {
      const jobs = await c.call({ what: "list_jobs", pipelineId }, z.array(JobSchema), () =>
        api.Jobs.all(options.project, { pipelineId, perPage: 100 }),
      );
      return jobs.map(toJob);
    },

    async job(jobId) {
      return toJob(
        await c.call({ what: "read_job", jobId }, JobSchema, () =>
          api.Jobs.show(options.project, jobId),
        ),
      );
    },

    async jobLog(jobId, maxBytes) {
      const parts: string[] = [];
      const { truncated } = await readJobLog(c, jobId, maxBytes, (text) => {
        parts.push(text);
      });
      return { text: parts.join(""), truncated };
    },

    streamJobLog: (jobId, maxBytes, consume) => readJobLog(c, jobId, maxBytes, consume),

    async playJob(jobId) {
      return toJob(
        await c.call({ what: "play_job", jobId }, JobSchema, () =>
          api.Jobs.play(options.project, jobId),
        ),
      );
    },

    async retryJob(jobId) {
      return toJob(
        await c.call({ what: "retry_job", jobId }, JobSchema, () =>
          api.Jobs.retry(options.project, jobId),
        ),
      );
    },

    jobArtifact: (jobId, path, maxBytes) => jobArtifact(c, jobId, path, maxBytes),

    eraseJobArtifacts: (jobId) => eraseJobArtifacts(c, jobId),
  };
}
