/** Pipeline and job status rules (Gitlab::Ci::Status::Composite), and a pipeline's VM. */
import { type VmParams } from "./traces.js";
import { type FakeJob, type FakePipeline, type JobStatus, type JobWhen } from "./types.js";

/** The jobs a pipeline shows: the latest run of each. */
export function latestJobs(pipeline: FakePipeline): FakeJob[] {
  return pipeline.jobs.filter((job) => !job.retried);
}

/** GitLab's composite status of a set of jobs (`Gitlab::Ci::Status::Composite`). */
export function compositeStatus(
  jobs: readonly Pick<FakeJob, "status" | "allowFailure">[],
): JobStatus | undefined {
  if (jobs.length === 0) return undefined;
  const set = new Set<string>();
  for (const job of jobs) {
    if (job.allowFailure && (job.status === "failed" || job.status === "canceled")) {
      set.add("success_with_warnings");
    } else if (job.allowFailure && job.status === "manual") {
      set.add("ignored");
    } else {
      set.add(job.status);
    }
  }
  const onlyOf = (...names: string[]): boolean => {
    const matching = names.filter((name) => set.has(name)).length;
    return matching > 0 && matching === set.size;
  };
  const anyOf = (...names: string[]): boolean => names.some((name) => set.has(name));
  if (onlyOf("skipped", "ignored")) return "skipped";
  if (onlyOf("success", "skipped", "success_with_warnings", "ignored")) return "success";
  if (onlyOf("created", "success_with_warnings", "ignored")) return "created";
  if (onlyOf("preparing", "success_with_warnings", "ignored")) return "preparing";
  if (onlyOf("canceled", "success", "skipped", "success_with_warnings", "ignored")) {
    return "canceled";
  }
  if (onlyOf("pending", "created", "skipped", "success_with_warnings", "ignored")) return "pending";
  if (anyOf("running", "pending")) return "running";
  if (anyOf("waiting_for_resource")) return "waiting_for_resource";
  if (anyOf("manual")) return "manual";
  if (anyOf("scheduled")) return "scheduled";
  if (anyOf("preparing")) return "preparing";
  if (anyOf("created")) return "running";
  return "failed";
}

/** What a `created` job becomes once the stages before it have this composite status. */
export function promotion(when: JobWhen, before: JobStatus | undefined): JobStatus | undefined {
  if (before === undefined || before === "success" || before === "skipped") {
    if (when === "manual") return "manual";
    return when === "on_failure" ? "skipped" : "pending";
  }
  if (before === "failed" || before === "canceled") {
    return when === "on_failure" || when === "always" ? "pending" : "skipped";
  }
  return undefined; // earlier stages are still running or blocked
}

/** What the simulator writes into a job's log and artifacts, from the pipeline's parameters. */
/** The VM a pipeline was asked for, from its inputs (or their upper-case variables). */
export function vmParamsOf(pipeline: FakePipeline): VmParams {
  const variables = new Map(pipeline.variables.map((v) => [v.key, v.value]));
  const text = (name: string): string | undefined => {
    const value = pipeline.inputs[name] ?? variables.get(name.toUpperCase());
    return value === undefined ? undefined : String(value);
  };
  const number = (name: string): number | undefined => {
    const value = text(name);
    return value === undefined || !/^\d+$/.test(value) ? undefined : Number(value);
  };
  const params: VmParams = {};
  const name = text("vm_name");
  const ip = text("vm_ip");
  const gateway = text("vm_gateway");
  const node = text("proxmox_node");
  const dns = text("dns_server");
  if (name !== undefined) params.name = name;
  if (ip !== undefined) params.ip = ip;
  if (gateway !== undefined) params.gateway = gateway;
  if (node !== undefined) params.node = node;
  if (dns !== undefined) params.dns = dns;
  const templateId = number("template_vm_id");
  const cores = number("cpu_cores");
  const memoryMb = number("memory_mb");
  const diskGb = number("disk_size_gb");
  if (templateId !== undefined) params.templateId = templateId;
  if (cores !== undefined) params.cores = cores;
  if (memoryMb !== undefined) params.memoryMb = memoryMb;
  if (diskGb !== undefined) params.diskGb = diskGb;
  return params;
}
