/** The runner's part of a job log: preamble, sections, colours and the closing line; and a generic script job's log. */
import { type TraceOptions } from "./terraform.js";

export const ESC = "\x1b";
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
