import { z } from "zod";
import { postgresUrlProblem } from "../store/postgres/url.js";
import { LEASE_ENV } from "../vm/lease.js";
import { LEADER_ENV } from "./leader-ttl.js";
import { stateNameTemplateProblem } from "../vm/state-name.js";
import {
  blankToUndefined,
  boolean,
  httpUrl,
  integer,
  ipv4,
  list,
  LOG_LEVELS,
  MAX_FORM_OPTIONS,
  NUMERIC_INPUTS,
  optionalPrefixed,
  optionalString,
  prefixed,
  slackIdList,
} from "./fields.js";

/** `VMBOT_MODE`: the bot for Slack, the sandbox, or (auto) the sandbox when no Slack credential is set. */
export const MODES = ["auto", "slack", "sandbox"] as const;

/**
 * Every variable vmbot reads (SPEC section 6), each with its default and the words that say what
 * is wrong with it. Nothing else in the bot reads `process.env`.
 */
export const EnvSchema = z.object({
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
  ...LEADER_ENV,
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
  /** Required unless VMBOT_POLICY names a policy file, whose groups decide (crossFieldProblems). */
  APPROVERS: slackIdList("who may approve plans"),
  ADMINS: slackIdList("who may unlock Terraform state"),
  ALLOW_SELF_APPROVAL: boolean(false),
  NOTIFY_APPROVERS: boolean(true),
  VMBOT_POLICY: optionalString(),
  /** A SQLite file, or a postgres:// URL (checked here; the bot does not use PostgreSQL yet). */
  VMBOT_DB: z
    .preprocess(blankToUndefined, z.string().trim().default("./data/vmbot.sqlite"))
    .superRefine((value, context) => {
      const problem = postgresUrlProblem(value);
      if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
    }),
  /** Read on its own by chooseMode, before the rest: the sandbox needs none of the others. */
  VMBOT_MODE: z.preprocess(
    blankToUndefined,
    z
      .string()
      .trim()
      .toLowerCase()
      .pipe(z.enum(MODES, { error: "must be auto, slack or sandbox" }))
      .default("auto"),
  ),
  LOG_LEVEL: z.preprocess(
    blankToUndefined,
    z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(", ")}` }).default("info"),
  ),
});

export type RawEnv = Readonly<Record<string, string | undefined>>;

/**
 * Rules between variables. They run on the raw environment, beside the schema, so that one
 * start-up reports every problem rather than stopping at the first malformed value.
 */
export function crossFieldProblems(raw: RawEnv): string[] {
  const has = (name: string) => (raw[name]?.trim() ?? "") !== "";
  const problems: string[] = [];
  // With a policy file, its groups decide who approves and who is an admin.
  if (!has("VMBOT_POLICY") && !has("APPROVERS")) {
    problems.push(
      "APPROVERS is required: the Slack user or user-group IDs allowed to approve plans, e.g. U0123ABCD,S0456EFGH (or a policy file in VMBOT_POLICY)",
    );
  }
  if (!has("VMBOT_POLICY") && !has("ADMINS")) {
    problems.push(
      "ADMINS is required: the Slack user or user-group IDs allowed to unlock Terraform state, e.g. U0123ABCD (or a policy file in VMBOT_POLICY)",
    );
  }
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

export type Env = z.output<typeof EnvSchema>;
