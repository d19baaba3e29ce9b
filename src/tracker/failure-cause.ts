import type { PlanDiagnostic } from "../terraform/plan-text.js";
import type { FailureCauseCode } from "../requests/records.js";
import { causeWords } from "../views/failure.js";

export {
  FAILURE_CAUSES,
  FailureRecordSchema,
  type FailureCauseCode,
  type FailureRecord,
} from "../requests/records.js";

/**
 * Why a job failed, classified from its whole log (the tail a message could show may not reach
 * it): the cause as a code, with the facts its sentence names. The sentences are in
 * views/failure.ts.
 */

export interface FailureFinding {
  cause: FailureCauseCode;
  /** Who holds the state lock, as Terraform's lock info says. */
  lockedBy?: string;
  /** The first line of Terraform's error, for a `terraform_error`. */
  summary?: string;
}

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
