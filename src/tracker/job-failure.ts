import type { Config } from "../config.js";
import type { GitlabPort, Job } from "../gitlab/gitlab.js";
import { cleanTrace } from "../gitlab/trace.js";
import type { Logger } from "../logger.js";
import type { Redactor } from "../redact.js";
import type { ThreadPoster } from "../slack/thread.js";
import type { RequestRecord } from "../store/store.js";
import { parsePlanText } from "../terraform/plan-text.js";
import { causeWords, failureExcerptWords, jobFailedWords } from "../views/failure.js";
import { tailCutWords } from "../views/log-cut.js";
import { classifyFailure, type FailureFinding, type FailureRecord } from "./failure-cause.js";

const LOG_TAIL_LINES = 15;
/** How much of a Terraform error's text a failure message shows. */
const ERROR_EXCERPT_CHARS = 1_500;

export interface JobFailureDeps {
  config: Config;
  gitlab: GitlabPort;
  log: Logger;
  redact: Redactor;
  post: ThreadPoster;
  /** Ends the request as failed with `words` on its message. */
  fail(request: RequestRecord, words: string, failure?: FailureRecord): Promise<void>;
}

interface FailureReading {
  excerpt: string;
  kind: "error" | "tail";
  truncated: boolean;
  finding: FailureFinding | undefined;
}

/**
 * A failed job ends the request: its cause in one sentence on the message, the excerpt that
 * shows it in the thread (a configure job's failed tasks are there already, in its recap), and
 * what the next step (Retry configure, Plan again) needs recorded.
 */
export function createJobFailure(deps: JobFailureDeps) {
  const { config, gitlab, log } = deps;

  /**
   * The part of a failed job's log that shows the failure (a Terraform job's first `Error:`
   * diagnostic, whole; else its last lines), cleaned and redacted, whether the log was cut at the
   * cap, and the failure's cause when the log shows one.
   */
  async function failureOf(job: Job, terraform: boolean): Promise<FailureReading> {
    try {
      const read = await gitlab.jobLog(job.id, config.gitlab.logMaxBytes);
      const text = cleanTrace(read.text);
      // A Terraform job's root cause is its first `Error:` diagnostic, wherever it stands.
      const diagnostic = terraform ? parsePlanText(text).errors[0] : undefined;
      const finding = classifyFailure(text, diagnostic);
      if (diagnostic !== undefined) {
        const block = [`Error: ${diagnostic.summary}`, diagnostic.detail]
          .filter((part) => part.trim() !== "")
          .join("\n\n");
        const excerpt = deps.redact(block.slice(0, ERROR_EXCERPT_CHARS));
        return { excerpt, kind: "error", truncated: false, finding };
      }
      const lines = text.split("\n").filter((line) => line.trim() !== "");
      const excerpt = deps.redact(lines.slice(-LOG_TAIL_LINES).join("\n"));
      return { excerpt, kind: "tail", truncated: read.truncated, finding };
    } catch (error) {
      log.warn({ err: error, jobId: job.id }, "could not read a failed job's log");
      return { excerpt: "", kind: "tail", truncated: false, finding: undefined };
    }
  }

  return async function failJob(
    request: RequestRecord,
    job: Job,
    stage: FailureRecord["stage"],
  ): Promise<void> {
    const { excerpt, kind, truncated, finding } = await failureOf(job, stage !== "configure");
    if (stage !== "configure" && excerpt !== "") {
      const cut = truncated ? tailCutWords(config.gitlab.logMaxBytes) : undefined;
      await deps.post(
        request,
        `failure_excerpt:${job.id}`,
        failureExcerptWords(kind, excerpt, cut),
      );
    }
    const retries = request.failure?.retries;
    await deps.fail(
      request,
      jobFailedWords(stage, job, finding === undefined ? undefined : causeWords(finding)),
      {
        stage,
        jobId: job.id,
        ...(finding === undefined ? {} : { cause: finding.cause }),
        ...(retries === undefined ? {} : { retries }),
      },
    );
  };
}
