/**
 * One error type for everything the bot reports: a code to branch on, words for the person
 * waiting, and the original cause for the log.
 */

export type ErrorCode =
  | "gitlab_unauthorized"
  | "gitlab_forbidden"
  | "gitlab_not_found"
  | "gitlab_project_not_found"
  | "gitlab_bad_request"
  | "gitlab_rate_limited"
  | "gitlab_unavailable"
  | "gitlab_timeout"
  | "gitlab_unreachable"
  | "gitlab_bad_response"
  | "gitlab_state_not_found"
  | "vault_sealed"
  | "vault_denied"
  | "vault_missing"
  | "vault_login_failed"
  | "vault_timeout"
  | "vault_unreachable"
  | "vault_failed"
  | "proxmox_not_configured"
  | "proxmox_unauthorized"
  | "proxmox_forbidden"
  | "proxmox_timeout"
  | "proxmox_unreachable"
  | "proxmox_tls"
  | "proxmox_failed"
  | "slack_failed"
  | "internal";

export class VmbotError extends Error {
  readonly code: ErrorCode;
  /** What the person sees: what failed, why in their terms, and what to do. Slack mrkdwn. */
  readonly userMessage: string;

  constructor(code: ErrorCode, userMessage: string, options?: { cause?: unknown }) {
    super(`${code}: ${userMessage}`, options);
    this.name = "VmbotError";
    this.code = code;
    this.userMessage = userMessage;
  }
}

/** The words a user sees for any error: never a stack trace, never nothing. */
export function userMessage(error: unknown): string {
  if (error instanceof VmbotError) return error.userMessage;
  return "Something went wrong inside vmbot. The details are in its log; please tell the team that runs it.";
}

/** The network-level reason behind a failed fetch, e.g. ECONNREFUSED. */
export function networkReason(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z_]+$/.test(code)) return code;
    current = current.cause;
  }
  return undefined;
}
