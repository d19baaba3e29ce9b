import { z } from "zod";
import type { PlanDiagnostic } from "../terraform/plan-text.js";
import { causeWords } from "../views/failure.js";

/**
 * Why a job failed, classified from its whole log (the tail a message could show may not reach
 * it): the cause as a code, with the facts its sentence names. The sentences are in
 * views/failure.ts.
 */

export const FAILURE_CAUSES = [
  /** GitLab refused the Terraform state lock to the job's token (its user is below Maintainer). */
  "state_auth",
  /** The Terraform state is locked by someone else (a stuck lock, or a run in progress). */
  "state_locked",
  /** Ansible (or SSH) could not reach the VM. */
  "unreachable",
  /** Vault refused the job's token: permission denied. */
  "vault_denied",
  /** The job ran longer than its time limit. */
  "timeout",
  /** Terraform stopped on an `Error:` from a provider or an API. */
  "terraform_error",
] as const;
export type FailureCauseCode = (typeof FAILURE_CAUSES)[number];

export interface FailureFinding {
  cause: FailureCauseCode;
  /** Who holds the state lock, as Terraform's lock info says. */
  lockedBy?: string;
  /** The first line of Terraform's error, for a `terraform_error`. */
  summary?: string;
}

/** The stage a failed job belongs to, and what a next step needs to know. */
export const FailureRecordSchema = z.object({
  stage: z.enum(["plan", "apply", "configure"]),
  jobId: z.number().int(),
  cause: z.enum(FAILURE_CAUSES).optional(),
  /** How many times the configure job was retried from Slack for this request. */
  retries: z.number().int().nonnegative().optional(),
  /** The request planned again with the same inputs (Plan again), by whom and when. */
  again: z.object({ requestId: z.string(), by: z.string(), at: z.string() }).optional(),
});
export type FailureRecord = z.infer<typeof FailureRecordSchema>;

const TIMEOUT =
  /execution took longer than [0-9hms.]+ seconds|ERROR: Job failed: .*timeout|job_execution_timeout/;
const VAULT_DENIED =
  /(vault[\s\S]{0,400}?permission denied|Code: 403\. Errors:[\s\S]{0,200}?permission denied)/i;
const UNREACHABLE =
  /(UNREACHABLE! =>|Failed to connect to the host via ssh|unreachable=[1-9]|Connection timed out during banner exchange)/;

/**
 * The cause of a failed job's log, when it shows one vmbot knows. `diagnostic` is the job's first
 * Terraform `Error:`, when it has one; `failureReason` is GitLab's (`job_execution_timeout`).
 */
export function classifyFailure(
  log: string,
  diagnostic?: PlanDiagnostic,
  failureReason?: string | null,
): FailureFinding | undefined {
  if (/HTTP remote state endpoint (invalid|requires) auth/.test(log))
    return { cause: "state_auth" };
  const held = /HTTP remote state already locked[^\n]*[\s\S]*?Who:\s*([^\n]+)/.exec(log);
  if (held !== null || log.includes("Error acquiring the state lock")) {
    const who = held?.[1]?.replace(/[│|]/g, "").trim() ?? "";
    return who === "" ? { cause: "state_locked" } : { cause: "state_locked", lockedBy: who };
  }
  if (failureReason === "job_execution_timeout" || TIMEOUT.test(log)) return { cause: "timeout" };
  if (VAULT_DENIED.test(log)) return { cause: "vault_denied" };
  if (UNREACHABLE.test(log)) return { cause: "unreachable" };
  if (diagnostic !== undefined) {
    return { cause: "terraform_error", summary: diagnostic.summary.split("\n")[0] ?? "" };
  }
  return undefined;
}

/** A failed job's cause in one sentence, when its log shows one vmbot knows. */
export function failureCause(log: string, diagnostic?: PlanDiagnostic): string | undefined {
  const finding = classifyFailure(log, diagnostic);
  return finding === undefined ? undefined : causeWords(finding);
}
