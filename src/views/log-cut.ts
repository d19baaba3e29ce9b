import { escapeMrkdwn, link } from "../slack/mrkdwn.js";

/** What people read when vmbot stopped reading a job's log at GITLAB_LOG_MAX_BYTES. */

/** A size as people read it: `4 MB`, `1.5 MB`, `512 KB`. */
export function sizeWords(bytes: number): string {
  const mb = bytes / 1_048_576;
  if (mb >= 1) return `${Number.isInteger(mb) ? mb : mb.toFixed(1)} MB`;
  return `${Math.round(bytes / 1024)} KB`;
}

/** The plan message's warning: the summary may be missing what the unread part holds. */
export function planLogCutWarning(maxBytes: number, jobUrl: string): string {
  return `:warning: The plan job's log is longer than ${sizeWords(maxBytes)}: vmbot read only its first ${sizeWords(maxBytes)}, so this summary may be missing resources, destroys among them. ${link(jobUrl, "Read the whole log in GitLab")} before approving.`;
}

/** The first and last lines of an uploaded plan file whose log was cut. */
export function planFileCutNotes(maxBytes: number, jobUrl: string): { head: string; tail: string } {
  return {
    head: `[vmbot read only the first ${sizeWords(maxBytes)} of this job's log; the whole log is at ${jobUrl}]\n`,
    tail: `\n[... the log goes on beyond ${sizeWords(maxBytes)}: ${jobUrl}]\n`,
  };
}

/** Said with a failure's last lines when they are not the job's last lines. */
export function tailCutWords(maxBytes: number): string {
  return escapeMrkdwn(
    `The log is longer than ${sizeWords(maxBytes)}: these are the last lines vmbot read, not the job's last lines.`,
  );
}

/** Said after a configure summary read from a log cut short. */
export function recapCutWords(maxBytes: number, jobUrl: string): string {
  return `The configure job's log is longer than ${sizeWords(maxBytes)}: vmbot read only its start, so this summary may be incomplete. ${link(jobUrl, "Read the whole log in GitLab")}.`;
}

/** A plan note: the plan's JSON artifact was not read, so the summary comes from the log. */
export function planJsonMissing(path: string, tooLong: boolean, maxBytes: number): string {
  return tooLong
    ? `The plan job's ${path} is longer than ${sizeWords(maxBytes)}, more than vmbot reads; this summary was read from its log.`
    : `The plan job kept no ${path}; this summary was read from its log.`;
}
