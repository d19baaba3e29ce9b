/** Terraform jobs' logs: validate, plan, apply and destroy, around Terraform's own output. */
import { type JobOutcome, type RunnerContext, runnerTrace, type ScriptStep } from "./runner.js";

const TERRAFORM_IMAGE = "hashicorp/terraform:1.9";

const TERRAFORM_INIT = [
  "Initializing the backend...",
  "",
  'Successfully configured the backend "http"! Terraform will automatically',
  "use this backend unless the backend configuration changes.",
  "Initializing provider plugins...",
  '- Finding bpg/proxmox versions matching "~> 0.66"...',
  "- Installing bpg/proxmox v0.66.3...",
  "- Installed bpg/proxmox v0.66.3 (self-signed, key ID F0582AD6AE97C188)",
  "",
  "Terraform has been successfully initialized!",
].join("\n");

const INIT_STEP: ScriptStep = {
  command: 'terraform init -input=false -backend-config="address=$TF_ADDRESS"',
  output: TERRAFORM_INIT,
};

/** Exit code Terraform gives for its output: 1 when it printed an error diagnostic. */
export function terraformExitCode(output: string): number {
  return /^(?:│ )?Error: /m.test(output.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "")) ? 1 : 0; // eslint-disable-line no-control-regex
}

function terraformOutcome(output: string, options: { outcome?: JobOutcome }): JobOutcome {
  return options.outcome ?? (terraformExitCode(output) === 0 ? "success" : "failed");
}

export interface TraceOptions extends RunnerContext {
  /** Default: worked out from the output (an error diagnostic, a failed Ansible recap). */
  outcome?: JobOutcome;
}

export function validateTrace(
  output = "Success! The configuration is valid.",
  options: TraceOptions = {},
): string {
  return runnerTrace({
    ...options,
    image: TERRAFORM_IMAGE,
    steps: [INIT_STEP, { command: "terraform validate -no-color", output }],
    outcome: terraformOutcome(output, options),
  });
}

/** The plan job's log: `terraform init`, then `terraform plan -no-color -out=tfplan` printing `planText`. */
export function planTrace(planText: string, options: TraceOptions = {}): string {
  return runnerTrace({
    artifacts: ["tfplan"],
    ...options,
    image: TERRAFORM_IMAGE,
    steps: [
      INIT_STEP,
      { command: "terraform plan -no-color -input=false -out=tfplan", output: planText },
    ],
    outcome: terraformOutcome(planText, options),
  });
}

/** The apply job's log: `terraform apply tfplan` printing `applyText`, then the `vm_ip.txt` artifact. */
export function applyTrace(applyText: string, options: TraceOptions = {}): string {
  return runnerTrace({
    artifacts: ["vm_ip.txt"],
    ...options,
    image: TERRAFORM_IMAGE,
    steps: [
      INIT_STEP,
      { command: "terraform apply -no-color -input=false tfplan", output: applyText },
      { command: "terraform output -raw vm_ip > vm_ip.txt", output: "" },
    ],
    outcome: terraformOutcome(applyText, options),
  });
}

export function destroyTrace(destroyText: string, options: TraceOptions = {}): string {
  return runnerTrace({
    ...options,
    image: TERRAFORM_IMAGE,
    steps: [
      INIT_STEP,
      { command: "terraform destroy -no-color -input=false -auto-approve", output: destroyText },
    ],
    outcome: terraformOutcome(destroyText, options),
  });
}

/** What the plan, apply and destroy jobs print for one VM, used when a test gives no output. */
export interface VmParams {
  name?: string;
  /** With prefix, e.g. `192.168.1.50/24`. */
  ip?: string;
  gateway?: string;
  node?: string;
  templateId?: number;
  cores?: number;
  memoryMb?: number;
  diskGb?: number;
  dns?: string;
}
