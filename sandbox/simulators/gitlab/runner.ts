/** The simulated runner: each step starts or finishes jobs, with their logs and artifacts. */
import {
  addressOf,
  ansibleTrace,
  applyTrace,
  destroyTrace,
  FAILING_TASKS,
  isRunnerTrace,
  type JobOutcome,
  planTrace,
  scriptTrace,
  syntheticAnsibleRun,
  syntheticApply,
  syntheticPlan,
  syntheticPlanError,
  syntheticStateAuthError,
  type TraceOptions,
  traceWhileRunning,
  validateTrace,
} from "./traces.js";
import { ROLE_LEVEL, TERMINAL, TFPLAN_PLACEHOLDER } from "./defaults.js";
import { GitlabPipelines } from "./pipelines.js";
import { QUEUED } from "./state.js";
import { latestJobs, vmParamsOf } from "./status.js";
import { type FakeJob, type FakePipeline, type JobTransition } from "./types.js";

export class GitlabModel extends GitlabPipelines {
  /** Job ID → the failure reason it finishes with. */
  private readonly failures = new Map<number, string>();

  failJob(job: FakeJob, reason: string): void {
    if (TERMINAL.has(job.status)) {
      throw new Error(`job ${job.name} (#${job.id}) has already finished as ${job.status}`);
    }
    this.failures.set(job.id, reason);
  }

  /** One step of a pipeline; see `FakeGitlab.advance`. */
  advance(pipeline: FakePipeline): JobTransition[] {
    const before = new Map(pipeline.jobs.map((job) => [job.id, job.status]));
    const jobs = latestJobs(pipeline);
    const running = jobs.filter((job) => job.status === "running");
    const queued = jobs.filter((job) => QUEUED.has(job.status));
    if (running.length > 0) {
      for (const job of running) this.finish(job, pipeline);
    } else {
      for (const job of queued) this.start(job, pipeline);
    }
    this.process(pipeline);
    const transitions: JobTransition[] = [];
    for (const job of pipeline.jobs) {
      const from = before.get(job.id) ?? null;
      if (from !== job.status) {
        transitions.push({ jobId: job.id, jobName: job.name, from, to: job.status });
      }
    }
    return transitions;
  }

  private start(job: FakeJob, pipeline: FakePipeline): void {
    this.setJobStatus(job, "running");
    job.log = traceWhileRunning(this.traceOf(job, pipeline, "success"));
  }

  private finish(job: FakeJob, pipeline: FakePipeline): void {
    const planned = this.failures.get(job.id);
    // A needed job's artifacts were deleted: the runner downloads nothing, the script fails.
    const missing = latestJobs(pipeline).find(
      (other) => job.needs.includes(other.name) && other.artifactsDeletedAt !== null,
    );
    const log =
      missing === undefined
        ? this.traceOf(job, pipeline, planned === undefined ? undefined : "failed")
        : this.missingArtifactsTrace(job, pipeline, missing);
    const failed = planned !== undefined || log.includes("ERROR: Job failed");
    job.log = log;
    if (!failed) {
      const project = this.projectOf(pipeline);
      const files = project.artifacts?.[job.name] ?? this.defaultArtifacts(job, pipeline);
      for (const [path, content] of Object.entries(files)) {
        if (!job.artifacts.has(path)) job.artifacts.set(path, content);
      }
    }
    this.setJobStatus(job, failed ? "failed" : "success", planned ?? "script_failure");
  }

  /** The log of a job whose needed artifacts are gone: Terraform finds no plan file. */
  private missingArtifactsTrace(job: FakeJob, pipeline: FakePipeline, gone: FakeJob): string {
    const project = this.projectOf(pipeline);
    const options: TraceOptions = {
      startedAt: job.startedAt === null ? this.now() : new Date(job.startedAt),
      finishedAt: this.now(),
      jobId: job.id,
      projectId: project.id,
      projectPath: project.path,
      ref: pipeline.ref,
      sha: pipeline.sha,
      outcome: "failed",
    };
    const output = [
      `No artifacts of ${gone.name} (#${gone.id}) to download: they were deleted.`,
      "",
      'Error: Failed to load "tfplan" as a plan file',
      "",
      "Error: stat tfplan: no such file or directory",
      "",
    ].join("\n");
    return job.logKind === "terraform-apply"
      ? applyTrace(output, options)
      : scriptTrace(output, options);
  }

  private defaultArtifacts(job: FakeJob, pipeline: FakePipeline): Record<string, string> {
    // `terraform plan -out=tfplan`, kept as an artifact for the apply job.
    if (job.logKind === "terraform-plan") return { tfplan: TFPLAN_PLACEHOLDER };
    if (job.logKind !== "terraform-apply") return {};
    const ip = vmParamsOf(pipeline).ip ?? "192.168.1.50/24";
    // `terraform output -raw vm_ip > vm_ip.txt`: no newline.
    return { "vm_ip.txt": addressOf(ip) };
  }

  /** The job's log for `outcome` (undefined: as its output decides). */
  private traceOf(job: FakeJob, pipeline: FakePipeline, outcome: JobOutcome | undefined): string {
    const project = this.projectOf(pipeline);
    const given = pipeline.traces[job.name] ?? project.traces[job.name];
    if (given !== undefined && isRunnerTrace(given)) return given;
    const options: TraceOptions = {
      startedAt: job.startedAt === null ? this.now() : new Date(job.startedAt),
      finishedAt: this.now(),
      jobId: job.id,
      projectId: project.id,
      projectPath: project.path,
      ref: pipeline.ref,
      sha: pipeline.sha,
    };
    if (outcome !== undefined) options.outcome = outcome;
    const failing = outcome === "failed";
    const vm = vmParamsOf(pipeline);
    // The job token acts as the user who started (or played) the job; GitLab refuses the state
    // lock to anyone below Maintainer, and Terraform stops there.
    const locksState = ["terraform-plan", "terraform-apply", "terraform-destroy"];
    if (given === undefined && locksState.includes(job.logKind)) {
      if (ROLE_LEVEL[project.role] < ROLE_LEVEL.maintainer) {
        const trace = job.logKind === "terraform-plan" ? planTrace : applyTrace;
        return trace(syntheticStateAuthError(), options);
      }
    }
    switch (job.logKind) {
      case "terraform-validate":
        return validateTrace(given ?? (failing ? terraformFailure() : undefined), options);
      case "terraform-plan":
        return planTrace(given ?? (failing ? syntheticPlanError() : syntheticPlan(vm)), options);
      case "terraform-apply":
        return applyTrace(given ?? (failing ? terraformFailure() : syntheticApply(vm)), options);
      case "terraform-destroy":
        return destroyTrace(given ?? (failing ? terraformFailure() : syntheticDestroy()), options);
      case "ansible":
        return ansibleTrace(
          given ??
            syntheticAnsibleRun({
              host: vm.name ?? "web-01",
              ...(failing ? { tasks: [...FAILING_TASKS] } : {}),
            }),
          options,
        );
      case "script":
        return scriptTrace(given ?? "", options);
    }
  }
}

/** The later of two ISO 8601 UTC timestamps. */
export function latest(a: string, b: string): string {
  return a > b ? a : b;
}

function terraformFailure(): string {
  return `╷
│ Error: error waiting for VM clone: All attempts fail:
│ #1: task "UPID:pve:0001A2B3:00C4D5E6:6752A1B0:qmclone:9000:root@pam!terraform:" failed to complete with exit code: clone failed: storage 'local-lvm' does not exist
│
│   with proxmox_virtual_environment_vm.vm,
│   on main.tf line 12, in resource "proxmox_virtual_environment_vm" "vm":
│   12: resource "proxmox_virtual_environment_vm" "vm" {
│
╵
`;
}

function syntheticDestroy(): string {
  return `proxmox_virtual_environment_vm.vm: Refreshing state... [id=105]
proxmox_virtual_environment_vm.vm: Destroying... [id=105]
proxmox_virtual_environment_vm.vm: Destruction complete after 6s

Destroy complete! Resources: 1 destroyed.
`;
}
