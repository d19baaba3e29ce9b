/** What the fake GitLab starts with: the VM pipeline, its project and user, and its constants. */
import { randomUUID } from "node:crypto";
import {
  type FakeProjectOptions,
  type FakeUser,
  type InputSpec,
  type JobStatus,
  type PipelineContext,
  type PipelineDefinition,
  type Role,
  type TerraformLockInfo,
} from "./types.js";

/** The VM platform's pipeline (SPEC §1): the apply path, or the destroy path for `action: destroy`. */
export const DEFAULT_PIPELINE: PipelineDefinition = {
  stages: ["validate", "plan", "apply", "configure", "destroy"],
  jobs: [
    { name: "tf:validate", stage: "validate", log: "terraform-validate" },
    { name: "tf:plan", stage: "plan", rules: (c) => !isDestroy(c), log: "terraform-plan" },
    {
      name: "tf:apply",
      stage: "apply",
      when: "manual",
      rules: (c) => !isDestroy(c),
      log: "terraform-apply",
      needs: ["tf:plan"],
    },
    { name: "ansible:configure", stage: "configure", rules: (c) => !isDestroy(c), log: "ansible" },
    { name: "notify:destroy", stage: "plan", rules: isDestroy },
    // As examples/gitlab/.gitlab-ci.yml: a stage of its own, after notify:destroy; a failed
    // notify leaves it skipped, never playable.
    {
      name: "tf:destroy",
      stage: "destroy",
      when: "manual",
      rules: isDestroy,
      log: "terraform-destroy",
      needs: ["notify:destroy"],
    },
  ],
};

function isDestroy(context: PipelineContext): boolean {
  return context.inputs.action === "destroy" || context.variables.ACTION === "destroy";
}

/**
 * The VM pipeline's `spec:inputs`, as `examples/gitlab/.gitlab-ci.yml` declares them (SPEC §1):
 * untyped, so each is a string and GitLab refuses a number for it.
 */
export const VM_PIPELINE_INPUTS: Readonly<Record<string, InputSpec>> = {
  action: { default: "apply", options: ["apply", "destroy"] },
  vm_name: {},
  vm_ip: {},
  vm_gateway: { default: "192.168.1.1" },
  template_vm_id: { default: "9000" },
  proxmox_node: { default: "pve" },
  vm_id: { default: "0" },
  vlan_id: { default: "0" },
};

export const DEFAULT_PROJECT: FakeProjectOptions = {
  id: 42,
  path: "platform/vm-provisioning",
  defaultBranch: "main",
  inputs: { ...VM_PIPELINE_INPUTS },
};

export const DEFAULT_USER: FakeUser = { id: 7, username: "vmbot", name: "vmbot" };

/** The Terraform the VM pipeline's jobs run (`hashicorp/terraform:1.9`). */
const TERRAFORM_VERSION = "1.9.8";

/**
 * The lock info Terraform's http backend POSTs to a state's lock address, for an apply run in a
 * CI job; `overrides` replaces any field.
 */
export function terraformLockInfo(overrides: Partial<TerraformLockInfo> = {}): TerraformLockInfo {
  return {
    ID: randomUUID(),
    Operation: "OperationTypeApply",
    Info: "",
    Who: `root@runner-${RUNNER.id}-project-concurrent-0`,
    Version: TERRAFORM_VERSION,
    Created: new Date().toISOString(),
    Path: "",
    ...overrides,
  };
}

/** The file `terraform init` leaves in a new state: no resources, serial 1. */
export function emptyTerraformState(): string {
  return `${JSON.stringify(
    {
      version: 4,
      terraform_version: TERRAFORM_VERSION,
      serial: 1,
      lineage: randomUUID(),
      outputs: {},
      resources: [],
      check_results: null,
    },
    null,
    2,
  )}\n`;
}

/** The `serial` of a state file, when it is JSON and has one. */
export function serialOf(content: string): number | null {
  try {
    const parsed: unknown = JSON.parse(content);
    const serial =
      typeof parsed === "object" && parsed !== null
        ? (parsed as Record<string, unknown>).serial
        : undefined;
    return typeof serial === "number" && Number.isInteger(serial) ? serial : null;
  } catch {
    return null;
  }
}

/** Stands for the binary plan file `terraform plan -out=tfplan` writes. */
export const TFPLAN_PLACEHOLDER = "PK\u0003\u0004 tfplan: a Terraform plan file (zip)\n";

/** The instance runner every job runs on. */
export const RUNNER = { id: 12, description: "pve-runner-01" };
export const GITLAB_VERSION = "18.2.1";

/** Whether a GitLab version such as `17.9.3-ee` is `major.minor` or later. */
export function versionAtLeast(version: string, major: number, minor: number): boolean {
  const [, a = "0", b = "0"] = /^(\d+)\.(\d+)/.exec(version) ?? [];
  return Number(a) > major || (Number(a) === major && Number(b) >= minor);
}

// IDs start in different ranges so a test notices when an iid or job ID is used as a pipeline ID.
export const FIRST_PIPELINE_ID = 1001;
export const FIRST_JOB_ID = 5001;
export const FIRST_TERRAFORM_STATE_ID = 301;

export const API_PREFIX = "/api/v4";
export const DEFAULT_PER_PAGE = 20;
export const MAX_PER_PAGE = 100;

export const TERMINAL: ReadonlySet<JobStatus> = new Set([
  "success",
  "failed",
  "canceled",
  "skipped",
]);
export const ALL_STATUSES: readonly JobStatus[] = [
  "created",
  "waiting_for_resource",
  "preparing",
  "pending",
  "running",
  "success",
  "failed",
  "canceled",
  "skipped",
  "manual",
  "scheduled",
];

export const ROLE_LEVEL: Record<Role, number> = {
  guest: 10,
  reporter: 20,
  developer: 30,
  maintainer: 40,
  owner: 50,
};
