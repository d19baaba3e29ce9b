import { z } from "zod";
import { isIpv4 } from "./net/ipv4.js";
import { stateNameTemplateProblem } from "./vm/state-name.js";
import { LEASE_ENV, leaseProblems, type LeaseSettings } from "./vm/lease.js";

/**
 * The whole configuration contract (SPEC section 6): one schema over the environment.
 * Nothing else in the bot reads `process.env`.
 */

const SLACK_ID = /^[UWS][A-Z0-9]{2,}$/;
/** Slack's static_select holds at most 100 options. */
const MAX_FORM_OPTIONS = 100;
/** The Vault secret of vmbot's read-only (PVEAuditor) Proxmox token. */
export const DEFAULT_PROXMOX_PATH = "proxmox-readonly";
/** The older default: the secret that holds the pipeline's provisioning token. */
export const LEGACY_PROXMOX_PATH = "proxmox";
/** The inputs vmbot sends whose values are numbers, so a pipeline may declare them `type: number`. */
const NUMERIC_INPUTS = [
  "template_vm_id",
  "vm_id",
  "vlan_id",
  "cpu_cores",
  "memory_mb",
  "disk_size_gb",
];
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

const blankToUndefined = (value: unknown): unknown =>
  typeof value === "string" && value.trim() === "" ? undefined : value;

/** A variable that may be unset; an empty string counts as unset. */
const optionalString = () => z.preprocess(blankToUndefined, z.string().trim().optional());

const prefixed = (prefix: string, what: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string({ error: `is required: set it to ${what}` })
      .trim()
      .refine((value) => value.startsWith(prefix), {
        error: `must start with ${prefix} (${what})`,
      }),
  );

const optionalPrefixed = (prefix: string, what: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .trim()
      .refine((value) => value.startsWith(prefix), {
        error: `must start with ${prefix} (${what})`,
      })
      .optional(),
  );

const integer = (fallback: number, min: number, max: number, what: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .default(String(fallback))
      .refine((value) => /^\d+$/.test(value.trim()), {
        error: `must be a whole number (${what})`,
      })
      .transform((value) => Number(value.trim()))
      .refine((value) => value >= min && value <= max, {
        error: `must be between ${min} and ${max} (${what})`,
      }),
  );

const boolean = (fallback: boolean) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .default(String(fallback))
      .transform((value) => value.trim().toLowerCase())
      .refine((value) => ["true", "false", "1", "0", "yes", "no"].includes(value), {
        error: "must be true or false",
      })
      .transform((value) => ["true", "1", "yes"].includes(value)),
  );

const httpUrl = (what: string) =>
  z
    .string()
    .trim()
    .refine(
      (value) => {
        try {
          return ["http:", "https:"].includes(new URL(value).protocol);
        } catch {
          return false;
        }
      },
      { error: `must be an http(s) URL (${what})` },
    )
    .refine(
      (value) => {
        try {
          const url = new URL(value);
          return url.username === "" && url.password === "";
        } catch {
          return true;
        }
      },
      { error: "must not carry a user name or password: vmbot shows this address to people" },
    )
    .transform((value) => value.replace(/\/+$/, ""));

const ipv4 = (fallback: string, what: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .default(fallback)
      .transform((value) => value.trim())
      .refine(isIpv4, { error: `must be an IPv4 address like 192.168.1.1 (${what})` }),
  );

const list = (value: string | undefined): string[] =>
  (value ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");

const slackIdList = (what: string, requiredHint?: string) => {
  const text =
    requiredHint === undefined
      ? z.string().optional()
      : z.string({ error: `is required: ${requiredHint}` });
  return z.preprocess(
    blankToUndefined,
    text
      .transform(list)
      .refine((ids) => requiredHint === undefined || ids.length > 0, {
        error: `must name at least one Slack user or user group (${what})`,
      })
      .refine((ids) => ids.every((id) => SLACK_ID.test(id)), {
        error: `must be a comma-separated list of Slack user IDs (U…/W…) or user-group IDs (S…) (${what})`,
      }),
  );
};

const EnvSchema = z.object({
  SLACK_BOT_TOKEN: prefixed("xoxb-", "the app's Bot User OAuth Token"),
  SLACK_SIGNING_SECRET: optionalString().refine(
    (value) => value === undefined || /^[0-9a-f]{32,}$/i.test(value),
    { error: "must be the app's Signing Secret (hexadecimal, from Basic Information)" },
  ),
  SLACK_APP_TOKEN: optionalPrefixed("xapp-", "an app-level token with connections:write"),
  SLACK_API_URL: z.preprocess(blankToUndefined, httpUrl("Slack's Web API base URL").optional()),
  SLACK_CHANNEL: optionalString().refine(
    (value) => value === undefined || /^[CGD][A-Z0-9]{2,}$/.test(value),
    { error: "must be a channel ID like C0123456789 (channel details → About)" },
  ),
  PORT: integer(3000, 0, 65535, "the HTTP port"),
  GITLAB_URL: z.preprocess(
    blankToUndefined,
    httpUrl("your GitLab's address, e.g. https://gitlab.example.com").default("https://gitlab.com"),
  ),
  GITLAB_TOKEN: optionalString(),
  GITLAB_PROJECT: z.preprocess(
    blankToUndefined,
    z
      .string({ error: "is required: the project ID (e.g. 42) or full path (e.g. infra/vms)" })
      .trim()
      .refine((value) => /^\d+$/.test(value) || /^[\w.-]+(\/[\w.-]+)+$/.test(value), {
        error: "must be a project ID (e.g. 42) or a full path (e.g. infra/vms)",
      }),
  ),
  GITLAB_REF: z.preprocess(blankToUndefined, z.string().trim().default("main")),
  GITLAB_PIPELINE_PARAMS: z.preprocess(
    blankToUndefined,
    z.enum(["inputs", "variables"], { error: "must be inputs or variables" }).default("inputs"),
  ),
  GITLAB_SIZING_PARAMS: z.preprocess(
    blankToUndefined,
    z.enum(["variables", "inputs"], { error: "must be variables or inputs" }).default("variables"),
  ),
  GITLAB_NUMBER_INPUTS: z.preprocess(
    blankToUndefined,
    z
      .string()
      .default("")
      .transform(list)
      .refine((items) => items.every((item) => NUMERIC_INPUTS.includes(item.trim())), {
        error: `must be a comma-separated list of inputs the pipeline declares as type: number, among ${NUMERIC_INPUTS.join(", ")}`,
      })
      .transform((items) => items.map((item) => item.trim())),
  ),
  GITLAB_REQUEST_ID_VARIABLE: boolean(true),
  GITLAB_PLAN_JOB: z.preprocess(blankToUndefined, z.string().trim().default("tf:plan")),
  GITLAB_APPLY_JOB: z.preprocess(blankToUndefined, z.string().trim().default("tf:apply")),
  GITLAB_CONFIGURE_JOB: z.preprocess(
    blankToUndefined,
    z.string().trim().default("ansible:configure"),
  ),
  GITLAB_DESTROY_JOB: z.preprocess(blankToUndefined, z.string().trim().default("tf:destroy")),
  GITLAB_WEBHOOK_SECRET: optionalString(),
  GITLAB_PLAN_JSON_ARTIFACT: optionalString(),
  GITLAB_LOG_MAX_BYTES: integer(
    4_194_304,
    65_536,
    1_073_741_824,
    "bytes of a job's log read at most",
  ),
  TF_STATE_NAME: z.preprocess(
    blankToUndefined,
    z
      .string()
      .trim()
      .default("general")
      .refine((value) => /^[\w.-]+$/.test(value), {
        error: "must be a state name of letters, digits, '.', '_' or '-'",
      }),
  ),
  TF_STATE_NAME_TEMPLATE: z.preprocess(
    blankToUndefined,
    z
      .string()
      .trim()
      .default("vm-{vm_name}")
      .superRefine((value, ctx) => {
        const problem = stateNameTemplateProblem(value);
        if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
      }),
  ),
  ...LEASE_ENV,
  POLL_INTERVAL_MS: integer(5000, 500, 3_600_000, "milliseconds between pipeline polls"),
  PLAN_TTL: z.preprocess(
    blankToUndefined,
    z
      .string()
      .default("24h")
      .transform((value) => value.trim().toLowerCase())
      .refine((value) => /^\d{1,6}(s|m|h|d)$/.test(value), {
        error: "must be a duration like 24h, 90m or 2d (how long a plan may wait for approval)",
      })
      .transform((value) => {
        const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[value.slice(-1)] ?? 1;
        return Number(value.slice(0, -1)) * unit;
      })
      .refine((ms) => ms >= 60_000, { error: "must be at least 1m" }),
  ),
  VAULT_ADDR: z.preprocess(blankToUndefined, httpUrl("Vault's address").optional()),
  VAULT_TOKEN: optionalString(),
  VAULT_ROLE_ID: optionalString(),
  VAULT_SECRET_ID: optionalString(),
  VAULT_K8S_ROLE: optionalString(),
  VAULT_K8S_TOKEN_FILE: z.preprocess(
    blankToUndefined,
    z.string().trim().default("/var/run/secrets/kubernetes.io/serviceaccount/token"),
  ),
  VAULT_KV_MOUNT: z.preprocess(blankToUndefined, z.string().trim().default("secret")),
  VAULT_PROXMOX_PATH: optionalString(),
  VAULT_GITLAB_PATH: optionalString(),
  PROXMOX_URL: z.preprocess(
    blankToUndefined,
    httpUrl("the Proxmox API, e.g. https://pve.lan:8006").optional(),
  ),
  PROXMOX_TOKEN: optionalString().refine(
    (value) => value === undefined || /^[^@\s]+@[^!\s]+![^=\s]+=\S+$/.test(value),
    { error: "must look like user@realm!tokenid=secret" },
  ),
  PROXMOX_CA_FILE: optionalString(),
  PROXMOX_INSECURE: boolean(false),
  VM_NODES: z.preprocess(
    blankToUndefined,
    z
      .string()
      .default("pve")
      .transform(list)
      .refine(
        (nodes) =>
          nodes.length > 0 &&
          nodes.length <= MAX_FORM_OPTIONS &&
          nodes.every((node) => /^[\w.-]{1,64}$/.test(node)),
        {
          error: `must be a comma-separated list of 1 to ${MAX_FORM_OPTIONS} Proxmox node names, e.g. pve1,pve2`,
        },
      ),
  ),
  VM_TEMPLATES: z.preprocess(
    blankToUndefined,
    z
      .string()
      .default("ubuntu=9000")
      .transform(list)
      .refine(
        (items) =>
          items.length > 0 &&
          items.length <= MAX_FORM_OPTIONS &&
          items.every((item) => /^[^=]{1,60}=\d{3,9}$/.test(item.trim())),
        {
          error: `must be a comma-separated list of 1 to ${MAX_FORM_OPTIONS} name=vmid, e.g. ubuntu-24.04=9000`,
        },
      )
      .transform((items) =>
        items.map((item) => {
          const [name = "", id = ""] = item.split("=");
          return { name: name.trim(), id: Number(id) };
        }),
      ),
  ),
  VM_DEFAULT_GATEWAY: ipv4("192.168.1.1", "the gateway the form suggests"),
  VM_DEFAULT_DNS: ipv4("192.168.1.1", "the DNS server the form suggests"),
  REQUESTERS: slackIdList("who may ask for a VM; leave unset for everyone"),
  APPROVERS: slackIdList(
    "who may approve plans",
    "the Slack user or user-group IDs allowed to approve plans, e.g. U0123ABCD,S0456EFGH",
  ),
  ADMINS: slackIdList(
    "who may unlock Terraform state",
    "the Slack user or user-group IDs allowed to unlock Terraform state, e.g. U0123ABCD",
  ),
  ALLOW_SELF_APPROVAL: boolean(false),
  NOTIFY_APPROVERS: boolean(true),
  VMBOT_DB: z.preprocess(blankToUndefined, z.string().trim().default("./data/vmbot.sqlite")),
  VMBOT_CRASH_AT: z.preprocess(
    blankToUndefined,
    z
      .string()
      .trim()
      .regex(/^[a-z_]+:(before|after)$/, { error: "must look like create_pipeline:after" })
      .optional(),
  ),
  LOG_LEVEL: z.preprocess(
    blankToUndefined,
    z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(", ")}` }).default("info"),
  ),
});

type RawEnv = Record<string, string | undefined>;

/**
 * Rules between variables. They run on the raw environment, beside the schema, so that one
 * start-up reports every problem rather than stopping at the first malformed value.
 */
function crossFieldProblems(raw: RawEnv): string[] {
  const has = (name: string) => (raw[name]?.trim() ?? "") !== "";
  const problems: string[] = [];
  if (!has("SLACK_APP_TOKEN") && !has("SLACK_SIGNING_SECRET")) {
    problems.push(
      "SLACK_SIGNING_SECRET is required in HTTP mode: set it to the app's Signing Secret, or set SLACK_APP_TOKEN for Socket Mode",
    );
  }
  if (!has("GITLAB_TOKEN") && !(has("VAULT_ADDR") && has("VAULT_GITLAB_PATH"))) {
    problems.push(
      "GITLAB_TOKEN is required: a token with the api scope (or set VAULT_ADDR and VAULT_GITLAB_PATH to read it from Vault)",
    );
  }
  if (has("VAULT_ADDR")) {
    const logins = [
      has("VAULT_TOKEN") ? "VAULT_TOKEN" : undefined,
      has("VAULT_ROLE_ID") || has("VAULT_SECRET_ID") ? "VAULT_ROLE_ID/VAULT_SECRET_ID" : undefined,
      has("VAULT_K8S_ROLE") ? "VAULT_K8S_ROLE" : undefined,
    ].filter((login) => login !== undefined);
    if (logins.length === 0) {
      problems.push(
        "VAULT_ADDR is set but no Vault login is: set VAULT_TOKEN, VAULT_ROLE_ID and VAULT_SECRET_ID, or VAULT_K8S_ROLE",
      );
    }
    if (logins.length > 1) {
      problems.push(
        `only one Vault login may be set, but ${logins.join(" and ")} are: keep the one vmbot should use`,
      );
    }
    if (has("VAULT_ROLE_ID") !== has("VAULT_SECRET_ID")) {
      problems.push(
        `${has("VAULT_ROLE_ID") ? "VAULT_SECRET_ID" : "VAULT_ROLE_ID"} is required with its pair: AppRole login needs both VAULT_ROLE_ID and VAULT_SECRET_ID`,
      );
    }
  } else if (has("VAULT_GITLAB_PATH")) {
    problems.push("VAULT_GITLAB_PATH needs VAULT_ADDR: the GitLab token cannot be read from Vault");
  }
  if (has("PROXMOX_URL") && !has("PROXMOX_TOKEN") && !has("VAULT_ADDR")) {
    problems.push(
      "PROXMOX_URL needs an API token: set PROXMOX_TOKEN, or VAULT_ADDR to read it from Vault (VAULT_PROXMOX_PATH, key api_token)",
    );
  }
  if (
    has("PROXMOX_CA_FILE") &&
    ["true", "1", "yes"].includes(raw.PROXMOX_INSECURE?.trim().toLowerCase() ?? "")
  ) {
    problems.push("PROXMOX_INSECURE cannot be true together with PROXMOX_CA_FILE: choose one");
  }
  return problems;
}

type Env = z.infer<typeof EnvSchema>;

export type VaultAuth =
  | { method: "token"; token: string }
  | { method: "approle"; roleId: string; secretId: string }
  | { method: "kubernetes"; role: string; jwtFile: string };

export interface VmTemplate {
  name: string;
  id: number;
}

export interface Config {
  slack: {
    botToken: string;
    signingSecret: string | undefined;
    appToken: string | undefined;
    apiUrl: string | undefined;
    channel: string | undefined;
  };
  port: number;
  gitlab: {
    url: string;
    token: string | undefined;
    project: string;
    ref: string;
    pipelineParams: "inputs" | "variables";
    /** How cores, memory, disk and DNS reach Terraform: TF_VAR_* variables, or inputs. */
    sizingParams: "variables" | "inputs";
    /** Inputs the pipeline declares `type: number`; every other input is sent as a string. */
    numberInputs: string[];
    /** Send VMBOT_REQUEST_ID with each pipeline, so a restart finds the one it created. */
    requestIdVariable: boolean;
    /** Job names; `destroy` is the manual job of `action=destroy` pipelines. */
    jobs: { plan: string; apply: string; configure: string; destroy: string };
    webhookSecret: string | undefined;
    /** Path of `terraform show -json` output in the plan job's artifacts, when the job keeps one. */
    planJsonArtifact: string | undefined;
    /** How much of a job's log is read at most; the rest stays in GitLab. */
    logMaxBytes: number;
  };
  tfStateName: string;
  /** Each VM's Terraform state name, with `{vm_name}` for the VM's name. */
  stateNameTemplate: string;
  pollIntervalMs: number;
  /** How long a plan may wait for approval (the plan artifact's lifetime on the platform). */
  planTtlMs: number;
  /** VMs' leases: their default length, maximum, reminders and what their end does. */
  lease: LeaseSettings;
  vault:
    | {
        addr: string;
        /** How vmbot logs in to Vault: exactly one of these. */
        auth: VaultAuth;
        kvMount: string;
        /**
         * Where the Proxmox token is, tried in order: VAULT_PROXMOX_PATH when set; else the
         * read-only token's secret, then the older default (the provisioning token's secret).
         */
        proxmoxPaths: string[];
        gitlabPath: string | undefined;
      }
    | undefined;
  proxmox: {
    url: string | undefined;
    token: string | undefined;
    caFile: string | undefined;
    insecure: boolean;
  };
  vm: {
    nodes: string[];
    templates: VmTemplate[];
    defaultGateway: string;
    defaultDns: string;
  };
  access: {
    /** Empty means everyone may ask. */
    requesters: string[];
    approvers: string[];
    admins: string[];
    allowSelfApproval: boolean;
    /** Mention the approvers in the request's thread when a plan awaits them. */
    notifyApprovers: boolean;
  };
  dbPath: string;
  logLevel: (typeof LOG_LEVELS)[number];
  /** For crash tests only: the process kills itself at this point (e.g. `create_pipeline:after`). */
  crashAt: string | undefined;
}

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

/** The one login the environment names; crossFieldProblems has made sure there is exactly one. */
function vaultAuth(env: Env): VaultAuth {
  if (env.VAULT_ROLE_ID !== undefined && env.VAULT_SECRET_ID !== undefined) {
    return { method: "approle", roleId: env.VAULT_ROLE_ID, secretId: env.VAULT_SECRET_ID };
  }
  if (env.VAULT_K8S_ROLE !== undefined) {
    return { method: "kubernetes", role: env.VAULT_K8S_ROLE, jwtFile: env.VAULT_K8S_TOKEN_FILE };
  }
  return { method: "token", token: env.VAULT_TOKEN ?? "" };
}

function toConfig(env: Env): Config {
  return {
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
      sizingParams: env.GITLAB_SIZING_PARAMS,
      numberInputs: env.GITLAB_NUMBER_INPUTS,
      requestIdVariable: env.GITLAB_REQUEST_ID_VARIABLE,
      jobs: {
        plan: env.GITLAB_PLAN_JOB,
        apply: env.GITLAB_APPLY_JOB,
        configure: env.GITLAB_CONFIGURE_JOB,
        destroy: env.GITLAB_DESTROY_JOB,
      },
      webhookSecret: env.GITLAB_WEBHOOK_SECRET,
      planJsonArtifact: env.GITLAB_PLAN_JSON_ARTIFACT,
      logMaxBytes: env.GITLAB_LOG_MAX_BYTES,
    },
    tfStateName: env.TF_STATE_NAME,
    stateNameTemplate: env.TF_STATE_NAME_TEMPLATE,
    pollIntervalMs: env.POLL_INTERVAL_MS,
    planTtlMs: env.PLAN_TTL,
    lease: {
      defaultMs: env.VM_LEASE_DEFAULT,
      maxMs: env.VM_LEASE_MAX,
      warnMs: env.VM_LEASE_WARN,
      onExpiry: env.VM_LEASE_ON_EXPIRY,
    },
    vault:
      env.VAULT_ADDR === undefined
        ? undefined
        : {
            addr: env.VAULT_ADDR,
            auth: vaultAuth(env),
            kvMount: env.VAULT_KV_MOUNT,
            proxmoxPaths:
              env.VAULT_PROXMOX_PATH === undefined
                ? [DEFAULT_PROXMOX_PATH, LEGACY_PROXMOX_PATH]
                : [env.VAULT_PROXMOX_PATH],
            gitlabPath: env.VAULT_GITLAB_PATH,
          },
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
      requesters: env.REQUESTERS,
      approvers: env.APPROVERS,
      admins: env.ADMINS,
      allowSelfApproval: env.ALLOW_SELF_APPROVAL,
      notifyApprovers: env.NOTIFY_APPROVERS,
    },
    dbPath: env.VMBOT_DB,
    logLevel: env.LOG_LEVEL,
    crashAt: env.VMBOT_CRASH_AT,
  };
}

/**
 * Validates the environment. Throws a ConfigError naming every problem; no value is ever
 * echoed back, so a secret pasted into the wrong variable cannot leak through the message.
 */
export function loadConfig(env: RawEnv = {}): Config {
  const parsed = EnvSchema.safeParse(env);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((issue) => {
        const name = issue.path.map(String).join(".") || "environment";
        const message = issue.message.startsWith("Invalid input") ? "is malformed" : issue.message;
        return `${name} ${message}`;
      });
  problems.push(...crossFieldProblems(env));
  const config = parsed.success ? toConfig(parsed.data) : undefined;
  if (config !== undefined) problems.push(...leaseProblems(config.lease));
  if (config === undefined || problems.length > 0) throw new ConfigError([...new Set(problems)]);
  return config;
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
  ].filter((value): value is string => value !== undefined && value.length > 0);
}
