import type { Config } from "../config.js";
import { VmbotError } from "../errors.js";
import { userMessage } from "../views/errors.js";
import type { Logger } from "../logger.js";
import { createNodeDirectory, type NodeDirectory } from "../proxmox/directory.js";
import { createProxmox } from "../proxmox/proxmox.js";
import type { Redactor } from "../redact.js";
import { fixedSecret, type SecretSource } from "../secrets.js";
import { createVault, type Vault } from "../vault/vault.js";
import { StartupError } from "./errors.js";
import type { StartOptions } from "./options.js";

/** PVE API tokens: `user@realm!tokenid=secret`. */
const PVE_TOKEN = /^[^@\s]+@[^!\s]+![^=\s]+=\S+$/;

/**
 * The Proxmox API token from Vault, checked for its shape before it is sent anywhere. `paths`
 * are tried in order while Vault has no such secret; the first found is kept. A token found
 * only at a later path (the older default, which holds the pipeline's provisioning token) is
 * used with a warning: vmbot only reads, and should get a read-only token.
 */
function proxmoxTokenFromVault(
  vault: Vault,
  mount: string,
  paths: readonly string[],
  log: Logger,
): SecretSource {
  const candidates = paths.map((path) => ({ path, source: vault.source(path, "api_token") }));
  const [preferred] = candidates;
  if (preferred === undefined) throw new StartupError("no Vault path for the Proxmox token");
  let chosen: (typeof candidates)[number] | undefined;
  /** Vault answers these for a secret that is not there, or that this role may not read. */
  const elsewhere = (error: unknown) =>
    error instanceof VmbotError &&
    (error.code === "vault_missing" || error.code === "vault_denied");
  const read = async (): Promise<string> => {
    if (chosen !== undefined) return chosen.source.get();
    let first: unknown;
    for (const candidate of candidates) {
      try {
        const token = await candidate.source.get();
        if (candidate !== preferred) {
          log.warn(
            `vmbot reads the Proxmox token at ${mount}/${candidate.path}, not at ${mount}/${preferred.path}: that secret usually holds the pipeline's provisioning token. Give vmbot a read-only (PVEAuditor) token at ${mount}/${preferred.path} (see the README).`,
          );
        }
        chosen = candidate;
        return token;
      } catch (error) {
        if (!elsewhere(error)) throw error;
        first ??= error;
      }
    }
    // Not found anywhere: the first path is where it belongs, so its answer says what to do.
    throw first;
  };
  return {
    async get() {
      const token = await read();
      if (!PVE_TOKEN.test(token)) {
        throw new VmbotError({
          code: "vault_missing",
          why: "not_proxmox_token",
          path: `${mount}/${(chosen ?? preferred).path}`,
        });
      }
      return token;
    },
    refresh: (used) => (chosen ?? preferred).source.refresh(used),
  };
}

export interface Platform {
  vault: Vault | undefined;
  gitlabToken: SecretSource;
  nodes: NodeDirectory | undefined;
}

/**
 * Vault first (a bot that cannot read its GitLab token cannot work), then the Proxmox client.
 * A Proxmox token that cannot be read now is not fatal: the form falls back to VM_NODES and
 * `/vm capacity` says why.
 */
export async function connectPlatform(
  config: Config,
  options: StartOptions,
  log: Logger,
  redactor: Redactor,
): Promise<Platform> {
  let vault: Vault | undefined;
  let gitlabToken = fixedSecret(config.gitlab.token ?? "");
  if (config.vault) {
    const settings = config.vault;
    vault = createVault({
      addr: settings.addr,
      auth: settings.auth,
      kvMount: settings.kvMount,
      log: log.child({ component: "vault" }),
      redactor,
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.vaultTimeoutMs === undefined ? {} : { timeoutMs: options.vaultTimeoutMs }),
    });
    try {
      await vault.start();
      if (settings.gitlabPath !== undefined) {
        gitlabToken = vault.source(settings.gitlabPath, "token");
        await gitlabToken.get();
      }
    } catch (error) {
      if (settings.gitlabPath !== undefined) {
        vault.stop();
        throw new StartupError(`Vault: ${userMessage(error)}`, { cause: error });
      }
      // Vault holds only the Proxmox token: vmbot works without it, and keeps trying.
      log.warn(
        { err: error },
        "could not log in to Vault; the form offers VM_NODES and /vm capacity says why until it can",
      );
      vault.retryInBackground();
    }
  }
  if (config.proxmox.url === undefined) return { vault, gitlabToken, nodes: undefined };
  let proxmoxToken: SecretSource;
  if (config.proxmox.token !== undefined) {
    proxmoxToken = fixedSecret(config.proxmox.token);
  } else if (vault && config.vault) {
    proxmoxToken = proxmoxTokenFromVault(
      vault,
      config.vault.kvMount,
      config.vault.proxmoxPaths,
      log.child({ component: "vault" }),
    );
    await proxmoxToken.get().catch((error: unknown) => {
      log.warn(
        { err: error },
        "could not read the Proxmox API token from Vault; /vm capacity and the form's node list will say why until it can",
      );
    });
  } else {
    throw new StartupError("PROXMOX_URL needs PROXMOX_TOKEN or Vault");
  }
  try {
    const proxmox = createProxmox({
      url: config.proxmox.url,
      token: proxmoxToken,
      caFile: config.proxmox.caFile,
      insecure: config.proxmox.insecure,
      log: log.child({ component: "proxmox" }),
      ...(options.proxmoxTimeoutMs === undefined ? {} : { timeoutMs: options.proxmoxTimeoutMs }),
    });
    return {
      vault,
      gitlabToken,
      nodes: createNodeDirectory(proxmox, {
        ...(options.nodeListMaxAgeMs === undefined ? {} : { maxAgeMs: options.nodeListMaxAgeMs }),
        ...(options.clock === undefined ? {} : { clock: options.clock }),
      }),
    };
  } catch (error) {
    vault?.stop();
    throw new StartupError(userMessage(error), { cause: error });
  }
}
