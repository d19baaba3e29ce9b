/**
 * One error type for everything the bot reports: a code to branch on, the data behind it (what
 * was asked, the status, the other system's own message), and the original cause for the log.
 * The words a person reads are built from the code and the data in `views/errors.ts`.
 */

/** What the bot asked GitLab for when it failed. */
export type GitlabAsk =
  | {
      what:
        | "create_pipeline"
        | "list_pipelines"
        | "find_request_pipeline"
        | "find_request_pipelines"
        | "read_project"
        | "read_version"
        | "read_inputs"
        | "read_states";
    }
  | {
      what: "read_pipeline" | "list_jobs" | "read_variables" | "cancel_pipeline";
      pipelineId: number;
    }
  | {
      what: "read_job" | "play_job" | "retry_job" | "read_log" | "erase_artifacts";
      jobId: number;
    }
  | { what: "read_artifact"; jobId: number; path: string }
  | { what: "unlock_state" | "read_lock"; name: string };

/** What the bot asked Vault for when it failed. */
export type VaultAsk =
  | { what: "log_in" | "log_in_again" | "check_token" | "renew_token" }
  /** `path` is the secret's path with its mount, e.g. `secret/proxmox`. */
  | { what: "read"; path: string };

interface AtGitlab {
  ask: GitlabAsk;
}

interface AtVault {
  ask: VaultAsk;
  /** Vault's address. */
  addr: string;
}

export type ErrorDetail =
  | ({ code: "gitlab_unauthorized" } & AtGitlab)
  | ({ code: "gitlab_forbidden"; project: string } & AtGitlab)
  | ({ code: "gitlab_not_found" } & AtGitlab)
  /** `status` is absent when GitLab's GraphQL answered with no project rather than a 404. */
  | ({ code: "gitlab_project_not_found"; project: string; status?: number } & AtGitlab)
  /** `message`: GitLab's own words, as it sent them (not escaped). */
  | ({ code: "gitlab_bad_request"; status: number; message: string } & AtGitlab)
  | ({ code: "gitlab_rate_limited" } & AtGitlab)
  /** `status` 0 when there was none; `gaveUp` after several tries that all failed. */
  | ({ code: "gitlab_unavailable"; status: number; gaveUp: boolean } & AtGitlab)
  | ({ code: "gitlab_timeout"; url: string; timeoutMs: number } & AtGitlab)
  | ({ code: "gitlab_unreachable"; url: string; reason: string } & AtGitlab)
  /** `statesOver`: the project has more Terraform states than the bot reads (`project` then set). */
  | ({ code: "gitlab_bad_response"; statesOver?: number; project?: string } & AtGitlab)
  | ({ code: "gitlab_state_not_found"; name: string } & AtGitlab)
  /** A job ID that cannot be one: nothing was asked. */
  | { code: "internal"; why: "not_a_job_id"; jobId: number }
  /** A key missing from a secret (`path` with its mount). */
  | { code: "vault_missing"; why: "no_key"; path: string; key: string }
  /** The secret's `api_token` is not in Proxmox's token form. */
  | { code: "vault_missing"; why: "not_proxmox_token"; path: string }
  | ({ code: "vault_missing"; why: "not_found" } & AtVault)
  /** A secret that is not KV version 2. */
  | { code: "vault_failed"; why: "not_kv2"; path: string }
  | ({ code: "vault_sealed" } & AtVault)
  /** `message`: Vault's own words (never a secret), "" when it gave none. */
  | ({ code: "vault_denied"; message: string } & AtVault)
  | ({ code: "vault_login_failed"; status: number; message: string } & AtVault)
  /** Vault answered `status`; `message` is Vault's own words, "" when it gave none. */
  | ({ code: "vault_failed"; why: "status"; status: number; message: string } & AtVault)
  /** The Kubernetes service-account token at `file` could not be read (`reason`). */
  | ({ code: "vault_failed"; why: "token_file"; file: string; reason: string } & AtVault)
  /** No answer from Vault to read: `message` is the client's own, when it had one. */
  | ({ code: "vault_failed"; why: "other"; message: string | undefined } & AtVault)
  | ({ code: "vault_timeout"; timeoutMs: number } & AtVault)
  | ({ code: "vault_unreachable"; reason: string } & AtVault)
  /** The CA file could not be read, or the certificate is not trusted. */
  | { code: "proxmox_tls"; why: "ca_unreadable"; caFile: string; reason: string }
  | { code: "proxmox_tls"; why: "untrusted"; url: string; reason: string }
  | { code: "proxmox_unauthorized"; url: string }
  | { code: "proxmox_forbidden"; url: string }
  /** `status` undefined when the answer was not the node list at all. */
  | { code: "proxmox_failed"; url: string; status?: number }
  | { code: "proxmox_timeout"; url: string; timeoutMs: number }
  | { code: "proxmox_unreachable"; url: string; reason: string };

export type ErrorCode = ErrorDetail["code"];

/** The detail for one code. */
export type DetailOf<C extends ErrorCode> = Extract<ErrorDetail, { code: C }>;

export class VmbotError extends Error {
  readonly code: ErrorCode;
  readonly detail: ErrorDetail;

  constructor(detail: ErrorDetail, options?: { cause?: unknown }) {
    super(`${detail.code} ${JSON.stringify(detail)}`, options);
    this.name = "VmbotError";
    this.code = detail.code;
    this.detail = detail;
  }
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

/** The errors of each adapter. */
export type GitlabFailure = Extract<ErrorDetail, { ask: GitlabAsk }>;
export type VaultFailure = Extract<ErrorDetail, { ask: VaultAsk; addr: string }>;
export type ProxmoxFailure = Extract<ErrorDetail, { code: `proxmox_${string}` }>;
