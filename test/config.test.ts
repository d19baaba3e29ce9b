import { describe, expect, it } from "vitest";
import { ConfigError, configSecrets, loadConfig } from "../src/config.js";
import { TEST_SECRETS } from "./support/secrets.js";

const minimal = {
  SLACK_BOT_TOKEN: TEST_SECRETS.botToken,
  SLACK_SIGNING_SECRET: TEST_SECRETS.signingSecret,
  GITLAB_TOKEN: TEST_SECRETS.gitlabToken,
  GITLAB_PROJECT: "infra/vms",
  APPROVERS: "U0APPROVER",
  ADMINS: "U0ADMIN",
};

function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("the configuration was accepted");
}

describe("loadConfig", () => {
  it("applies SPEC's defaults to a minimal HTTP-mode environment", () => {
    const config = loadConfig(minimal);
    expect(config.port).toBe(3000);
    expect(config.gitlab).toMatchObject({
      url: "https://gitlab.com",
      project: "infra/vms",
      ref: "main",
      pipelineParams: "inputs",
      jobs: {
        plan: "tf:plan",
        apply: "tf:apply",
        configure: "ansible:configure",
        destroy: "tf:destroy",
      },
    });
    expect(config.tfStateName).toBe("general");
    expect(config.stateNameTemplate).toBe("vm-{vm_name}");
    expect(config.pollIntervalMs).toBe(5000);
    expect(config.vm).toEqual({
      nodes: ["pve"],
      templates: [{ name: "ubuntu", id: 9000 }],
      defaultGateway: "192.168.1.1",
      defaultDns: "192.168.1.1",
    });
    expect(config.access).toEqual({
      requesters: [],
      approvers: ["U0APPROVER"],
      admins: ["U0ADMIN"],
      allowSelfApproval: false,
      notifyApprovers: true,
    });
    expect(config.vault).toBeUndefined();
    expect(config.proxmox.insecure).toBe(false);
    expect(config.dbPath).toBe("./data/vmbot.sqlite");
    expect(config.logLevel).toBe("info");
  });

  it("reads lists, numbers and switches", () => {
    const config = loadConfig({
      ...minimal,
      PORT: "8080",
      VM_NODES: "pve1, pve2 ,pve3",
      VM_TEMPLATES: "ubuntu-24.04=9000,debian-12=9001",
      REQUESTERS: "U01,S02",
      ALLOW_SELF_APPROVAL: "true",
      GITLAB_PIPELINE_PARAMS: "variables",
      SLACK_API_URL: "http://127.0.0.1:9999/api",
    });
    expect(config.port).toBe(8080);
    expect(config.vm.nodes).toEqual(["pve1", "pve2", "pve3"]);
    expect(config.vm.templates).toEqual([
      { name: "ubuntu-24.04", id: 9000 },
      { name: "debian-12", id: 9001 },
    ]);
    expect(config.access.requesters).toEqual(["U01", "S02"]);
    expect(config.access.allowSelfApproval).toBe(true);
    expect(config.gitlab.pipelineParams).toBe("variables");
    expect(config.slack.apiUrl).toBe("http://127.0.0.1:9999/api/");
  });

  it("chooses Socket Mode without a signing secret when an app token is set", () => {
    const config = loadConfig({
      ...minimal,
      SLACK_SIGNING_SECRET: undefined,
      SLACK_APP_TOKEN: TEST_SECRETS.appToken,
    });
    expect(config.slack.appToken).toBe(TEST_SECRETS.appToken);
  });

  it("names every problem at once, each with what is expected", () => {
    const problems = problemsOf({
      SLACK_BOT_TOKEN: "xoxp-user-token",
      GITLAB_PROJECT: "",
      PORT: "http",
      VM_TEMPLATES: "ubuntu",
      APPROVERS: "alice",
      LOG_LEVEL: "loud",
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        "SLACK_BOT_TOKEN must start with xoxb- (the app's Bot User OAuth Token)",
        "GITLAB_PROJECT is required: the project ID (e.g. 42) or full path (e.g. infra/vms)",
        "PORT must be a whole number (the HTTP port)",
        "VM_TEMPLATES must be a comma-separated list of 1 to 100 name=vmid, e.g. ubuntu-24.04=9000",
        "APPROVERS must be a comma-separated list of Slack user IDs (U…/W…) or user-group IDs (S…) (who may approve plans)",
        "ADMINS is required: the Slack user or user-group IDs allowed to unlock Terraform state, e.g. U0123ABCD (or a policy file in VMBOT_POLICY)",
        "LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent",
        "SLACK_SIGNING_SECRET is required in HTTP mode: set it to the app's Signing Secret, or set SLACK_APP_TOKEN for Socket Mode",
        "GITLAB_TOKEN is required: a token with the api scope (or set VAULT_ADDR and VAULT_GITLAB_PATH to read it from Vault)",
      ]),
    );
  });

  it("needs neither APPROVERS nor ADMINS when a policy file decides, and both without one", () => {
    const withoutLists = { ...minimal, APPROVERS: undefined, ADMINS: undefined };
    const config = loadConfig({ ...withoutLists, VMBOT_POLICY: "/etc/vmbot/policy.yaml" });
    expect(config.policyPath).toBe("/etc/vmbot/policy.yaml");
    expect(config.access).toMatchObject({ approvers: [], admins: [] });
    expect(problemsOf({ ...withoutLists, VMBOT_POLICY: "  " })).toEqual([
      "APPROVERS is required: the Slack user or user-group IDs allowed to approve plans, e.g. U0123ABCD,S0456EFGH (or a policy file in VMBOT_POLICY)",
      "ADMINS is required: the Slack user or user-group IDs allowed to unlock Terraform state, e.g. U0123ABCD (or a policy file in VMBOT_POLICY)",
    ]);
    // Set, they are still checked.
    expect(
      problemsOf({ ...withoutLists, VMBOT_POLICY: "/etc/vmbot/policy.yaml", ADMINS: "alice" }),
    ).toEqual([
      "ADMINS must be a comma-separated list of Slack user IDs (U…/W…) or user-group IDs (S…) (who may unlock Terraform state)",
    ]);
  });

  it("says which variable is missing when nothing is set", () => {
    const problems = problemsOf({});
    expect(problems.map((p) => p.split(" ")[0])).toEqual(
      expect.arrayContaining([
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "GITLAB_TOKEN",
        "GITLAB_PROJECT",
        "APPROVERS",
        "ADMINS",
      ]),
    );
  });

  it("never echoes a value, so a secret in the wrong variable does not leak", () => {
    let message = "";
    try {
      loadConfig({
        ...minimal,
        SLACK_BOT_TOKEN: TEST_SECRETS.appToken,
        SLACK_SIGNING_SECRET: TEST_SECRETS.gitlabToken,
        PROXMOX_TOKEN: TEST_SECRETS.botToken,
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain("SLACK_BOT_TOKEN must start with xoxb-");
    expect(message).toContain("PROXMOX_TOKEN must look like user@realm!tokenid=secret");
    for (const secret of Object.values(TEST_SECRETS)) expect(message).not.toContain(secret);
  });

  it("requires a Vault login method when Vault is enabled", () => {
    expect(problemsOf({ ...minimal, VAULT_ADDR: "https://vault.lan:8200" })).toContain(
      "VAULT_ADDR is set but no Vault login is: set VAULT_TOKEN, VAULT_ROLE_ID and VAULT_SECRET_ID, or VAULT_K8S_ROLE",
    );
    expect(
      problemsOf({ ...minimal, VAULT_ADDR: "https://vault.lan:8200", VAULT_ROLE_ID: "role" }),
    ).toContain(
      "VAULT_SECRET_ID is required with its pair: AppRole login needs both VAULT_ROLE_ID and VAULT_SECRET_ID",
    );
  });

  it("reads the Proxmox token only where VAULT_PROXMOX_PATH says, when it is set", () => {
    const config = loadConfig({
      ...minimal,
      VAULT_ADDR: "https://vault.lan:8200/",
      VAULT_TOKEN: "hvs.TestVaultToken0000000001",
      VAULT_PROXMOX_PATH: "infra/pve-auditor",
    });
    expect(config.vault?.proxmoxPaths).toEqual(["infra/pve-auditor"]);
  });

  it("reads the GitLab token from Vault instead of GITLAB_TOKEN when VAULT_GITLAB_PATH is set", () => {
    const config = loadConfig({
      ...minimal,
      GITLAB_TOKEN: undefined,
      VAULT_ADDR: "https://vault.lan:8200/",
      VAULT_TOKEN: "hvs.TestVaultToken0000000001",
      VAULT_GITLAB_PATH: "gitlab",
    });
    expect(config.gitlab.token).toBeUndefined();
    expect(config.vault).toEqual({
      addr: "https://vault.lan:8200",
      auth: { method: "token", token: "hvs.TestVaultToken0000000001" },
      kvMount: "secret",
      // The read-only token's secret first; the older default still works.
      proxmoxPaths: ["proxmox-readonly", "proxmox"],
      gitlabPath: "gitlab",
    });
    // Without Vault, VAULT_GITLAB_PATH cannot stand in for the token.
    expect(
      problemsOf({ ...minimal, GITLAB_TOKEN: undefined, VAULT_GITLAB_PATH: "gitlab" }),
    ).toEqual([
      "GITLAB_TOKEN is required: a token with the api scope (or set VAULT_ADDR and VAULT_GITLAB_PATH to read it from Vault)",
      "VAULT_GITLAB_PATH needs VAULT_ADDR: the GitLab token cannot be read from Vault",
    ]);
  });

  it("takes exactly one Vault login: AppRole, Kubernetes or a token", () => {
    const vault = { ...minimal, VAULT_ADDR: "http://127.0.0.1:8200" };
    expect(
      loadConfig({ ...vault, VAULT_ROLE_ID: "role-id", VAULT_SECRET_ID: "secret-id-value" }).vault
        ?.auth,
    ).toEqual({ method: "approle", roleId: "role-id", secretId: "secret-id-value" });
    expect(loadConfig({ ...vault, VAULT_K8S_ROLE: "vmbot" }).vault?.auth).toEqual({
      method: "kubernetes",
      role: "vmbot",
      jwtFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
    });
    expect(
      loadConfig({ ...vault, VAULT_K8S_ROLE: "vmbot", VAULT_K8S_TOKEN_FILE: "/run/sa/token" }).vault
        ?.auth,
    ).toMatchObject({ jwtFile: "/run/sa/token" });
    expect(
      problemsOf({
        ...vault,
        VAULT_TOKEN: "hvs.TestVaultToken0000000001",
        VAULT_K8S_ROLE: "vmbot",
      }),
    ).toEqual([
      "only one Vault login may be set, but VAULT_TOKEN and VAULT_K8S_ROLE are: keep the one vmbot should use",
    ]);
  });

  it("needs a Proxmox token, from the environment or Vault, when PROXMOX_URL is set", () => {
    expect(problemsOf({ ...minimal, PROXMOX_URL: "https://pve.lan:8006" })).toEqual([
      "PROXMOX_URL needs an API token: set PROXMOX_TOKEN, or VAULT_ADDR to read it from Vault (VAULT_PROXMOX_PATH, key api_token)",
    ]);
    const config = loadConfig({
      ...minimal,
      PROXMOX_URL: "https://pve.lan:8006/",
      VAULT_ADDR: "http://127.0.0.1:8200",
      VAULT_TOKEN: "hvs.TestVaultToken0000000001",
    });
    expect(config.proxmox.url).toBe("https://pve.lan:8006");
    expect(config.vault?.proxmoxPaths).toEqual(["proxmox-readonly", "proxmox"]);
  });

  it("refuses a GitLab address with credentials in it, which would be shown to people", () => {
    expect(
      problemsOf({ ...minimal, GITLAB_URL: "https://bot:hunter2@gitlab.example.com" }),
    ).toEqual([
      "GITLAB_URL must not carry a user name or password: vmbot shows this address to people",
    ]);
  });

  it("reads a PostgreSQL connection string in VMBOT_DB, and keeps its password out of messages", () => {
    const url = "postgres://vmbot:pg-Secret-0001@db.example:5432/vmbot?sslmode=verify-full";
    const config = loadConfig({ ...minimal, VMBOT_DB: url });
    expect(config.dbPath).toBe(url);
    expect(configSecrets(config)).toContain("pg-Secret-0001");
    const problems = problemsOf({
      ...minimal,
      VMBOT_DB: "postgresql://vmbot:pg-Secret-0001@db.example?sslmode=sometimes&pool_max=0",
    });
    expect(problems).toEqual([
      "VMBOT_DB must be a SQLite file or a PostgreSQL connection string; this one (postgresql://vmbot:***@db.example?sslmode=sometimes&pool_max=0) names no database after the host; has sslmode=sometimes; PostgreSQL knows disable, allow, prefer, require, verify-ca, verify-full; has pool_max=0; it takes a whole number 1-100",
    ]);
  });

  it("refuses more nodes or templates than a Slack menu can offer", () => {
    const many = Array.from({ length: 101 }, (_, i) => `pve${i}`).join(",");
    expect(problemsOf({ ...minimal, VM_NODES: many })).toEqual([
      "VM_NODES must be a comma-separated list of 1 to 100 Proxmox node names, e.g. pve1,pve2",
    ]);
    expect(problemsOf({ ...minimal, VM_NODES: "x".repeat(65) })).toHaveLength(1);
  });

  it("rejects a channel name where a channel ID belongs", () => {
    expect(problemsOf({ ...minimal, SLACK_CHANNEL: "#vms" })).toEqual([
      "SLACK_CHANNEL must be a channel ID like C0123456789 (channel details → About)",
    ]);
  });

  it("lists every configured secret for redaction", () => {
    const config = loadConfig({ ...minimal, GITLAB_WEBHOOK_SECRET: TEST_SECRETS.webhookSecret });
    expect(configSecrets(config).sort()).toEqual(
      [
        TEST_SECRETS.botToken,
        TEST_SECRETS.signingSecret,
        TEST_SECRETS.gitlabToken,
        TEST_SECRETS.webhookSecret,
      ].sort(),
    );
  });

  it("takes a state name template with {vm_name}, or a fixed name, and names what is wrong with others", () => {
    expect(
      loadConfig({ ...minimal, TF_STATE_NAME_TEMPLATE: "tf-{vm_name}.vm" }).stateNameTemplate,
    ).toBe("tf-{vm_name}.vm");
    expect(loadConfig({ ...minimal, TF_STATE_NAME_TEMPLATE: "general" }).stateNameTemplate).toBe(
      "general",
    );
    expect(problemsOf({ ...minimal, TF_STATE_NAME_TEMPLATE: "vm-{name}" })).toEqual([
      "TF_STATE_NAME_TEMPLATE has {name}, and the only placeholder is {vm_name}",
    ]);
    expect(problemsOf({ ...minimal, TF_STATE_NAME_TEMPLATE: "vms/{vm_name}" })).toEqual([
      "TF_STATE_NAME_TEMPLATE must make state names of letters, digits, '.', '_' or '-' (with {vm_name} for the VM's name)",
    ]);
    expect(problemsOf({ ...minimal, TF_STATE_NAME_TEMPLATE: "vm-{vm_name" })).toEqual([
      "TF_STATE_NAME_TEMPLATE has a { or } that opens or closes no {vm_name}",
    ]);
    expect(
      problemsOf({ ...minimal, TF_STATE_NAME_TEMPLATE: `${"x".repeat(200)}-{vm_name}` }),
    ).toEqual(["TF_STATE_NAME_TEMPLATE makes state names longer than GitLab's 255 characters"]);
  });
});
