/**
 * GitLab job logs as a GitLab Runner (Docker executor) writes them, around a job's own output.
 *
 * A raw log, as `GET /projects/:id/jobs/:job_id/trace` returns it, is the runner's preamble
 * (`Running with gitlab-runner …`, `  on <runner> …`), then one collapsible section per stage of
 * the job (`prepare_executor`, `prepare_script`, `get_sources`, `step_script`,
 * `upload_artifacts_on_success`, `cleanup_file_variables`), then `Job succeeded` or
 * `ERROR: Job failed: exit code N`. Sections are delimited by GitLab's markers,
 * `section_start:<unix>:<name>\r\e[0K` and `section_end:<unix>:<name>\r\e[0K`; the runner's own
 * lines carry its ANSI colours (`\e[36;1m` section titles, `\e[32;1m` commands and progress,
 * `\e[31;1m` errors, `\e[0;m` reset). The shape follows the logs in
 * `../shared/fixtures/gitlab-trace/` and what current runners print.
 *
 * Everything here is pure: the program output (a Terraform plan, an `ansible-playbook` run) is
 * passed in, typically read from the shared fixtures by the caller; nothing reads files.
 */

const ESC = "\x1b";
const RESET = `${ESC}[0;m`;
const CLEAR = `${ESC}[0K`;
const TITLE = `${ESC}[36;1m`;
const GREEN = `${ESC}[32;1m`;
const RED = `${ESC}[31;1m`;

const RUNNER_VERSION = "18.2.0";
const RUNNER_REVISION = "6bc7a2b1";
const RUNNER_NAME = "pve-runner-01";
const RUNNER_TOKEN = "t3_Vm8Kq2xR";
const RUNNER_SYSTEM_ID = "s_4f2a91c07d3e";

export type JobOutcome = "success" | "failed";

/** One script line and what it printed. */
export interface ScriptStep {
  command: string;
  /** The command's output, as the program wrote it (ANSI colours kept). May be empty. */
  output: string;
}

/** Where and when the job ran; every field has a plausible default. */
export interface RunnerContext {
  /** When the runner picked the job up. Default 2026-01-05T09:00:00Z. */
  startedAt?: Date;
  /** When the job ended; never before the sections it contains. Default: `startedAt` + 20 s. */
  finishedAt?: Date;
  jobId?: number;
  projectId?: number;
  /** `group/project`, for the build directory. */
  projectPath?: string;
  ref?: string;
  sha?: string;
  /** Artifact paths the job uploads when it succeeds. */
  artifacts?: readonly string[];
}

export interface RunnerTraceOptions extends RunnerContext {
  image: string;
  steps: readonly ScriptStep[];
  outcome?: JobOutcome;
  /** The script's exit code when the job failed. Default 1. */
  exitCode?: number;
}

const DEFAULT_START = new Date("2026-01-05T09:00:00Z");

function unix(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

/** A stable fake digest for an image name, so logs do not change between runs. */
function digestOf(image: string): string {
  let hash = 0x811c9dc5;
  let hex = "";
  for (let round = 0; round < 8; round++) {
    for (const char of `${image}#${round}`) {
      hash ^= char.charCodeAt(0);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    hex += hash.toString(16).padStart(8, "0");
  }
  return hex;
}

/** Ensures text ends with a newline (an empty text stays empty). */
function asLines(text: string): string {
  return text === "" || text.endsWith("\n") ? text : `${text}\n`;
}

function runnerLine(text: string): string {
  return `${CLEAR}${text}${RESET}\n`;
}

/**
 * A complete job log: the runner's preamble, a section per stage, the script's commands (`$ …`)
 * each followed by its output, and the runner's verdict.
 */
export function runnerTrace(options: RunnerTraceOptions): string {
  const start = options.startedAt ?? DEFAULT_START;
  const end = options.finishedAt ?? new Date(start.getTime() + 20_000);
  const outcome = options.outcome ?? "success";
  const projectPath = options.projectPath ?? "platform/vm-provisioning";
  const projectId = options.projectId ?? 42;
  const sha = (options.sha ?? "4c1e0a7d9f2b3e6a8c5d7f9e1b2a3c4d5e6f7a8b").slice(0, 8);
  const ref = options.ref ?? "main";
  const digest = digestOf(options.image);
  const [imageName] = options.image.split(":");

  // Section times: a few seconds apart from the start, the closing ones at the end.
  const t0 = unix(start);
  const tEnd = Math.max(unix(end), t0 + 4);
  const section = (name: string, title: string, at: number): string =>
    `section_start:${at}:${name}\r${CLEAR}${CLEAR}${TITLE}${title}${RESET}\n`;
  const close = (name: string, at: number): string => `section_end:${at}:${name}\r${CLEAR}`;

  let log = runnerLine(`Running with gitlab-runner ${RUNNER_VERSION} (${RUNNER_REVISION})`);
  log += runnerLine(`  on ${RUNNER_NAME} ${RUNNER_TOKEN}, system ID: ${RUNNER_SYSTEM_ID}`);

  log += section("prepare_executor", 'Preparing the "docker" executor', t0);
  log += runnerLine(`Using Docker executor with image ${options.image} ...`);
  log += runnerLine(`Pulling docker image ${options.image} ...`);
  log += runnerLine(
    `Using docker image sha256:${digest} for ${options.image} with digest ${imageName ?? options.image}@sha256:${digest} ...`,
  );
  log += close("prepare_executor", t0 + 1);

  const runnerHost = `runner-${RUNNER_TOKEN.slice(3, 11).toLowerCase()}-project-${projectId}-concurrent-0`;
  log += section("prepare_script", "Preparing environment", t0 + 1);
  log += `Running on ${runnerHost} via ${RUNNER_NAME}...\n`;
  log += close("prepare_script", t0 + 2);

  log += section("get_sources", "Getting source from Git repository", t0 + 2);
  log += `${GREEN}Fetching changes with git depth set to 20...${RESET}\n`;
  log += `Initialized empty Git repository in /builds/${projectPath}/.git/\n`;
  log += `${GREEN}Created fresh repository.${RESET}\n`;
  log += `${GREEN}Checking out ${sha} as detached HEAD (ref is ${ref})...${RESET}\n\n`;
  log += `${GREEN}Skipping Git submodules setup${RESET}\n`;
  log += close("get_sources", t0 + 3);

  log += section("step_script", 'Executing "step_script" stage of the job script', t0 + 3);
  log += runnerLine(
    `Using docker image sha256:${digest} for ${options.image} with digest ${imageName ?? options.image}@sha256:${digest} ...`,
  );
  for (const step of options.steps) {
    log += `${GREEN}$ ${step.command}${RESET}\n`;
    log += asLines(step.output);
  }
  log += close("step_script", tEnd - 1);

  const artifacts = options.artifacts ?? [];
  if (outcome === "success" && artifacts.length > 0) {
    log += section(
      "upload_artifacts_on_success",
      "Uploading artifacts for successful job",
      tEnd - 1,
    );
    log += `${GREEN}Uploading artifacts...${RESET}\n`;
    for (const path of artifacts) {
      log += `${path}: found 1 matching artifact files and directories${RESET}\n`;
    }
    log += `${GREEN}Uploading artifacts as "archive" to coordinator... 201 Created${RESET}  id=${options.jobId ?? 5001} responseStatus=201 Created token=glcbt-64\n`;
    log += close("upload_artifacts_on_success", tEnd);
  }

  log += section(
    "cleanup_file_variables",
    "Cleaning up project directory and file based variables",
    tEnd,
  );
  log += close("cleanup_file_variables", tEnd);
  log +=
    outcome === "success"
      ? `\n${GREEN}Job succeeded${RESET}\n`
      : `\n${RED}ERROR: Job failed: exit code ${options.exitCode ?? 1}\n${RESET}\n`;
  return log;
}

/** Whether a text is already a runner log (rather than a program's output to be wrapped). */
export function isRunnerTrace(text: string): boolean {
  return /^(?:\x1b\[0K)?Running with gitlab-(?:ci-multi-)?runner /.test(text); // eslint-disable-line no-control-regex
}

/**
 * What `GET …/trace` shows while the job runs: the log up to and including the first command of
 * its script. Empty when the log has no `step_script` section.
 */
export function traceWhileRunning(log: string): string {
  const step = log.indexOf(":step_script\r");
  if (step < 0) return "";
  const command = log.indexOf(`${GREEN}$ `, step);
  if (command < 0) return "";
  const lineEnd = log.indexOf("\n", command);
  return lineEnd < 0 ? log : log.slice(0, lineEnd + 1);
}

// ---------------------------------------------------------------------------------------------
// Terraform

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

function vmDefaults(params: VmParams): Required<VmParams> {
  return {
    name: params.name ?? "web-01",
    ip: params.ip ?? "192.168.1.50/24",
    gateway: params.gateway ?? "192.168.1.1",
    node: params.node ?? "pve",
    templateId: params.templateId ?? 9000,
    cores: params.cores ?? 2,
    memoryMb: params.memoryMb ?? 2048,
    diskGb: params.diskGb ?? 20,
    dns: params.dns ?? "192.168.1.1",
  };
}

/** `192.168.1.50/24` → `192.168.1.50`. */
export function addressOf(cidr: string): string {
  return cidr.split("/")[0] ?? cidr;
}

/** `terraform plan -no-color` creating one `proxmox_virtual_environment_vm.vm`. */
export function syntheticPlan(params: VmParams = {}): string {
  const vm = vmDefaults(params);
  return `
Terraform used the selected providers to generate the following execution
plan. Resource actions are indicated with the following symbols:
  + create

Terraform will perform the following actions:

  # proxmox_virtual_environment_vm.vm will be created
  + resource "proxmox_virtual_environment_vm" "vm" {
      + acpi                    = true
      + bios                    = "seabios"
      + id                      = (known after apply)
      + ipv4_addresses          = (known after apply)
      + keyboard_layout         = "en-us"
      + mac_addresses           = (known after apply)
      + migrate                 = false
      + name                    = "${vm.name}"
      + node_name               = "${vm.node}"
      + on_boot                 = true
      + started                 = true
      + stop_on_destroy         = false
      + timeout_clone           = 1800
      + vm_id                   = (known after apply)

      + agent {
          + enabled = true
          + timeout = "15m"
          + trim    = false
          + type    = "virtio"
        }

      + clone {
          + full    = true
          + retries = 1
          + vm_id   = ${vm.templateId}
        }

      + cpu {
          + cores   = ${vm.cores}
          + sockets = 1
          + type    = "x86-64-v2-AES"
        }

      + disk {
          + datastore_id = "local-lvm"
          + file_format  = (known after apply)
          + interface    = "scsi0"
          + size         = ${vm.diskGb}
        }

      + initialization {
          + datastore_id = "local-lvm"

          + dns {
              + servers = [
                  + "${vm.dns}",
                ]
            }

          + ip_config {
              + ipv4 {
                  + address = "${vm.ip}"
                  + gateway = "${vm.gateway}"
                }
            }

          + user_account {
              + keys     = (sensitive value)
              + username = "ubuntu"
            }
        }

      + memory {
          + dedicated = ${vm.memoryMb}
          + floating  = 0
        }

      + network_device {
          + bridge  = "vmbr0"
          + enabled = true
          + model   = "virtio"
        }
    }

Plan: 1 to add, 0 to change, 0 to destroy.

Changes to Outputs:
  + vm_ip = "${addressOf(vm.ip)}"

─────────────────────────────────────────────────────────────────────────────

Saved the plan to: tfplan

To perform exactly these actions, run the following command to apply:
    terraform apply "tfplan"
`;
}

/** `terraform apply tfplan` for the plan above. */
export function syntheticApply(params: VmParams = {}): string {
  const vm = vmDefaults(params);
  return `proxmox_virtual_environment_vm.vm: Creating...
proxmox_virtual_environment_vm.vm: Still creating... [10s elapsed]
proxmox_virtual_environment_vm.vm: Still creating... [20s elapsed]
proxmox_virtual_environment_vm.vm: Creation complete after 27s [id=105]

Apply complete! Resources: 1 added, 0 changed, 0 destroyed.

Outputs:

vm_ip = "${addressOf(vm.ip)}"
`;
}

/** `terraform apply tfplan` for `syntheticReplacePlan`: the old VM is destroyed, then re-created. */
export function syntheticReplaceApply(params: VmParams & { vmId?: number } = {}): string {
  const vm = vmDefaults(params);
  const oldId = params.vmId ?? 104;
  return `proxmox_virtual_environment_vm.vm: Destroying... [id=${oldId}]
proxmox_virtual_environment_vm.vm: Still destroying... [id=${oldId}, 10s elapsed]
proxmox_virtual_environment_vm.vm: Destruction complete after 14s
proxmox_virtual_environment_vm.vm: Creating...
proxmox_virtual_environment_vm.vm: Still creating... [10s elapsed]
proxmox_virtual_environment_vm.vm: Still creating... [20s elapsed]
proxmox_virtual_environment_vm.vm: Creation complete after 29s [id=${oldId + 2}]

Apply complete! Resources: 1 added, 0 changed, 1 destroyed.

Outputs:

vm_ip = "${addressOf(vm.ip)}"
`;
}

/** A plan that cannot be made because Proxmox refused the token, as Terraform reports it. */
export function syntheticPlanError(): string {
  return `
Planning failed. Terraform encountered an error while generating this plan.

╷
│ Error: error retrieving VM list: received an HTTP 401 response - Reason: authentication failure
│
│   with proxmox_virtual_environment_vm.vm,
│   on main.tf line 12, in resource "proxmox_virtual_environment_vm" "vm":
│   12: resource "proxmox_virtual_environment_vm" "vm" {
│
╵
`;
}

/**
 * Terraform's http backend refused the state lock with 403, as GitLab refuses it to a job token
 * whose user is below Maintainer (`backend/remote-state/http/client.go`).
 */
export function syntheticStateAuthError(): string {
  return `
╷
│ Error: Error acquiring the state lock
│
│ Error message: HTTP remote state endpoint invalid auth
│
│ Terraform acquires a state lock to protect the state from being written
│ by multiple users at the same time. Please resolve the issue above and try
│ again. For most commands, you can disable locking with the "-lock=false"
│ flag, but this is not recommended.
╵
`;
}

/**
 * `terraform plan -no-color` when the VM must be replaced: moving it to another node forces a new
 * VM (`-/+`), so the plan destroys the existing one.
 */
export function syntheticReplacePlan(
  params: VmParams & { fromNode?: string; vmId?: number } = {},
): string {
  const vm = vmDefaults(params);
  const fromNode = params.fromNode ?? (vm.node === "pve1" ? "pve2" : "pve1");
  // The existing VM has 2 cores and a 20 GB disk; Terraform's diff hides what does not change.
  const cpu =
    vm.cores === 2
      ? ""
      : `      ~ cpu {
          ~ cores   = 2 -> ${vm.cores}
            # (2 unchanged attributes hidden)
        }

`;
  const size = vm.diskGb === 20 ? "" : `          ~ size         = 20 -> ${vm.diskGb}\n`;
  return `
Terraform used the selected providers to generate the following execution
plan. Resource actions are indicated with the following symbols:
-/+ destroy and then create replacement

Terraform will perform the following actions:

  # proxmox_virtual_environment_vm.vm must be replaced
-/+ resource "proxmox_virtual_environment_vm" "vm" {
      ~ id                      = "${params.vmId ?? 104}" -> (known after apply)
      ~ ipv4_addresses          = [
          - [
              - "127.0.0.1",
            ],
          - [
              - "${addressOf(vm.ip)}",
            ],
        ] -> (known after apply)
      ~ mac_addresses           = [
          - "BC:24:11:5E:9A:21",
        ] -> (known after apply)
        name                    = "${vm.name}"
      ~ node_name               = "${fromNode}" -> "${vm.node}" # forces replacement
      ~ vm_id                   = ${params.vmId ?? 104} -> (known after apply)
        # (9 unchanged attributes hidden)

${cpu}      ~ disk {
          ~ file_format  = "raw" -> (known after apply)
${size}            # (${size === "" ? 3 : 2} unchanged attributes hidden)
        }

        # (${cpu === "" ? 6 : 5} unchanged blocks hidden)
    }

Plan: 1 to add, 0 to change, 1 to destroy.

─────────────────────────────────────────────────────────────────────────────

Saved the plan to: tfplan

To perform exactly these actions, run the following command to apply:
    terraform apply "tfplan"
`;
}

/** Terraform's answer when the http backend's state is locked by someone else. */
export function syntheticLockError(lock: {
  id: string;
  who: string;
  createdAt: Date;
  operation?: string;
}): string {
  // Terraform prints the lock's creation time with Go's default time format,
  // `2006-01-02 15:04:05.999999999 -0700 MST`: the fraction without trailing zeros, none if zero.
  const created = lock.createdAt
    .toISOString()
    .replace("T", " ")
    .replace(/\.(\d+)Z$/, (_, fraction: string) => {
      const digits = fraction.replace(/0+$/, "");
      return `${digits === "" ? "" : `.${digits}`} +0000 UTC`;
    });
  return `
╷
│ Error: Error acquiring the state lock
│
│ Error message: HTTP remote state already locked: ID=${lock.id}
│ Lock Info:
│   ID:        ${lock.id}
│   Path:
│   Operation: ${lock.operation ?? "OperationTypeApply"}
│   Who:       ${lock.who}
│   Version:   1.9.8
│   Created:   ${created}
│   Info:
│
│
│ Terraform acquires a state lock to protect the state from being written
│ by multiple users at the same time. Please resolve the issue above and try
│ again. For most commands, you can disable locking with the "-lock=false"
│ flag, but this is not recommended.
╵
`;
}

// ---------------------------------------------------------------------------------------------
// Ansible

const ANSIBLE_IMAGE = "registry.gitlab.com/platform/ansible-runner:2.17";

/**
 * `ansible-playbook`'s exit code for its output: 2 when a host failed, 4 when one was unreachable
 * (and none failed), 1 when no `PLAY RECAP` was printed (the playbook did not run), else 0.
 */
export function ansibleExitCode(output: string): number {
  const plain = output.replace(/\x1b\[[0-9;]*m/g, ""); // eslint-disable-line no-control-regex
  if (!/^PLAY RECAP \*/m.test(plain)) return 1;
  let failed = 0;
  let unreachable = 0;
  for (const match of plain.matchAll(
    / : ok=\d+\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)/g,
  )) {
    unreachable += Number(match[1]);
    failed += Number(match[2]);
  }
  if (failed > 0) return 2;
  return unreachable > 0 ? 4 : 0;
}

/** The configure job's log: `ansible-playbook` printing `ansibleOutput`. */
export function ansibleTrace(ansibleOutput: string, options: TraceOptions = {}): string {
  const exitCode = ansibleExitCode(ansibleOutput);
  return runnerTrace({
    ...options,
    image: ANSIBLE_IMAGE,
    steps: [
      {
        command: 'echo "$SSH_PRIVATE_KEY" > ~/.ssh/id_ed25519 && chmod 600 ~/.ssh/id_ed25519',
        output: "",
      },
      { command: "ansible-playbook -i inventory.ini site.yml", output: ansibleOutput },
    ],
    outcome: options.outcome ?? (exitCode === 0 ? "success" : "failed"),
    exitCode: exitCode === 0 ? 1 : exitCode,
  });
}

type TaskResult = "ok" | "changed" | "skipping" | "fatal" | "unreachable";

export interface SyntheticTask {
  name: string;
  result: TaskResult;
  /** For `fatal`: the module's message. */
  msg?: string;
}

export interface SyntheticAnsibleRun {
  host?: string;
  play?: string;
  tasks?: SyntheticTask[];
  /** Colour as `ANSIBLE_FORCE_COLOR=1` does in CI. Default true. */
  color?: boolean;
}

// ansible's colour codes (ansible.utils.color.codeCodes) for its default theme.
const ANSIBLE_COLOR = {
  ok: "0;32",
  changed: "0;33",
  error: "0;31",
  unreachable: "1;31",
  skip: "0;36",
  warn: "1;35",
} as const;

/** Banner as the default callback prints it: the title, a space, stars up to 80 columns. */
function banner(title: string): string {
  return `${title} ${"*".repeat(Math.max(3, 79 - title.length))}`;
}

/**
 * `ansible-playbook` output with the default stdout callback. Stops at the first `fatal` task,
 * as Ansible does for a single host.
 */
export function syntheticAnsibleRun(run: SyntheticAnsibleRun = {}): string {
  const host = run.host ?? "web-01";
  const color = run.color ?? true;
  const paint = (code: string, text: string): string =>
    color ? `${ESC}[${code}m${text}${ESC}[0m` : text;
  const tasks = run.tasks ?? DEFAULT_TASKS;
  const counts = {
    ok: 0,
    changed: 0,
    unreachable: 0,
    failed: 0,
    skipped: 0,
    rescued: 0,
    ignored: 0,
  };

  let out = `\n${banner(`PLAY [${run.play ?? "Configure VM"}]`)}\n`;
  for (const task of tasks) {
    out += `\n${banner(`TASK [${task.name}]`)}\n`;
    if (task.result === "ok") {
      counts.ok += 1;
      out += `${paint(ANSIBLE_COLOR.ok, `ok: [${host}]`)}\n`;
    } else if (task.result === "changed") {
      counts.ok += 1;
      counts.changed += 1;
      out += `${paint(ANSIBLE_COLOR.changed, `changed: [${host}]`)}\n`;
    } else if (task.result === "skipping") {
      counts.skipped += 1;
      out += `${paint(ANSIBLE_COLOR.skip, `skipping: [${host}]`)}\n`;
    } else if (task.result === "unreachable") {
      counts.unreachable += 1;
      const result = JSON.stringify({
        changed: false,
        msg:
          task.msg ??
          `Failed to connect to the host via ssh: ssh: connect to host ${host} port 22: No route to host`,
        unreachable: true,
      });
      out += `${paint(ANSIBLE_COLOR.unreachable, `fatal: [${host}]: UNREACHABLE! => ${result}`)}\n`;
      break;
    } else {
      counts.failed += 1;
      const result = JSON.stringify({ changed: false, msg: task.msg ?? "Task failed" });
      out += `${paint(ANSIBLE_COLOR.error, `fatal: [${host}]: FAILED! => ${result}`)}\n`;
      break;
    }
  }

  const field = (name: keyof typeof counts, code: string): string => {
    const text = `${name}=${String(counts[name]).padEnd(4)}`;
    return counts[name] !== 0 ? paint(code, text) : text;
  };
  const hostCode =
    counts.failed > 0 || counts.unreachable > 0
      ? ANSIBLE_COLOR.error
      : counts.changed > 0
        ? ANSIBLE_COLOR.changed
        : ANSIBLE_COLOR.ok;
  // `%-26s` of the host, or `%-37s` of the coloured host (whose codes take 11 of the 37).
  const hostColumn = color ? paint(hostCode, host).padEnd(37) : host.padEnd(26);
  const recap = [
    field("ok", ANSIBLE_COLOR.ok),
    field("changed", ANSIBLE_COLOR.changed),
    field("unreachable", ANSIBLE_COLOR.unreachable),
    field("failed", ANSIBLE_COLOR.error),
    field("skipped", ANSIBLE_COLOR.skip),
    field("rescued", ANSIBLE_COLOR.ok),
    field("ignored", ANSIBLE_COLOR.warn),
  ].join(" ");
  out += `\n${banner("PLAY RECAP")}\n${hostColumn} : ${recap}\n\n`;
  return out;
}

const DEFAULT_TASKS: SyntheticTask[] = [
  { name: "Gathering Facts", result: "ok" },
  { name: "Wait for cloud-init to finish", result: "ok" },
  { name: "Install qemu-guest-agent", result: "changed" },
  { name: "Enable and start qemu-guest-agent", result: "changed" },
  { name: "Set the hostname", result: "ok" },
];

/** A configure run that fails starting the guest agent. */
export const FAILING_TASKS: readonly SyntheticTask[] = [
  { name: "Gathering Facts", result: "ok" },
  { name: "Install qemu-guest-agent", result: "changed" },
  {
    name: "Enable and start qemu-guest-agent",
    result: "fatal",
    msg: "Unable to start service qemu-guest-agent: Job for qemu-guest-agent.service failed.",
  },
];

/** A configure run that cannot reach the new VM over SSH: the first task is as far as it gets. */
export const UNREACHABLE_TASKS: readonly SyntheticTask[] = [
  { name: "Gathering Facts", result: "unreachable" },
];

/** A short generic log for jobs that are neither Terraform nor Ansible. */
export function scriptTrace(
  output: string,
  options: TraceOptions & { command?: string } = {},
): string {
  return runnerTrace({
    ...options,
    image: "alpine:3.20",
    steps: [{ command: options.command ?? "./ci/run.sh", output }],
    outcome: options.outcome ?? "success",
  });
}
