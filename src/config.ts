import type { z } from "zod";
import { isPostgresUrl, parsePostgresUrl } from "./store/postgres/url.js";
import { leaseProblems } from "./vm/lease.js";
import { crossFieldProblems, EnvSchema, type Env, type RawEnv } from "./config/env.js";

/**
 * The whole configuration contract (SPEC section 6): one schema over the environment
 * (`config/env.ts`), and the bot's configuration as that schema's output, shaped here. The
 * `Config` type is inferred from it, never written by hand.
 */

/** The Vault secret of vmbot's read-only (PVEAuditor) Proxmox token. */
export const DEFAULT_PROXMOX_PATH = "proxmox-readonly";
/** The older default: the secret that holds the pipeline's provisioning token. */
export const LEGACY_PROXMOX_PATH = "proxmox";

/** The one login the environment names; crossFieldProblems has made sure there is exactly one. */
function vaultAuth(env: Env) {
  if (env.VAULT_ROLE_ID !== undefined && env.VAULT_SECRET_ID !== undefined) {
    return {
      method: "approle" as const,
      roleId: env.VAULT_ROLE_ID,
      secretId: env.VAULT_SECRET_ID,
    };
  }
  if (env.VAULT_K8S_ROLE !== undefined) {
    return {
      method: "kubernetes" as const,
      role: env.VAULT_K8S_ROLE,
      jwtFile: env.VAULT_K8S_TOKEN_FILE,
    };
  }
  return { method: "token" as const, token: env.VAULT_TOKEN ?? "" };
}

function vaultSettings(env: Env) {
  if (env.VAULT_ADDR === undefined) return undefined;
  return {
    addr: env.VAULT_ADDR,
    /** How vmbot logs in to Vault: exactly one of these. */
    auth: vaultAuth(env),
    kvMount: env.VAULT_KV_MOUNT,
    /**
     * Where the Proxmox token is, tried in order: VAULT_PROXMOX_PATH when set; else the
     * read-only token's secret, then the older default (the provisioning token's secret).
     */
    proxmoxPaths:
      env.VAULT_PROXMOX_PATH === undefined
        ? [DEFAULT_PROXMOX_PATH, LEGACY_PROXMOX_PATH]
        : [env.VAULT_PROXMOX_PATH],
    gitlabPath: env.VAULT_GITLAB_PATH,
  };
}

/** The environment's variables, as the parts of the bot use them. */
const ConfigSchema = EnvSchema.transform((env) => ({
  slack: {
    botToken: env.SLACK_BOT_TOKEN,
    signingSecret: env.SLACK_SIGNING_SECRET,
    appToken: env.SLACK_APP_TOKEN,
    apiUrl: env.SLACK_API_URL === undefined ? undefined : `${env.SLACK_API_URL}/`,
    channel: env.SLACK_CHANNEL,
  },
  port: env.PORT,
  gitlab: {
    url: env.GITLAB_URL,
    token: env.GITLAB_TOKEN,
    project: env.GITLAB_PROJECT,
    ref: env.GITLAB_REF,
    pipelineParams: env.GITLAB_PIPELINE_PARAMS,
    /** How cores, memory, disk and DNS reach Terraform: TF_VAR_* variables, or inputs. */
    sizingParams: env.GITLAB_SIZING_PARAMS,
    /** Inputs the pipeline declares `type: number`; every other input is sent as a string. */
    numberInputs: env.GITLAB_NUMBER_INPUTS,
    /** Send VMBOT_REQUEST_ID with each pipeline, so a restart finds the one it created. */
    requestIdVariable: env.GITLAB_REQUEST_ID_VARIABLE,
    jobs: {
      plan: env.GITLAB_PLAN_JOB,
      apply: env.GITLAB_APPLY_JOB,
      configure: env.GITLAB_CONFIGURE_JOB,
      /** The manual job of `action=destroy` pipelines. */
      destroy: env.GITLAB_DESTROY_JOB,
    },
    webhookSecret: env.GITLAB_WEBHOOK_SECRET,
    /** Path of `terraform show -json` output in the plan job's artifacts, when the job keeps one. */
    planJsonArtifact: env.GITLAB_PLAN_JSON_ARTIFACT,
    /** How much of a job's log is read at most; the rest stays in GitLab. */
    logMaxBytes: env.GITLAB_LOG_MAX_BYTES,
  },
  tfStateName: env.TF_STATE_NAME,
  /** Each VM's Terraform state name, with `{vm_name}` for the VM's name. */
  stateNameTemplate: env.TF_STATE_NAME_TEMPLATE,
  pollIntervalMs: env.POLL_INTERVAL_MS,
  /** With PostgreSQL, how long a leader's lease lasts unless renewed (LEADER_TTL). */
  leaderTtlMs: env.LEADER_TTL,
  /** How long a plan may wait for approval (the plan artifact's lifetime on the platform). */
  planTtlMs: env.PLAN_TTL,
  /** VMs' leases: their default length, maximum, reminders and what their end does. */
  lease: {
    defaultMs: env.VM_LEASE_DEFAULT,
    maxMs: env.VM_LEASE_MAX,
    warnMs: env.VM_LEASE_WARN,
    onExpiry: env.VM_LEASE_ON_EXPIRY,
  },
  vault: vaultSettings(env),
  proxmox: {
    url: env.PROXMOX_URL,
    token: env.PROXMOX_TOKEN,
    caFile: env.PROXMOX_CA_FILE,
    insecure: env.PROXMOX_INSECURE,
  },
  vm: {
    nodes: env.VM_NODES,
    templates: env.VM_TEMPLATES,
    defaultGateway: env.VM_DEFAULT_GATEWAY,
    defaultDns: env.VM_DEFAULT_DNS,
  },
  access: {
    /** Empty means everyone may ask. */
    requesters: env.REQUESTERS,
    approvers: env.APPROVERS,
    admins: env.ADMINS,
    allowSelfApproval: env.ALLOW_SELF_APPROVAL,
    /** Mention the approvers in the request's thread when a plan awaits them. */
    notifyApprovers: env.NOTIFY_APPROVERS,
  },
  /** The request policy file (VMBOT_POLICY); without it the access lists are the policy. */
  policyPath: env.VMBOT_POLICY,
  dbPath: env.VMBOT_DB,
  logLevel: env.LOG_LEVEL,
}));

export type Config = z.output<typeof ConfigSchema>;
export type VaultAuth = NonNullable<Config["vault"]>["auth"];
export type VmTemplate = Config["vm"]["templates"][number];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `vmbot cannot start: ${problems.length === 1 ? "1 configuration problem" : `${problems.length} configuration problems`}:\n` +
        problems.map((problem) => `  - ${problem}`).join("\n") +
        "\nSee .env.example for every variable and its meaning.",
    );
    this.name = "ConfigError";
  }
}

/** One line per issue zod found, each naming its variable; no value is ever echoed back. */
export function problemsOf(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const name = issue.path.map(String).join(".") || "environment";
    const message = issue.message.startsWith("Invalid input") ? "is malformed" : issue.message;
    return `${name} ${message}`;
  });
}

/**
 * Validates the environment. Throws a ConfigError naming every problem; no value is ever
 * echoed back, so a secret pasted into the wrong variable cannot leak through the message.
 */
export function loadConfig(env: RawEnv = {}): Config {
  const parsed = ConfigSchema.safeParse(env);
  const problems = parsed.success ? [] : problemsOf(parsed.error);
  problems.push(...crossFieldProblems(env));
  if (parsed.success) problems.push(...leaseProblems(parsed.data.lease));
  if (!parsed.success || problems.length > 0) throw new ConfigError([...new Set(problems)]);
  return parsed.data;
}

/** Every secret value in the configuration, for redaction by value. */
export function configSecrets(config: Config): string[] {
  return [
    config.slack.botToken,
    config.slack.signingSecret,
    config.slack.appToken,
    config.gitlab.token,
    config.gitlab.webhookSecret,
    config.vault?.auth.method === "token" ? config.vault.auth.token : undefined,
    config.vault?.auth.method === "approle" ? config.vault.auth.secretId : undefined,
    config.proxmox.token,
    isPostgresUrl(config.dbPath) ? parsePostgresUrl(config.dbPath).password : undefined,
  ].filter((value): value is string => value !== undefined && value.length > 0);
}
