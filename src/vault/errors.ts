import { networkReason, VmbotError, type VaultAsk } from "../errors.js";
import { errorCodeOf, VaultErrorAnswerSchema, type VaultErrorAnswer } from "./schemas.js";

/** What the bot asked of Vault, for a typed error. */
export interface VaultCall {
  addr: string;
  ask: VaultAsk;
  timeoutMs: number;
  /** The key the bot needed in the secret read. */
  key?: string;
}

/** The Kubernetes service-account token file could not be read, so there was no login to send. */
export class TokenFileUnreadable extends Error {
  constructor(
    readonly file: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot read ${file}: ${reason}`, options);
    this.name = "TokenFileUnreadable";
  }
}

/**
 * Vault's own words, e.g. "permission denied; invalid token" out of its multi-error text
 * ("2 errors occurred:\n\t* permission denied\n\t* invalid token"). Vault never echoes a secret.
 */
function vaultWords(error: VaultErrorAnswer): string {
  const errors = error.response.body?.errors;
  if (errors === undefined) return "";
  return errors
    .filter((item): item is string => typeof item === "string")
    .flatMap((item) => item.split("\n"))
    .map((line) => line.trim().replace(/^\*\s*/, ""))
    .filter((line) => line !== "" && !/^\d+ errors? occurred:$/.test(line))
    .join("; ")
    .slice(0, 200);
}

/**
 * Turns whatever node-vault threw into a typed error that names the path and the cause, never
 * the secret.
 */
export function vaultError(error: unknown, call: VaultCall): VmbotError {
  if (error instanceof VmbotError) return error;
  const { addr, ask } = call;
  const options = { cause: error };
  if (
    call.key !== undefined &&
    ask.what === "read" &&
    error instanceof Error &&
    error.message.startsWith("missing key")
  ) {
    return new VmbotError(
      { code: "vault_missing", why: "no_key", path: ask.path, key: call.key },
      options,
    );
  }
  if (error instanceof TokenFileUnreadable) {
    return new VmbotError(
      {
        code: "vault_failed",
        why: "token_file",
        addr,
        ask,
        file: error.file,
        reason: error.reason,
      },
      options,
    );
  }
  const answer = VaultErrorAnswerSchema.safeParse(error);
  if (answer.success) {
    const status = answer.data.response.statusCode;
    const message = vaultWords(answer.data);
    switch (status) {
      case 503:
        return new VmbotError({ code: "vault_sealed", addr, ask }, options);
      case 403:
        return new VmbotError({ code: "vault_denied", addr, ask, message }, options);
      case 404:
        return new VmbotError({ code: "vault_missing", why: "not_found", addr, ask }, options);
      case 400:
      case 401:
        return new VmbotError({ code: "vault_login_failed", addr, ask, status, message }, options);
      default:
        return new VmbotError(
          { code: "vault_failed", why: "status", addr, ask, status, message },
          options,
        );
    }
  }
  const code = errorCodeOf(error);
  if (
    code === "ECONNABORTED" ||
    code === "ETIMEDOUT" ||
    (error instanceof Error && /timeout/i.test(error.message))
  ) {
    return new VmbotError({ code: "vault_timeout", addr, ask, timeoutMs: call.timeoutMs }, options);
  }
  const reason = networkReason(error);
  if (reason !== undefined) {
    return new VmbotError({ code: "vault_unreachable", addr, ask, reason }, options);
  }
  return new VmbotError(
    {
      code: "vault_failed",
      why: "other",
      addr,
      ask,
      message: error instanceof Error ? error.message : undefined,
    },
    options,
  );
}
