import { networkReason, VmbotError } from "../errors.js";
import { escapeMrkdwn } from "../slack/mrkdwn.js";

/** What the bot was doing with Vault, for the words of an error. */
export interface VaultCall {
  addr: string;
  /** e.g. "read", "log in". */
  doing: string;
  timeoutMs: number;
  /** The secret's path under the mount, e.g. `secret/proxmox`. */
  path?: string;
  /** The key the bot needed in that secret. */
  key?: string;
}

interface VaultResponseError {
  response: { statusCode: number; body?: { errors?: unknown } };
}

const hasResponse = (error: unknown): error is VaultResponseError =>
  typeof (error as { response?: { statusCode?: unknown } } | null)?.response?.statusCode ===
  "number";

/**
 * Vault's own words, e.g. "permission denied; invalid token" out of its multi-error text
 * ("2 errors occurred:\n\t* permission denied\n\t* invalid token"). Vault never echoes a secret.
 */
function vaultWords(error: VaultResponseError): string {
  const errors = error.response.body?.errors;
  if (!Array.isArray(errors)) return "";
  return errors
    .filter((item): item is string => typeof item === "string")
    .flatMap((item) => item.split("\n"))
    .map((line) => line.trim().replace(/^\*\s*/, ""))
    .filter((line) => line !== "" && !/^\d+ errors? occurred:$/.test(line))
    .join("; ")
    .slice(0, 200);
}

/** Vault's words as safe mrkdwn: they reach Slack. */
const safeWords = (error: VaultResponseError) => escapeMrkdwn(vaultWords(error));

/**
 * Turns whatever node-vault threw into words that name the path and the cause, never the secret.
 * The message reads on its own, after "vmbot could not …" or in a start-up error.
 */
export function vaultError(error: unknown, call: VaultCall): VmbotError {
  if (error instanceof VmbotError) return error;
  const what = call.path === undefined ? "" : ` \`${call.path}\``;
  const doing = `${call.doing}${what}`;
  const options = { cause: error };
  if (call.key !== undefined && error instanceof Error && error.message.startsWith("missing key")) {
    return new VmbotError(
      "vault_missing",
      `The Vault secret${what} has no key \`${call.key}\`: add it there (KV version 2).`,
      options,
    );
  }
  if (hasResponse(error)) {
    const status = error.response.statusCode;
    const words = safeWords(error);
    switch (status) {
      case 503:
        return new VmbotError(
          "vault_sealed",
          `Vault at ${call.addr} is sealed (503), so vmbot could not ${doing}. It works again once Vault is unsealed.`,
          options,
        );
      case 403:
        return new VmbotError(
          "vault_denied",
          `Vault denied vmbot permission to ${doing} (403${words === "" ? "" : `: ${words}`}). Check the policy attached to vmbot's Vault login.`,
          options,
        );
      case 404:
        return new VmbotError(
          "vault_missing",
          call.path === undefined
            ? `Vault at ${call.addr} has nothing at the path vmbot uses to ${call.doing} (404): check the auth method's mount.`
            : `Vault has no secret${what} (404): check VAULT_KV_MOUNT and the path, and that the mount is KV version 2.`,
          options,
        );
      case 400:
      case 401:
        return new VmbotError(
          "vault_login_failed",
          `Vault refused vmbot's login when it tried to ${doing} (${status}${words === "" ? "" : `: ${words}`}). Check VAULT_ROLE_ID and VAULT_SECRET_ID, VAULT_K8S_ROLE or VAULT_TOKEN.`,
          options,
        );
      default:
        return new VmbotError(
          "vault_failed",
          `Vault at ${call.addr} answered ${status}${words === "" ? "" : ` (${words})`} when vmbot tried to ${doing}.`,
          options,
        );
    }
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (
    code === "ECONNABORTED" ||
    code === "ETIMEDOUT" ||
    (error instanceof Error && /timeout/i.test(error.message))
  ) {
    return new VmbotError(
      "vault_timeout",
      `Vault at ${call.addr} did not answer within ${Math.round(call.timeoutMs / 100) / 10} seconds when vmbot tried to ${doing}.`,
      options,
    );
  }
  const reason = networkReason(error);
  if (reason !== undefined) {
    return new VmbotError(
      "vault_unreachable",
      `Vault at ${call.addr} could not be reached (${reason}) when vmbot tried to ${doing}. Check that Vault is up and VAULT_ADDR is right.`,
      options,
    );
  }
  return new VmbotError(
    "vault_failed",
    `vmbot could not ${doing} in Vault: ${error instanceof Error ? escapeMrkdwn(error.message) : "unexpected answer"}.`,
    options,
  );
}
