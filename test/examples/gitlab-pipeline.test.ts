/**
 * The example pipeline (`examples/gitlab/`) is the contract between vmbot and the platform. These
 * tests evaluate it with gitlab-ci-local, a real GitLab CI evaluator (spec:inputs with their
 * types, `$[[ inputs.* ]]` interpolation, rules, needs), given exactly the parameters vmbot sends
 * with its default configuration.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { loadConfig } from "../../src/config.js";
import { REQUEST_ID_VARIABLE } from "../../src/gitlab/gitlab.js";
import { DEFAULT_PIPELINE, VM_PIPELINE_INPUTS } from "../../sandbox/simulators/gitlab/index.js";
import { destroyParams } from "../../src/destroy/params.js";
import { pipelineParams, type PipelineParams, type VmSpec } from "../../src/vm/spec.js";
import { stateNameFor } from "../../src/vm/state-name.js";
import { TEST_SECRETS } from "../support/secrets.js";

const ROOT = resolve(import.meta.dirname, "../..");
const EXAMPLE = join(ROOT, "examples/gitlab/.gitlab-ci.yml");
const TERRAFORM_VARIABLES = join(ROOT, "examples/gitlab/terraform/variables.tf");
const EVALUATOR = join(ROOT, "node_modules/gitlab-ci-local/dist/index.js");

const config = loadConfig({
  SLACK_BOT_TOKEN: TEST_SECRETS.botToken,
  SLACK_SIGNING_SECRET: TEST_SECRETS.signingSecret,
  GITLAB_TOKEN: TEST_SECRETS.gitlabToken,
  GITLAB_PROJECT: "infra/vms",
  APPROVERS: "U0APPROVER",
  ADMINS: "U0ADMIN",
});

const SPEC: VmSpec = {
  name: "web-01",
  node: "pve",
  templateId: 9000,
  templateName: "ubuntu",
  cores: 4,
  memoryMb: 4096,
  diskGb: 40,
  ip: "192.168.1.50/24",
  gateway: "192.168.1.1",
  dns: "192.168.1.1",
  vmId: 150,
  vlanId: 20,
};

/** What vmbot sends for SPEC with its default configuration, the request's ID included. */
function vmbotParams(action: "apply" | "destroy" = "apply"): PipelineParams {
  const shape = { sizing: config.gitlab.sizingParams, numberInputs: config.gitlab.numberInputs };
  const state = stateNameFor(config.stateNameTemplate, SPEC.name);
  const params =
    action === "destroy" ? destroyParams(SPEC, shape, state) : pipelineParams(SPEC, shape, state);
  return {
    inputs: params.inputs,
    variables: { ...params.variables, [REQUEST_ID_VARIABLE]: "vm-mabc123-0a1b2c3d" },
  };
}

const InputSpecSchema = z
  .object({
    type: z.enum(["string", "number", "boolean", "array"]).optional(),
    default: z.unknown().optional(),
    options: z.array(z.unknown()).optional(),
  })
  .nullable();

const ExampleSchema = z.tuple([
  z.object({ spec: z.object({ inputs: z.record(z.string(), InputSpecSchema) }) }),
  z
    .object({ variables: z.record(z.string(), z.string()) })
    .catchall(z.unknown())
    .and(z.record(z.string(), z.unknown())),
]);

const example = (() => {
  const documents = parseAllDocuments(readFileSync(EXAMPLE, "utf8")).map(
    (doc) => doc.toJS() as unknown,
  );
  const [header, body] = ExampleSchema.parse(documents);
  return { inputs: header.spec.inputs, body };
})();

const EvaluatedJobSchema = z.object({ name: z.string(), stage: z.string(), when: z.string() });
type EvaluatedJob = z.infer<typeof EvaluatedJobSchema>;

const workDirs: string[] = [];
afterAll(() => {
  for (const dir of workDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Evaluates `pipeline` as GitLab would for a pipeline with `source` given `params`: the jobs and
 * their `when` (`never` for a job the rules leave out), or the evaluator's error.
 */
const run = promisify(execFile);

/** Runs `command`; its exit code other than 0 becomes `{ failed }` with what it wrote. */
async function exec(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<{ stdout: string } | { failed: string }> {
  try {
    const { stdout } = await run(command, args, {
      ...options,
      encoding: "utf8",
      timeout: 60_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { stdout };
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    return { failed: `${stdout}\n${stderr}` };
  }
}

async function evaluate(
  pipeline: string,
  params: PipelineParams,
  source: "api" | "web" = "api",
): Promise<{ jobs: EvaluatedJob[] } | { error: string }> {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-pipeline-"));
  workDirs.push(dir);
  writeFileSync(join(dir, "pipeline.yml"), pipeline);
  // JSON is YAML: the include carries the inputs with their JSON types, as the API does.
  writeFileSync(
    join(dir, ".gitlab-ci.yml"),
    JSON.stringify({ include: [{ local: "pipeline.yml", inputs: params.inputs }] }),
  );
  const git = async (...args: string[]) => {
    const result = await exec("git", args, { cwd: dir });
    if ("failed" in result) throw new Error(`git ${args.join(" ")}: ${result.failed}`);
  };
  await git("init", "--quiet", "--initial-branch=main");
  await git("remote", "add", "origin", "https://gitlab.example.com/infra/vms.git");
  await git("add", "--all");
  await git(
    "-c",
    "user.name=ci",
    "-c",
    "user.email=ci@example.com",
    "commit",
    "--quiet",
    "-m",
    "ci",
  );
  const variables = Object.entries({ ...params.variables, CI_PIPELINE_SOURCE: source }).flatMap(
    ([key, value]) => ["--variable", `${key}=${value}`],
  );
  const result = await exec(
    process.execPath,
    [EVALUATOR, "--list-json", "--ignore-predefined-vars", "CI_PIPELINE_SOURCE", ...variables],
    { cwd: dir, env: { ...process.env, FORCE_COLOR: "0" } },
  );
  if ("failed" in result) return { error: result.failed };
  return { jobs: z.array(EvaluatedJobSchema).parse(JSON.parse(result.stdout)) };
}

/** The jobs a pipeline gets, as name → when; fails the test with the evaluator's error. */
function jobsOf(result: Evaluation): Record<string, string> {
  if ("error" in result) throw new Error(`the evaluator refused the pipeline: ${result.error}`);
  return Object.fromEntries(
    result.jobs.filter((job) => job.when !== "never").map((job) => [job.name, job.when]),
  );
}

type Evaluation = Awaited<ReturnType<typeof evaluate>>;

const exampleText = readFileSync(EXAMPLE, "utf8");

/** The example with the blog's original rules, which accept only pipelines started in GitLab's web UI. */
const webOnly = exampleText.replaceAll(
  '($CI_PIPELINE_SOURCE == "web" || $CI_PIPELINE_SOURCE == "api") && ',
  '$CI_PIPELINE_SOURCE == "web" && ',
);

/**
 * The evaluations the tests below read, each a real gitlab-ci-local run: all started at once,
 * before the tests, rather than one after another inside them.
 */
let evaluated: Record<
  "apply" | "destroy" | "numberForString" | "webOnlyApi" | "webOnlyWeb",
  Evaluation
>;
beforeAll(async () => {
  const params = vmbotParams();
  const [apply, destroy, numberForString, webOnlyApi, webOnlyWeb] = await Promise.all([
    evaluate(exampleText, params),
    evaluate(exampleText, vmbotParams("destroy")),
    evaluate(exampleText, { ...params, inputs: { ...params.inputs, vm_id: 150 } }),
    evaluate(webOnly, params),
    evaluate(webOnly, params, "web"),
  ]);
  evaluated = { apply, destroy, numberForString, webOnlyApi, webOnlyWeb };
}, 120_000);

describe("the example pipeline and vmbot's default configuration", () => {
  it("declare every input vmbot sends, with the type vmbot sends it as", () => {
    const sent = vmbotParams().inputs;
    for (const [name, value] of Object.entries(sent)) {
      expect(Object.keys(example.inputs), `input ${name}`).toContain(name);
      const declared = example.inputs[name]?.type ?? "string";
      expect(typeof value, `type of input ${name}`).toBe(declared);
    }
  });

  it("declare every variable vmbot sends, and Terraform declares every TF_VAR_ of the pipeline", () => {
    const declared = Object.keys(example.body.variables);
    for (const name of Object.keys(vmbotParams().variables)) {
      expect(declared, `variable ${name}`).toContain(name);
    }
    const terraform = readFileSync(TERRAFORM_VARIABLES, "utf8");
    for (const name of declared.filter((key) => key.startsWith("TF_VAR_"))) {
      expect(terraform, name).toContain(`variable "${name.slice("TF_VAR_".length)}"`);
    }
  });

  it("give each VM a state of its own, named as vmbot names it, when run by hand too", () => {
    const sent = vmbotParams().variables.TF_STATE_NAME;
    expect(sent).toBe("vm-web-01");
    // Run by hand, the pipeline's own default names the same state vmbot would.
    const own = example.body.variables.TF_STATE_NAME?.replace("$[[ inputs.vm_name ]]", SPEC.name);
    expect(own).toBe(sent);
    expect(example.body.variables.TF_ADDRESS).toMatch(/\/terraform\/state\/\$\{TF_STATE_NAME\}$/);
  });

  it("keep the plan's artifacts longer than a plan may wait for approval", () => {
    const plan = z
      .object({ artifacts: z.object({ expire_in: z.string() }) })
      .parse(example.body[config.gitlab.jobs.plan]);
    const [, count = "0", unit = ""] =
      /^(\d+)\s*(day|hour)s?$/.exec(plan.artifacts.expire_in) ?? [];
    const ms = Number(count) * (unit === "day" ? 86_400_000 : 3_600_000);
    expect(ms).toBeGreaterThan(config.planTtlMs);
  });

  it("give an API pipeline for a new VM the plan, the manual apply and the configure job", () => {
    const jobs = jobsOf(evaluated.apply);
    expect(jobs).toEqual({
      [config.gitlab.jobs.plan]: "on_success",
      [config.gitlab.jobs.apply]: "manual",
      [config.gitlab.jobs.configure]: "on_success",
    });
  });

  it("give an API pipeline with action=destroy the destroy jobs, the destroy one manual, and nothing that applies", () => {
    const jobs = jobsOf(evaluated.destroy);
    expect(jobs).toEqual({
      "notify:destroy": "on_success",
      [config.gitlab.jobs.destroy]: "manual",
    });
  });

  it("run the destroy job as the simulated GitLab does: its own stage, after notify:destroy", () => {
    const declared = z
      .object({ stage: z.string(), needs: z.array(z.string()) })
      .parse(example.body[config.gitlab.jobs.destroy]);
    const simulated = DEFAULT_PIPELINE.jobs.find((job) => job.name === config.gitlab.jobs.destroy);
    expect(simulated).toMatchObject({
      stage: declared.stage,
      needs: declared.needs,
      when: "manual",
    });
    expect(DEFAULT_PIPELINE.stages).toContain(declared.stage);
  });

  it("are refused by the evaluator, as by GitLab, when a number is sent for an untyped input", () => {
    const result = evaluated.numberForString;
    expect(result).toHaveProperty("error");
    if ("error" in result) expect(result.error).toContain("provided value is not a string");
  });

  it("agree with the simulated GitLab's pipeline on inputs, their defaults and the jobs' names", () => {
    const simulated = Object.fromEntries(
      Object.entries(VM_PIPELINE_INPUTS).map(([name, spec]) => [name, spec.default ?? null]),
    );
    const declared = Object.fromEntries(
      Object.entries(example.inputs).map(([name, spec]) => [name, spec?.default ?? null]),
    );
    expect(simulated).toEqual(declared);
    const names = DEFAULT_PIPELINE.jobs.map((job) => job.name);
    for (const name of [
      "tf:plan",
      "tf:apply",
      "ansible:configure",
      "notify:destroy",
      "tf:destroy",
    ]) {
      expect(names).toContain(name);
    }
  });
});

describe("the blog's original rules, which accept only pipelines started in GitLab's web UI", () => {
  it("create no job at all for the API pipelines vmbot starts", () => {
    expect(webOnly).not.toBe(exampleText);
    expect(jobsOf(evaluated.webOnlyApi)).toEqual({});
  });

  it("still create the jobs for a pipeline started by hand", () => {
    expect(jobsOf(evaluated.webOnlyWeb)).toMatchObject({
      "tf:plan": "on_success",
      "tf:apply": "manual",
    });
  });
});
