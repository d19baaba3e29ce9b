import path from "node:path";
import {
  Gitlab,
  GitbeakerRequestError,
  GitbeakerTimeoutError,
  type PipelineVariableSchema,
} from "@gitbeaker/rest";
import { afterEach, describe, expect, it } from "vitest";
import { readFixture, readFixtureJson } from "../../../support/fixtures.js";
import { TEST_SECRETS } from "../../../support/secrets.js";
import {
  startFakeGitlab,
  terraformLockInfo,
  vmParamsOf,
  type FakeGitlab,
  type FakeGitlabOptions,
  type FakePipeline,
  type FakeProjectOptions,
  type JobStatus,
  type TerraformLockInfo,
} from "../../../../sandbox/simulators/gitlab/index.js";
import {
  ansibleExitCode,
  ansibleTrace,
  isRunnerTrace,
  planTrace,
  syntheticAnsibleRun,
  syntheticLockError,
  syntheticPlan,
  syntheticReplacePlan,
  terraformExitCode,
  traceWhileRunning,
  UNREACHABLE_TASKS,
} from "../../../../sandbox/simulators/gitlab/traces.js";
import {
  startFakeServer,
  type FakeServer,
  type RecordedRequest,
} from "../../../../sandbox/simulators/http.js";
import { parseAnsibleOutput } from "../../../../src/ansible/recap.js";
import { parsePlanText } from "../../../../src/terraform/plan-text.js";
import { waitFor } from "../../../support/wait.js";

const token = TEST_SECRETS.gitlabToken;

const project: FakeProjectOptions = {
  id: 7,
  path: "infra/vms",
  defaultBranch: "main",
  inputs: {
    action: { default: "apply", options: ["apply", "destroy"] },
    vm_name: {},
    vm_ip: {},
    vm_gateway: { default: "192.168.1.1" },
    vm_id: { type: "number", default: 0 },
  },
};

let fake: FakeGitlab | undefined;

async function start(
  options: Partial<FakeGitlabOptions> = {},
): Promise<{ fake: FakeGitlab; api: Gitlab }> {
  fake = await startFakeGitlab({ token, projects: [project], ...options });
  return { fake, api: new Gitlab({ host: fake.url, token }) };
}

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/**
 * gitbeaker 43 types `Pipelines.create` options without `inputs`, but it sends every option it is
 * given in the JSON body, so the bot can pass them.
 */
function createPipeline(
  api: Gitlab,
  projectId: string | number,
  ref: string,
  options: { inputs?: Record<string, unknown>; variables?: PipelineVariableSchema[] },
) {
  return api.Pipelines.create(projectId, ref, options);
}

/** What a caller of gitbeaker sees of a failed request. */
async function failureOf(
  promise: Promise<unknown>,
): Promise<{ status: number; description: string }> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GitbeakerRequestError);
  const cause = (error as GitbeakerRequestError).cause;
  return { status: cause?.response.status ?? 0, description: cause?.description ?? "" };
}

function bodyOf(fakeGitlab: FakeGitlab, index = 0): unknown {
  const request = fakeGitlab.requests[index];
  if (!request) throw new Error(`no request #${index}`);
  return JSON.parse(request.body) as unknown;
}

describe("fake GitLab: the Date of its answers", () => {
  it("dates every answer by its own clock, as GitLab's web server does, a failure's too", async () => {
    const { fake: gitlab } = await start({ now: () => new Date("2026-12-07T12:55:00.250Z") });
    const headers = { "PRIVATE-TOKEN": token };
    const answered = await fetch(`${gitlab.url}/api/v4/projects/42`, { headers });
    expect(answered.headers.get("date")).toBe("Mon, 07 Dec 2026 12:55:00 GMT");
    gitlab.failNext({ path: /\/projects\/42$/ }, { status: 503 });
    const failed = await fetch(`${gitlab.url}/api/v4/projects/42`, { headers });
    expect(failed.status).toBe(503);
    expect(failed.headers.get("date")).toBe("Mon, 07 Dec 2026 12:55:00 GMT");
  });
});

describe("fake GitLab: creating a pipeline", () => {
  it("receives exactly the ref and inputs, and stores the inputs merged with the defaults", async () => {
    const { fake, api } = await start();
    const created = await createPipeline(api, 7, "main", {
      inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24", vm_id: 105 },
    });

    const request = fake.requests[0]!;
    expect(request.method).toBe("POST");
    expect(request.path).toBe("/api/v4/projects/7/pipeline");
    expect(request.headers["private-token"]).toBe(token);
    expect(request.headers["content-type"]).toBe("application/json");
    expect(bodyOf(fake)).toStrictEqual({
      ref: "main",
      inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24", vm_id: 105 },
    });

    const pipeline = fake.pipelines[0]!;
    expect(pipeline.inputs).toStrictEqual({
      action: "apply",
      vm_name: "web-01",
      vm_ip: "192.168.1.50/24",
      vm_gateway: "192.168.1.1",
      vm_id: 105,
    });
    expect(created).toMatchObject({
      id: pipeline.id,
      iid: 1,
      project_id: 7,
      ref: "main",
      status: "created",
      source: "api",
      tag: false,
      before_sha: "0000000000000000000000000000000000000000",
      web_url: `${fake.url}/infra/vms/-/pipelines/${pipeline.id}`,
      user: { id: fake.user.id, username: fake.user.username, state: "active" },
    });
    expect(created.sha).toMatch(/^[0-9a-f]{40}$/);
    expect(pipeline.jobs.map((j) => [j.name, j.stage, j.status])).toStrictEqual([
      ["tf:validate", "validate", "created"],
      ["tf:plan", "plan", "created"],
      ["tf:apply", "apply", "created"],
      ["ansible:configure", "configure", "created"],
    ]);
  });

  it("gets camelCase input names from gitbeaker as snake_case, because it decamelizes every body key", async () => {
    // gitbeaker runs `decamelizeKeys` over the whole JSON body, nested objects included: an input
    // named `vmName` reaches GitLab as `vm_name`, and `templateVMId` as `template_v_m_id`. Names
    // already in snake_case (`vm_ip`) or upper case (`VM_IP`) pass unchanged. Variables are safe:
    // their names are values (`key: "vmName"`), and only `variableType` becomes `variable_type`.
    const { fake, api } = await start();
    await createPipeline(api, 7, "main", { inputs: { vmName: "web-01", vm_ip: "10.0.0.5/24" } });
    expect(bodyOf(fake)).toStrictEqual({
      ref: "main",
      inputs: { vm_name: "web-01", vm_ip: "10.0.0.5/24" },
    });

    const failure = await failureOf(
      createPipeline(api, 7, "main", {
        inputs: { vm_name: "a", vm_ip: "10.0.0.6/24", templateVMId: 9000 },
      }),
    );
    expect(bodyOf(fake, 1)).toStrictEqual({
      ref: "main",
      inputs: { vm_name: "a", vm_ip: "10.0.0.6/24", template_v_m_id: 9000 },
    });
    expect(failure.description).toBe('{"base":["unknown input arguments: template_v_m_id"]}');
  });

  it("creates a pipeline with variables and shows them on the variables endpoint", async () => {
    const { fake, api } = await start({ projects: [{ id: 9, path: "infra/legacy" }] });
    const created = await createPipeline(api, 9, "main", {
      variables: [
        { key: "VM_NAME", value: "web-01" },
        { key: "SSH_PUBKEY", value: "ssh-ed25519 AAAA", variable_type: "file" },
      ],
    });
    expect(bodyOf(fake)).toStrictEqual({
      ref: "main",
      variables: [
        { key: "VM_NAME", value: "web-01" },
        { key: "SSH_PUBKEY", value: "ssh-ed25519 AAAA", variable_type: "file" },
      ],
    });
    expect(fake.pipelines[0]!.variables).toStrictEqual([
      { key: "VM_NAME", value: "web-01", variable_type: "env_var" },
      { key: "SSH_PUBKEY", value: "ssh-ed25519 AAAA", variable_type: "file" },
    ]);
    expect(await api.Pipelines.allVariables(9, created.id)).toStrictEqual([
      { variable_type: "env_var", key: "VM_NAME", value: "web-01", raw: false },
      { variable_type: "file", key: "SSH_PUBKEY", value: "ssh-ed25519 AAAA", raw: false },
    ]);
  });

  it("takes the project by its full path, which gitbeaker URL-encodes", async () => {
    const { fake, api } = await start();
    const created = await createPipeline(api, "infra/vms", "main", {
      inputs: { vm_name: "db-01", vm_ip: "10.0.0.7/24" },
    });
    expect(fake.requests[0]!.path).toBe("/api/v4/projects/infra%2Fvms/pipeline");
    expect(created.project_id).toBe(7);
    expect(fake.pipelines[0]!.projectId).toBe(7);
    const shown = await api.Pipelines.show("infra/vms", created.id);
    expect(shown).toMatchObject({ id: created.id, status: "created", name: null });
  });

  it("accepts an OAuth-style Bearer token as well as PRIVATE-TOKEN", async () => {
    const { fake } = await start();
    const bearer = new Gitlab({ host: fake.url, oauthToken: token });
    await createPipeline(bearer, 7, "main", { inputs: { vm_name: "a", vm_ip: "10.0.0.8/24" } });
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${token}`);
    expect(fake.pipelines).toHaveLength(1);
  });

  it("creates the destroy path's jobs for action=destroy", async () => {
    const { fake, api } = await start();
    await createPipeline(api, 7, "main", {
      inputs: { action: "destroy", vm_name: "a", vm_ip: "10.0.0.9/24" },
    });
    expect(fake.pipelines[0]!.jobs.map((j) => j.name)).toStrictEqual([
      "tf:validate",
      "notify:destroy",
      "tf:destroy",
    ]);
  });
});

describe("fake GitLab: errors as gitbeaker callers see them", () => {
  const valid = { inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" } };

  it("answers a revoked token with 401", async () => {
    const { fake, api } = await start();
    fake.setTokenValid(false);
    expect(await failureOf(createPipeline(api, 7, "main", valid))).toStrictEqual({
      status: 401,
      description: "401 Unauthorized",
    });
    fake.setTokenValid(true);
    await expect(createPipeline(api, 7, "main", valid)).resolves.toMatchObject({
      status: "created",
    });
  });

  it("answers a token that has been rotated away with 401", async () => {
    const { fake, api } = await start();
    fake.rotateToken("glpat-rotated-000000000001");
    expect((await failureOf(createPipeline(api, 7, "main", valid))).status).toBe(401);
    const rotated = new Gitlab({ host: fake.url, token: "glpat-rotated-000000000001" });
    await expect(createPipeline(rotated, 7, "main", valid)).resolves.toMatchObject({ id: 1001 });
  });

  it("answers a reporter with 403", async () => {
    const { api } = await start({ projects: [{ ...project, role: "reporter" }] });
    expect(await failureOf(createPipeline(api, 7, "main", valid))).toStrictEqual({
      status: 403,
      description: "403 Forbidden",
    });
  });

  it("answers an unknown project, by ID or path, with 404", async () => {
    const { fake, api } = await start();
    expect(await failureOf(createPipeline(api, 8, "main", valid))).toStrictEqual({
      status: 404,
      description: "404 Project Not Found",
    });
    expect(await failureOf(createPipeline(api, "infra/other", "main", valid))).toStrictEqual({
      status: 404,
      description: "404 Project Not Found",
    });
    expect(fake.pipelines).toHaveLength(0);
  });

  it("answers an unknown ref with 400 Reference not found", async () => {
    const { fake, api } = await start();
    expect(await failureOf(createPipeline(api, 7, "mian", valid))).toStrictEqual({
      status: 400,
      description: '{"base":["Reference not found"]}',
    });
    expect(fake.pipelines).toHaveLength(0);
  });

  it.each([
    {
      case: "an unknown input",
      inputs: { ...valid.inputs, foo: "bar" },
      message: "unknown input arguments: foo",
    },
    {
      case: "a missing required input",
      inputs: { vm_name: "web-01" },
      message: "`vm_ip` input: required value has not been provided",
    },
    {
      case: "a string for a number input",
      inputs: { ...valid.inputs, vm_id: "105" },
      message: "`vm_id` input: provided value is not a number",
    },
    {
      case: "a value outside the options",
      inputs: { ...valid.inputs, action: "rebuild" },
      message:
        "`action` input: `rebuild` cannot be used because it is not in the list of allowed options",
    },
    {
      case: "several problems (GitLab joins the first three)",
      inputs: { foo: 1, vm_id: "x", action: "rebuild" },
      message:
        "unknown input arguments: foo, `action` input: `rebuild` cannot be used because it is not in the list of allowed options, `vm_name` input: required value has not been provided",
    },
  ])("answers $case with 400 and GitLab's message", async ({ inputs, message }) => {
    const { fake, api } = await start();
    const failure = await failureOf(createPipeline(api, 7, "main", { inputs }));
    expect(failure.status).toBe(400);
    expect(JSON.parse(failure.description)).toStrictEqual({ base: [message] });
    expect(fake.pipelines).toHaveLength(0);
  });

  it("answers inputs for a CI config without spec:inputs with 400", async () => {
    const { api } = await start({ projects: [{ id: 9, path: "infra/legacy" }] });
    const failure = await failureOf(createPipeline(api, 9, "main", { inputs: { vm_name: "a" } }));
    expect(failure).toStrictEqual({
      status: 400,
      description:
        '{"base":["Given inputs not defined in the `spec` section of the included configuration file"]}',
    });
  });

  it("answers variables from a role below the project's minimum with 400", async () => {
    const { api } = await start({
      projects: [
        {
          id: 9,
          path: "infra/legacy",
          role: "developer",
          pipelineVariablesMinimumRole: "maintainer",
        },
      ],
    });
    const failure = await failureOf(
      createPipeline(api, 9, "main", { variables: [{ key: "A", value: "1" }] }),
    );
    expect(failure).toStrictEqual({
      status: 400,
      description: '{"base":["Insufficient permissions to set pipeline variables"]}',
    });
  });

  it("answers a pipeline whose rules leave no job for source api with 400", async () => {
    const { api } = await start({
      projects: [
        {
          id: 9,
          path: "infra/web-only",
          pipeline: {
            stages: ["plan"],
            jobs: [
              { name: "tf:plan", stage: "plan", rules: (c) => (c.source as string) === "web" },
            ],
          },
        },
      ],
    });
    const failure = await failureOf(createPipeline(api, 9, "main", {}));
    expect(failure.status).toBe(400);
    expect(failure.description).toBe(
      '{"base":["Pipeline will not run for the selected trigger. The rules configuration prevented any jobs from being added to the pipeline."]}',
    );
  });

  it("answers a request without ref as Grape does", async () => {
    const { fake } = await start();
    const response = await fetch(`${fake.url}/api/v4/projects/7/pipeline`, {
      method: "POST",
      headers: { "private-token": token, "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toStrictEqual({ error: "ref is missing" });
  });

  it("answers an unknown pipeline with 404 Not found", async () => {
    const { api } = await start();
    expect(await failureOf(api.Pipelines.show(7, 999))).toStrictEqual({
      status: 404,
      description: "404 Not found",
    });
  });

  it("answers without a token: 401 for a POST, 404 Project Not Found for a GET", async () => {
    const { fake } = await start();
    const post = await fetch(`${fake.url}/api/v4/projects/7/pipeline`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ref: "main" }),
    });
    expect(post.status).toBe(401);
    expect(post.headers.get("content-type")).toBe("application/json");
    expect(await post.json()).toStrictEqual({ message: "401 Unauthorized" });
    const get = await fetch(`${fake.url}/api/v4/projects/7/pipelines/1001`);
    expect(get.status).toBe(404);
    expect(await get.json()).toStrictEqual({ message: "404 Project Not Found" });
  });

  it("answers an unknown route with GitLab's catch-all 404", async () => {
    const { fake } = await start();
    const response = await fetch(`${fake.url}/api/v4/projects/7/nothing-here`, {
      headers: { "private-token": token },
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toStrictEqual({ error: "404 Not Found" });
  });
});

describe("fake GitLab: driving a pipeline", () => {
  async function createdPipeline() {
    const started = await start();
    const created = await createPipeline(started.api, 7, "main", {
      inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" },
    });
    return { ...started, id: created.id };
  }

  it("follows the stages: validate → plan → blocked on the manual apply → configure → success", async () => {
    const { fake, api, id } = await createdPipeline();
    const status = async () => (await api.Pipelines.show(7, id)).status;

    fake.setJobStatus(id, "tf:validate", "running");
    expect(await status()).toBe("running");
    fake.setJobStatus(id, "tf:validate", "success");
    expect(fake.job(id, "tf:plan").status).toBe("pending");
    expect(await status()).toBe("running");

    fake.setJobStatus(id, "tf:plan", "running");
    fake.setJobLog(id, "tf:plan", "Plan: 1 to add, 0 to change, 0 to destroy.\n");
    fake.setJobStatus(id, "tf:plan", "success");
    expect(fake.job(id, "tf:apply").status).toBe("manual");
    expect(fake.job(id, "ansible:configure").status).toBe("created");
    const blocked = await api.Pipelines.show(7, id);
    expect(blocked.status).toBe("manual");
    expect(blocked.detailed_status).toMatchObject({
      text: "Blocked",
      label: "waiting for manual action",
    });

    const planJob = fake.job(id, "tf:plan");
    expect(await api.Jobs.showLog(7, planJob.id)).toBe(
      "Plan: 1 to add, 0 to change, 0 to destroy.\n",
    );

    fake.setJobStatus(id, "tf:apply", "running");
    fake.setJobStatus(id, "tf:apply", "success");
    expect(fake.job(id, "ansible:configure").status).toBe("pending");
    fake.setJobStatus(id, "ansible:configure", "running");
    fake.setJobStatus(id, "ansible:configure", "success");
    const done = await api.Pipelines.show(7, id);
    expect(done.status).toBe("success");
    expect(done.finished_at).not.toBeNull();
    expect(done.started_at).not.toBeNull();
  });

  it("fails the pipeline and skips the later stages when the plan fails", async () => {
    const { fake, api, id } = await createdPipeline();
    fake.setJobStatus(id, "tf:validate", "success");
    fake.setJobStatus(id, "tf:plan", "failed");
    expect(fake.job(id, "tf:apply").status).toBe("skipped");
    expect(fake.job(id, "ansible:configure").status).toBe("skipped");
    expect(fake.pipeline(id).status).toBe("failed");
    const jobs = await api.Jobs.all(7, { pipelineId: id });
    expect(jobs.find((j) => j.name === "tf:plan")).toMatchObject({
      status: "failed",
      failure_reason: "script_failure",
    });
  });

  it("is canceled when the running job is canceled", async () => {
    const { fake, id } = await createdPipeline();
    fake.setJobStatus(id, "tf:validate", "running");
    fake.setJobStatus(id, "tf:validate", "canceled");
    expect(fake.pipeline(id).status).toBe("canceled");
  });

  it("lists a pipeline's jobs newest first, with GitLab's pagination headers", async () => {
    const { fake, api, id } = await createdPipeline();
    const response = await fetch(`${fake.url}/api/v4/projects/7/pipelines/${id}/jobs?per_page=3`, {
      headers: { "private-token": token },
    });
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(
      Object.fromEntries(
        ["x-total", "x-total-pages", "x-per-page", "x-page", "x-next-page", "x-prev-page"].map(
          (h) => [h, response.headers.get(h)],
        ),
      ),
    ).toStrictEqual({
      "x-total": "4",
      "x-total-pages": "2",
      "x-per-page": "3",
      "x-page": "1",
      "x-next-page": "2",
      "x-prev-page": "",
    });
    const link = response.headers.get("link") ?? "";
    expect(link).toContain(
      `<${fake.url}/api/v4/projects/7/pipelines/${id}/jobs?per_page=3&page=2>; rel="next"`,
    );
    expect(link).toContain('rel="first"');
    expect(link).toContain('rel="last"');
    const firstPage = (await response.json()) as { name: string }[];
    expect(firstPage.map((j) => j.name)).toStrictEqual([
      "ansible:configure",
      "tf:apply",
      "tf:plan",
    ]);

    // gitbeaker follows the `link` header to the last page.
    const all = await api.Jobs.all(7, { pipelineId: id, perPage: 3 });
    expect(all.map((j) => j.name)).toStrictEqual([
      "ansible:configure",
      "tf:apply",
      "tf:plan",
      "tf:validate",
    ]);
  });

  it("filters jobs by scope", async () => {
    const { fake, api, id } = await createdPipeline();
    fake.setJobStatus(id, "tf:validate", "success");
    const pending = await api.Jobs.all(7, { pipelineId: id, scope: "pending" });
    expect(pending.map((j) => j.name)).toStrictEqual(["tf:plan"]);
  });
});

describe("fake GitLab: injected failures", () => {
  const valid = { inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" } };

  it("answers 429 with Retry-After and RateLimit headers; gitbeaker retries and succeeds", async () => {
    const { fake, api } = await start();
    fake.failNext({ method: "POST", path: /\/pipeline$/ }, { status: 429, retryAfter: 30 });
    const created = await createPipeline(api, 7, "main", valid);
    expect(created.status).toBe("created");
    expect(fake.requestsTo("POST", /\/projects\/7\/pipeline$/)).toHaveLength(2);
    expect(fake.pipelines).toHaveLength(1);

    fake.failNext({ path: /pipelines/ }, { status: 429, retryAfter: 30 });
    const throttled = await fetch(`${fake.url}/api/v4/projects/7/pipelines/${created.id}`, {
      headers: { "private-token": token },
    });
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get("retry-after")).toBe("30");
    expect(throttled.headers.get("ratelimit-remaining")).toBe("0");
    expect(throttled.headers.get("ratelimit-name")).toBe("throttle_authenticated_api");
    expect(Number(throttled.headers.get("ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000);
    expect(throttled.headers.get("ratelimit-resettime")).toMatch(/GMT$/);
    expect(await throttled.text()).toBe("Retry later\n");
  });

  it("answers an injected status with a GitLab body, or the body given", async () => {
    const { fake, api } = await start();
    fake.failNext({ path: /\/pipeline$/ }, { status: 500 });
    expect(await failureOf(createPipeline(api, 7, "main", valid))).toStrictEqual({
      status: 500,
      description: "500 Internal Server Error",
    });
    fake.failNext({ path: /\/pipeline$/ }, { status: 409, body: { message: "Ref is locked" } });
    expect(await failureOf(createPipeline(api, 7, "main", valid))).toStrictEqual({
      status: 409,
      description: "Ref is locked",
    });
    expect(fake.pipelines).toHaveLength(0);
  });

  it("delays past the client's timeout, then still creates the pipeline and finishes cleanly", async () => {
    const { fake } = await start();
    // The request has to reach the fake before the client gives up, however busy the machine.
    const impatient = new Gitlab({ host: fake.url, token, queryTimeout: 1_000 });
    fake.failNext({ path: /\/pipeline$/ }, { delayMs: 2_000 });
    await expect(createPipeline(impatient, 7, "main", valid)).rejects.toBeInstanceOf(
      GitbeakerTimeoutError,
    );
    expect(fake.pipelines).toHaveLength(0);
    await fake.settled();
    // Like GitLab, the request took effect although nobody heard the answer.
    expect(fake.pipelines).toHaveLength(1);
  });

  it("drops the connection on reset", async () => {
    const { fake, api } = await start();
    fake.failNext({ path: /\/pipeline$/ }, "reset");
    await expect(createPipeline(api, 7, "main", valid)).rejects.toThrow(/fetch failed/);
    expect(fake.pipelines).toHaveLength(0);
    await expect(createPipeline(api, 7, "main", valid)).resolves.toMatchObject({
      status: "created",
    });
  });

  it("fails the given number of matching requests only", async () => {
    const { fake, api } = await start();
    fake.failNext({ method: "GET", path: /\/pipelines\// }, { status: 503 }, { times: 2 });
    const created = await createPipeline(api, 7, "main", valid);
    expect((await failureOf(api.Pipelines.show(7, created.id))).status).toBe(503);
    expect((await failureOf(api.Pipelines.show(7, created.id))).status).toBe(503);
    await expect(api.Pipelines.show(7, created.id)).resolves.toMatchObject({ id: created.id });
  });
});

// ---------------------------------------------------------------------------------------------
// The simulated runner, and the endpoints the tracker uses

/** A clock the test moves by hand, so timestamps and durations are exact. */
function manualClock(start = "2026-01-05T09:00:00.000Z") {
  let now = new Date(start);
  return {
    now: () => now,
    tick(seconds: number): void {
      now = new Date(now.getTime() + seconds * 1000);
    },
    at: (seconds: number): string => new Date(Date.parse(start) + seconds * 1000).toISOString(),
  };
}

const VM = { inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" } };

async function startWithPipeline(options: Partial<FakeGitlabOptions> = {}) {
  const started = await start(options);
  const created = await createPipeline(started.api, 7, "main", VM);
  return { ...started, id: created.id };
}

/** The pipeline's status and its jobs' (latest runs), by name. */
function snapshot(fakeGitlab: FakeGitlab, id: number): [string, Record<string, JobStatus>] {
  const pipeline = fakeGitlab.pipeline(id);
  return [
    pipeline.status,
    Object.fromEntries(pipeline.jobs.filter((j) => !j.retried).map((j) => [j.name, j.status])),
  ];
}

/** Advances until `job` stops running (or waits as manual). */
function runUntilSettled(fakeGitlab: FakeGitlab, id: number, job: string): void {
  for (let i = 0; i < 20; i++) {
    const status = fakeGitlab.job(id, job).status;
    if (["success", "failed", "canceled", "skipped", "manual"].includes(status)) return;
    fakeGitlab.advance(id);
  }
  throw new Error(`${job} never finished`);
}

async function raw(fakeGitlab: FakeGitlab, method: string, pathAndQuery: string, authed = true) {
  const response = await fetch(`${fakeGitlab.url}/api/v4${pathAndQuery}`, {
    method,
    headers: authed ? { "private-token": token } : {},
  });
  return { response, text: await response.text() };
}

describe("fake GitLab: the simulated runner", () => {
  it("runs validate and plan, waits on the manual apply until it is played, then applies and configures", async () => {
    const clock = manualClock();
    const { fake, api, id } = await startWithPipeline({ now: clock.now });
    const step = () => {
      clock.tick(5);
      fake.advance(id);
      return snapshot(fake, id);
    };
    const jobs = (validate: string, plan: string, apply: string, configure: string) => ({
      "tf:validate": validate,
      "tf:plan": plan,
      "tf:apply": apply,
      "ansible:configure": configure,
    });

    expect(snapshot(fake, id)).toStrictEqual([
      "created",
      jobs("created", "created", "created", "created"),
    ]);
    expect(step()).toStrictEqual(["pending", jobs("pending", "created", "created", "created")]);
    expect(step()).toStrictEqual(["running", jobs("running", "created", "created", "created")]);
    expect(step()).toStrictEqual(["running", jobs("success", "pending", "created", "created")]);
    expect(step()).toStrictEqual(["running", jobs("success", "running", "created", "created")]);
    expect(step()).toStrictEqual(["manual", jobs("success", "success", "manual", "created")]);
    // Blocked: nothing moves until someone plays the apply job.
    expect(fake.advance(id)).toStrictEqual([]);
    expect(fake.advance(id)).toStrictEqual([]);

    const blocked = await api.Pipelines.show(7, id);
    expect(blocked).toMatchObject({
      status: "manual",
      started_at: clock.at(10),
      finished_at: null,
      duration: 10, // validate 10→15 and plan 20→25; waiting is not counted
      queued_duration: 10,
      updated_at: clock.at(25),
    });
    const plan = await api.Jobs.show(7, fake.job(id, "tf:plan").id);
    expect(plan).toMatchObject({
      status: "success",
      started_at: clock.at(20),
      finished_at: clock.at(25),
      duration: 5,
      queued_duration: 5,
    });

    clock.tick(5);
    const apply = fake.job(id, "tf:apply");
    const played = await api.Jobs.play(7, apply.id);
    expect(played).toMatchObject({ id: apply.id, name: "tf:apply", status: "pending" });
    expect(snapshot(fake, id)).toStrictEqual([
      "running",
      jobs("success", "success", "pending", "created"),
    ]);
    expect(step()).toStrictEqual(["running", jobs("success", "success", "running", "created")]);
    expect(step()).toStrictEqual(["running", jobs("success", "success", "success", "pending")]);
    expect(step()).toStrictEqual(["running", jobs("success", "success", "success", "running")]);
    expect(step()).toStrictEqual(["success", jobs("success", "success", "success", "success")]);
    expect(fake.advance(id)).toStrictEqual([]);

    const done = await api.Pipelines.show(7, id);
    expect(done).toMatchObject({
      status: "success",
      started_at: clock.at(10), // playing the manual job does not restart the pipeline
      finished_at: clock.at(50),
      duration: 20,
      updated_at: clock.at(50),
    });
  });

  it("retries a finished job as a new run, which the jobs list shows instead of the old one", async () => {
    const { fake, api, id } = await startWithPipeline();
    for (let i = 0; i < 10 && fake.job(id, "tf:plan").status !== "success"; i += 1)
      fake.advance(id);
    const first = fake.job(id, "tf:plan");
    const retried = await api.Jobs.retry(7, first.id);
    expect(retried).toMatchObject({ name: "tf:plan", status: "pending" });
    expect(retried.id).not.toBe(first.id);
    const listed = await api.Jobs.all(7, { pipelineId: id });
    expect(listed.filter((job) => job.name === "tf:plan").map((job) => job.id)).toEqual([
      retried.id,
    ]);
    // A manual job is played, not retried.
    expect(await failureOf(api.Jobs.retry(7, fake.job(id, "tf:apply").id))).toMatchObject({
      status: 403,
    });
  });

  it("reports each step's job transitions", async () => {
    const { fake, id } = await startWithPipeline();
    const validate = fake.job(id, "tf:validate").id;
    const plan = fake.job(id, "tf:plan").id;
    expect(fake.advance(id)).toStrictEqual([
      { jobId: validate, jobName: "tf:validate", from: "created", to: "pending" },
    ]);
    fake.advance(id);
    expect(fake.advance(id)).toStrictEqual([
      { jobId: validate, jobName: "tf:validate", from: "running", to: "success" },
      { jobId: plan, jobName: "tf:plan", from: "created", to: "pending" },
    ]);
  });

  it("keeps the pipeline's updated_at when only its jobs change, as GitLab's pipeline row does", async () => {
    const clock = manualClock();
    const { fake, id } = await startWithPipeline({ now: clock.now });
    clock.tick(5);
    fake.advance(id); // pipeline pending
    clock.tick(5);
    fake.advance(id); // pipeline running
    const running = fake.pipeline(id).updatedAt;
    clock.tick(5);
    fake.advance(id); // validate succeeds, plan pending: still running
    clock.tick(5);
    fake.advance(id); // plan running
    expect(fake.pipeline(id).updatedAt).toBe(running);
    clock.tick(5);
    fake.advance(id); // blocked on the manual apply
    expect(fake.pipeline(id).updatedAt).toBe(clock.at(25));
  });

  it("writes each job's log when it finishes, and a partial one while it runs", async () => {
    const { fake, api, id } = await startWithPipeline();
    runUntilSettled(fake, id, "tf:validate");
    fake.advance(id); // plan running
    const planId = fake.job(id, "tf:plan").id;
    const partial = await api.Jobs.showLog(7, planId);
    expect(partial).toContain('Executing "step_script" stage of the job script');
    expect(partial).toContain("$ terraform init");
    expect(partial).not.toContain("Plan:");
    expect(partial).not.toContain("Job succeeded");

    fake.advance(id);
    const log = await api.Jobs.showLog(7, planId);
    expect(isRunnerTrace(log)).toBe(true);
    expect(log).toContain("# proxmox_virtual_environment_vm.vm will be created");
    expect(log).toContain('+ name                    = "web-01"');
    expect(log).toContain('+ address = "192.168.1.50/24"');
    expect(log).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    expect(log.endsWith("Job succeeded\x1b[0;m\n")).toBe(true);

    fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    runUntilSettled(fake, id, "ansible:configure");
    const configure = fake.job(id, "ansible:configure");
    expect(configure.status).toBe("success");
    expect(configure.log).toContain("$ ansible-playbook -i inventory.ini site.yml");
    expect(configure.log).toMatch(/PLAY RECAP \*+\n.*web-01.* : .*ok=5 .*changed=2 .*failed=0 /);
  });

  it("stores the apply job's vm_ip.txt artifact from the pipeline's vm_ip when it succeeds", async () => {
    const { fake, id } = await startWithPipeline();
    runUntilSettled(fake, id, "tf:plan");
    // The plan job keeps the plan file for the apply job (`terraform plan -out=tfplan`).
    expect([...fake.job(id, "tf:plan").artifacts.keys()]).toStrictEqual(["tfplan"]);
    fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    expect(Object.fromEntries(fake.job(id, "tf:apply").artifacts)).toStrictEqual({
      "vm_ip.txt": "192.168.1.50",
    });
  });

  it("fails a job when asked: its log ends with the runner's error and the later stages are skipped", async () => {
    const { fake, api, id } = await startWithPipeline();
    fake.failJob(id, "tf:plan", "runner_system_failure");
    runUntilSettled(fake, id, "tf:plan");
    expect(snapshot(fake, id)).toStrictEqual([
      "failed",
      {
        "tf:validate": "success",
        "tf:plan": "failed",
        "tf:apply": "skipped",
        "ansible:configure": "skipped",
      },
    ]);
    const plan = await api.Jobs.show(7, fake.job(id, "tf:plan").id);
    expect(plan).toMatchObject({ status: "failed", failure_reason: "runner_system_failure" });
    const log = fake.job(id, "tf:plan").log;
    expect(log).toContain("│ Error: ");
    expect(log.endsWith("ERROR: Job failed: exit code 1\n\x1b[0;m\n")).toBe(true);
    expect(log).not.toContain("Job succeeded");
    expect(fake.pipeline(id).finishedAt).not.toBeNull();
    expect(() => {
      fake.failJob(id, "tf:plan");
    }).toThrow(/already finished as failed/);
  });

  it("fails the configure job with the default failing Ansible run", async () => {
    const { fake, id } = await startWithPipeline();
    fake.failJob(id, "ansible:configure");
    runUntilSettled(fake, id, "tf:plan");
    fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    runUntilSettled(fake, id, "ansible:configure");
    const configure = fake.job(id, "ansible:configure");
    expect(configure).toMatchObject({ status: "failed", failureReason: "script_failure" });
    expect(configure.log).toContain("fatal: [web-01]: FAILED!");
    expect(configure.log).toContain("ERROR: Job failed: exit code 2");
    expect(fake.pipeline(id).status).toBe("failed");
  });

  it("wraps the outputs given for a project or a pipeline, and uses a whole runner log as it is", async () => {
    const whole = planTrace("Plan: 0 to add, 0 to change, 0 to destroy.\n");
    const { fake, api, id } = await startWithPipeline({
      projects: [
        {
          ...project,
          traces: {
            "tf:validate": "Success! The configuration is valid, and says so.\n",
            "tf:plan": "from the project\n",
          },
        },
      ],
    });
    fake.setTraces(id, { "tf:plan": whole });
    runUntilSettled(fake, id, "tf:plan");
    expect(fake.job(id, "tf:validate").log).toContain("and says so.");
    expect(fake.job(id, "tf:validate").log).toContain("$ terraform validate -no-color");
    expect(await api.Jobs.showLog(7, fake.job(id, "tf:plan").id)).toBe(whole);

    const second = await createPipeline(api, 7, "main", VM);
    runUntilSettled(fake, second.id, "tf:plan");
    expect(fake.job(second.id, "tf:plan").log).toContain("from the project\n");
  });

  it("fails a job whose given output shows its program failing, as the runner would", async () => {
    const failing = syntheticAnsibleRun({
      tasks: [{ name: "Start it", result: "fatal", msg: "no such service" }],
    });
    const { fake, id } = await startWithPipeline({
      projects: [{ ...project, traces: { "ansible:configure": failing } }],
    });
    runUntilSettled(fake, id, "tf:plan");
    fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    runUntilSettled(fake, id, "ansible:configure");
    expect(fake.job(id, "ansible:configure")).toMatchObject({
      status: "failed",
      failureReason: "script_failure",
    });
  });

  it("moves every pipeline on its own with autoAdvance, until stopped", async () => {
    const { fake, id } = await startWithPipeline();
    fake.autoAdvance({ intervalMs: 5 });
    await waitFor(
      () => (fake.pipeline(id).status === "manual" ? true : undefined),
      "the pipeline to wait on its manual job",
      { timeoutMs: 2_000, intervalMs: 5 },
    );
    fake.stopAutoAdvance();
    fake.playJob(id, "tf:apply");

    // A second GitLab on the same timers moves its played job on: the first had as many chances.
    const other = await startWithPipeline();
    other.fake.autoAdvance({ intervalMs: 5 });
    await waitFor(
      () => (other.fake.pipeline(other.id).status === "manual" ? true : undefined),
      "the second pipeline to wait on its manual job",
      { timeoutMs: 2_000, intervalMs: 5 },
    );
    other.fake.playJob(other.id, "tf:apply");
    await waitFor(
      () => (other.fake.job(other.id, "tf:apply").status !== "pending" ? true : undefined),
      "the second pipeline's apply to start",
      { timeoutMs: 2_000, intervalMs: 5 },
    );
    other.fake.stopAutoAdvance();
    expect(fake.job(id, "tf:apply").status).toBe("pending");
  });

  it("counts the requests a client makes after a mark", async () => {
    const { fake, api, id } = await startWithPipeline();
    const mark = fake.mark();
    await api.Pipelines.all(7, { updatedAfter: "2026-01-01T00:00:00Z" });
    await api.Jobs.all(7, { pipelineId: id });
    expect(fake.requestsSince(mark).map((r) => `${r.method} ${r.path}`)).toStrictEqual([
      "GET /api/v4/projects/7/pipelines",
      `GET /api/v4/projects/7/pipelines/${id}/jobs`,
    ]);
    expect(fake.requestsSince(fake.mark())).toStrictEqual([]);
  });
});

describe("fake GitLab: listing pipelines", () => {
  it("lists the pipelines updated after a time, with gitbeaker's updatedAfter, oldest change first", async () => {
    const clock = manualClock();
    const { fake, api } = await start({ now: clock.now });
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await createPipeline(api, 7, "main", VM)).id);
      clock.tick(60);
    }
    const since = clock.now().toISOString();
    clock.tick(5);
    fake.advance(ids[0]!); // created → pending: the pipeline changes
    clock.tick(5);
    fake.advance(ids[2]!);

    const changed = await api.Pipelines.all(7, {
      updatedAfter: since,
      ref: "main",
      orderBy: "updated_at",
      sort: "asc",
    });
    expect(changed.map((p) => [p.id, p.status, p.updated_at])).toStrictEqual([
      [ids[0], "pending", clock.at(185)],
      [ids[2], "pending", clock.at(190)],
    ]);
    expect(fake.requests.at(-1)!.query.toString()).toBe(
      `updated_after=${encodeURIComponent(since)}&ref=main&order_by=updated_at&sort=asc`,
    );
    expect(changed[0]).toStrictEqual({
      id: ids[0],
      iid: 1,
      project_id: 7,
      sha: fake.pipeline(ids[0]!).sha,
      ref: "main",
      status: "pending",
      source: "api",
      created_at: clock.at(0),
      updated_at: clock.at(185),
      web_url: `${fake.url}/infra/vms/-/pipelines/${ids[0]}`,
      name: null,
    });
    // The bound is inclusive, as GitLab's `updated_at >= ?`.
    const inclusive = await api.Pipelines.all(7, { updatedAfter: clock.at(190) });
    expect(inclusive.map((p) => p.id)).toStrictEqual([ids[2]]);
    const before = await api.Pipelines.all(7, { updatedBefore: clock.at(120) });
    expect(before.map((p) => p.id)).toStrictEqual([ids[1]]);
  });

  it("filters by status, ref and source, orders by id newest first by default, and pages like GitLab", async () => {
    const { fake, api } = await start({
      projects: [{ ...project, branches: ["feature"] }],
    });
    const a = (await createPipeline(api, 7, "main", VM)).id;
    const b = (await createPipeline(api, 7, "feature", VM)).id;
    const c = (await createPipeline(api, 7, "main", VM)).id;
    fake.advance(c);

    expect((await api.Pipelines.all(7)).map((p) => p.id)).toStrictEqual([c, b, a]);
    expect((await api.Pipelines.all(7, { sort: "asc" })).map((p) => p.id)).toStrictEqual([a, b, c]);
    expect((await api.Pipelines.all(7, { ref: "main" })).map((p) => p.id)).toStrictEqual([c, a]);
    expect((await api.Pipelines.all(7, { status: "pending" })).map((p) => p.id)).toStrictEqual([c]);
    expect((await api.Pipelines.all(7, { source: "web" })).map((p) => p.id)).toStrictEqual([]);
    expect((await api.Pipelines.all(7, { source: "api" })).map((p) => p.id)).toHaveLength(3);

    const { response, text } = await raw(fake, "GET", "/projects/7/pipelines?per_page=2");
    expect(response.headers.get("x-total")).toBe("3");
    expect(response.headers.get("x-next-page")).toBe("2");
    expect((JSON.parse(text) as { id: number }[]).map((p) => p.id)).toStrictEqual([c, b]);
    const mark = fake.mark();
    expect((await api.Pipelines.all(7, { perPage: 2 })).map((p) => p.id)).toStrictEqual([c, b, a]);
    expect(fake.requestsSince(mark)).toHaveLength(2); // gitbeaker follows the `link` header
  });

  it("answers bad parameters as Grape does, every problem in one message", async () => {
    const { fake } = await start();
    const bad = await raw(
      fake,
      "GET",
      "/projects/7/pipelines?order_by=created_at&sort=up&updated_after=yesterday",
    );
    expect(bad.response.status).toBe(400);
    expect(JSON.parse(bad.text)).toStrictEqual({
      error:
        "updated_after is invalid, order_by does not have a valid value, sort does not have a valid value",
    });
    const status = await raw(fake, "GET", "/projects/7/pipelines?status=done");
    expect(JSON.parse(status.text)).toStrictEqual({ error: "status does not have a valid value" });
  });

  it("answers a list without a token as a private project: 404 Project Not Found", async () => {
    const { fake } = await start();
    const { response, text } = await raw(fake, "GET", "/projects/7/pipelines", false);
    expect(response.status).toBe(404);
    expect(JSON.parse(text)).toStrictEqual({ message: "404 Project Not Found" });
  });
});

describe("fake GitLab: playing a manual job", () => {
  async function blockedPipeline(options: Partial<FakeGitlabOptions> = {}) {
    const started = await startWithPipeline(options);
    runUntilSettled(started.fake, started.id, "tf:plan");
    return started;
  }

  it("plays the blocked apply job once; a second play is refused as GitLab refuses it", async () => {
    const { fake, api, id } = await blockedPipeline();
    const apply = fake.job(id, "tf:apply").id;
    const first = await raw(fake, "POST", `/projects/7/jobs/${apply}/play`);
    expect(first.response.status).toBe(200);
    expect(JSON.parse(first.text)).toMatchObject({ id: apply, status: "pending" });

    expect(await failureOf(api.Jobs.play(7, apply))).toStrictEqual({
      status: 400,
      description: "400 Bad request - Unplayable Job",
    });
    expect(fake.pipeline(id).jobs.filter((j) => j.name === "tf:apply")).toHaveLength(1);
  });

  it("refuses to play a job that is not manual, or not yet reached", async () => {
    const { fake, api, id } = await blockedPipeline();
    for (const name of ["tf:validate", "ansible:configure"]) {
      expect(await failureOf(api.Jobs.play(7, fake.job(id, name).id))).toStrictEqual({
        status: 400,
        description: "400 Bad request - Unplayable Job",
      });
    }
    expect(fake.job(id, "ansible:configure").status).toBe("created");
  });

  it("retries a manual job that already ran when it is played again: a new job runs", async () => {
    const { fake, api, id } = await blockedPipeline();
    const first = fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    runUntilSettled(fake, id, "ansible:configure");
    expect(fake.pipeline(id).status).toBe("success");

    const again = await api.Jobs.play(7, first.id);
    expect(again.id).not.toBe(first.id);
    expect(again).toMatchObject({ name: "tf:apply", status: "pending" });
    expect(fake.pipeline(id).status).toBe("running");
    const listed = await api.Jobs.all(7, { pipelineId: id });
    expect(listed.filter((j) => j.name === "tf:apply").map((j) => j.id)).toStrictEqual([again.id]);
    const withRetried = await raw(
      fake,
      "GET",
      `/projects/7/pipelines/${id}/jobs?include_retried=true`,
    );
    expect(
      (JSON.parse(withRetried.text) as { id: number; name: string }[])
        .filter((j) => j.name === "tf:apply")
        .map((j) => j.id),
    ).toStrictEqual([again.id, first.id]);
  });

  it("answers a reporter with 403 and leaves the job waiting", async () => {
    const { fake, api, id } = await blockedPipeline();
    fake.setRole(7, "reporter");
    expect(await failureOf(api.Jobs.play(7, fake.job(id, "tf:apply").id))).toStrictEqual({
      status: 403,
      description: "403 Forbidden",
    });
    expect(fake.job(id, "tf:apply").status).toBe("manual");
  });

  it("answers a developer with 403 on a branch only maintainers may merge to", async () => {
    const protectedMain = { ...project, protectedBranches: { main: "maintainer" as const } };
    const { fake, api, id } = await blockedPipeline({
      projects: [{ ...protectedMain, role: "maintainer" }],
    });
    fake.setRole(7, "developer");
    expect(await failureOf(api.Jobs.play(7, fake.job(id, "tf:apply").id))).toStrictEqual({
      status: 403,
      description: "403 Forbidden",
    });
    expect((await failureOf(api.Pipelines.cancel(7, id))).status).toBe(403);
    // Nor may a developer start a pipeline there.
    expect(await failureOf(createPipeline(api, 7, "main", VM))).toStrictEqual({
      status: 400,
      description:
        '{"base":["You do not have sufficient permission to run a pipeline on \'main\'. Please select a different branch or contact your administrator for assistance."]}',
    });
    fake.setRole(7, "maintainer");
    const played = await api.Jobs.play(7, fake.job(id, "tf:apply").id);
    expect(played.status).toBe("pending");
  });

  it("answers a play without a token with 401, as the Jobs API does", async () => {
    const { fake, id } = await blockedPipeline();
    const { response } = await raw(
      fake,
      "POST",
      `/projects/7/jobs/${fake.job(id, "tf:apply").id}/play`,
      false,
    );
    expect(response.status).toBe(401);
  });
});

describe("fake GitLab: canceling a pipeline", () => {
  it("cancels the running, pending and created jobs and answers 200 with the pipeline", async () => {
    const { fake, api, id } = await startWithPipeline();
    fake.advance(id);
    fake.advance(id); // validate running
    const { response, text } = await raw(fake, "POST", `/projects/7/pipelines/${id}/cancel`);
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ id, status: "canceled" });
    expect(snapshot(fake, id)).toStrictEqual([
      "canceled",
      {
        "tf:validate": "canceled",
        "tf:plan": "canceled",
        "tf:apply": "canceled",
        "ansible:configure": "canceled",
      },
    ]);
    const plan = await api.Jobs.show(7, fake.job(id, "tf:plan").id);
    expect(plan).toMatchObject({ status: "canceled", started_at: null });
    expect(plan.finished_at).not.toBeNull();
    expect(fake.advance(id)).toStrictEqual([]);
  });

  it("leaves a blocked manual job playable: the jobs after it are canceled and the pipeline still shows manual", async () => {
    // Ci::CancelPipelineService cancels CANCELABLE_STATUSES only; `manual` is not one of them.
    const { fake, api, id } = await startWithPipeline();
    runUntilSettled(fake, id, "tf:plan");
    const canceled = await api.Pipelines.cancel(7, id);
    expect(canceled.status).toBe("manual");
    expect(snapshot(fake, id)).toStrictEqual([
      "manual",
      {
        "tf:validate": "success",
        "tf:plan": "success",
        "tf:apply": "manual",
        "ansible:configure": "canceled",
      },
    ]);
    const played = await api.Jobs.play(7, fake.job(id, "tf:apply").id);
    expect(played.status).toBe("pending");
  });

  it("answers 200 with the unchanged pipeline when nothing is left to cancel", async () => {
    const { fake, api, id } = await startWithPipeline();
    fake.failJob(id, "tf:validate");
    runUntilSettled(fake, id, "tf:validate");
    const before = fake.pipeline(id).updatedAt;
    await expect(api.Pipelines.cancel(7, id)).resolves.toMatchObject({ id, status: "failed" });
    expect(fake.pipeline(id).updatedAt).toBe(before);
  });

  it("answers a reporter with 403 and an unknown pipeline with 404", async () => {
    const { fake, api, id } = await startWithPipeline();
    fake.setRole(7, "reporter");
    expect(await failureOf(api.Pipelines.cancel(7, id))).toStrictEqual({
      status: 403,
      description: "403 Forbidden",
    });
    expect(fake.pipeline(id).status).toBe("created");
    expect((await failureOf(api.Pipelines.cancel(7, 999))).status).toBe(404);
  });
});

describe("fake GitLab: job logs and artifacts", () => {
  it("serves a log as text/plain with GitLab's Content-Disposition", async () => {
    const { fake, id } = await startWithPipeline();
    runUntilSettled(fake, id, "tf:validate");
    const job = fake.job(id, "tf:validate");
    const { response, text } = await raw(fake, "GET", `/projects/7/jobs/${job.id}/trace`);
    expect(response.headers.get("content-type")).toBe("text/plain");
    expect(response.headers.get("content-disposition")).toBe(`infile; filename="${job.id}.log"`);
    expect(text).toBe(job.log);
  });

  it("serves a long log whole and exact, slice after slice, characters cut nowhere", async () => {
    // 256 K characters a slice: these lines put surrogate pairs and multi-byte characters across
    // every slice edge.
    const line = `[DEBUG] nœud ${"🖥".repeat(40)}\n`;
    const whole = planTrace(`${line.repeat(20_000)}Plan: 1 to add, 0 to change, 0 to destroy.\n`);
    const { fake, id } = await startWithPipeline({
      projects: [{ ...project, traces: { "tf:plan": whole } }],
    });
    runUntilSettled(fake, id, "tf:plan");
    const job = fake.job(id, "tf:plan");
    const { response, text } = await raw(fake, "GET", `/projects/7/jobs/${job.id}/trace`);
    expect(Number(response.headers.get("content-length"))).toBe(Buffer.byteLength(job.log));
    expect(text.length).toBeGreaterThan(1_500_000);
    expect(text).toBe(job.log);
  });

  it("serves one artifact file with gitbeaker's downloadArchive and the type its extension gives", async () => {
    const { fake, api, id } = await startWithPipeline();
    runUntilSettled(fake, id, "tf:plan");
    fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    const apply = fake.job(id, "tf:apply");
    fake.setJobArtifact(id, "tf:apply", "out/vm.json", '{"vm_id":105}');
    fake.setJobArtifact(id, "tf:apply", "tfplan", "binary-ish");

    const path = `/projects/7/jobs/${apply.id}/artifacts/vm_ip.txt`;
    const { response, text } = await raw(fake, "GET", path);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(response.headers.get("content-disposition")).toBe('attachment; filename="vm_ip.txt"');
    expect(text).toBe("192.168.1.50");

    // gitbeaker hands a text/* answer back as a string, JSON parsed, anything else as a Blob,
    // whatever its type for downloadArchive says.
    const txt: unknown = await api.JobArtifacts.downloadArchive(7, {
      jobId: apply.id,
      artifactPath: "vm_ip.txt",
    });
    expect(txt).toBe("192.168.1.50");
    const nested: unknown = await api.JobArtifacts.downloadArchive(7, {
      jobId: apply.id,
      artifactPath: "out/vm.json",
    });
    expect(nested).toStrictEqual({ vm_id: 105 });
    const binary = await api.JobArtifacts.downloadArchive(7, {
      jobId: apply.id,
      artifactPath: "tfplan",
    });
    expect(binary).toBeInstanceOf(Blob);
    expect(await binary.text()).toBe("binary-ish");
    expect(fake.requests.at(-1)!.path).toBe(`/api/v4/projects/7/jobs/${apply.id}/artifacts/tfplan`);
  });

  it("answers a missing artifact file with Workhorse's plain 404, and a job without artifacts with Rails' JSON 404", async () => {
    const { fake, api, id } = await startWithPipeline();
    runUntilSettled(fake, id, "tf:plan");
    // tf:validate keeps no artifacts (tf:plan keeps tfplan).
    const validate = fake.job(id, "tf:validate");
    expect(
      await failureOf(
        api.JobArtifacts.downloadArchive(7, { jobId: validate.id, artifactPath: "vm_ip.txt" }),
      ),
    ).toStrictEqual({ status: 404, description: "404 Not Found" });

    const plan = fake.job(id, "tf:plan");
    fake.setJobArtifact(id, "tf:plan", "plan.txt", "…");
    const missing = await raw(fake, "GET", `/projects/7/jobs/${plan.id}/artifacts/vm_ip.txt`);
    expect(missing.response.status).toBe(404);
    expect(missing.response.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(missing.text).toBe("404 page not found\n");
  });

  it("shows the archive in the job's JSON once the job has artifacts", async () => {
    const { fake, api, id } = await startWithPipeline();
    runUntilSettled(fake, id, "tf:plan");
    fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    const apply = await api.Jobs.show(7, fake.job(id, "tf:apply").id);
    // vm_ip.txt stored uncompressed: 22 + (30 + 9 + 12) + (46 + 9) bytes.
    expect(apply.artifacts_file).toStrictEqual({ filename: "artifacts.zip", size: 128 });
    expect(apply.artifacts.map((a) => a.file_type)).toStrictEqual(["archive", "metadata", "trace"]);
    expect(apply.artifacts_expire_at).not.toBeNull();
    const validate = await api.Jobs.show(7, fake.job(id, "tf:validate").id);
    expect(validate).not.toHaveProperty("artifacts_file");
    expect(validate.artifacts.map((a) => a.file_type)).toStrictEqual(["trace"]);
  });
});

describe("fake GitLab: webhooks", () => {
  let receiver: FakeServer | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  async function startReceiver(
    status = 200,
  ): Promise<{ url: string; received: RecordedRequest[] }> {
    const received: RecordedRequest[] = [];
    receiver = await startFakeServer((req, res) => {
      received.push(req);
      res.writeHead(status, { "content-type": "text/plain" });
      res.end(status === 200 ? "ok" : "nope");
    });
    return { url: `${receiver.url}/gitlab/webhook`, received };
  }

  const bodyOfHook = (req: RecordedRequest) => JSON.parse(req.body) as Record<string, unknown>;

  it("POSTs a Job Hook and a Pipeline Hook with X-Gitlab-Token on every status change, in order", async () => {
    const { url, received } = await startReceiver();
    const { fake, api } = await start();
    fake.deliverHooks({ url, secretToken: "hook-secret" });
    const { id } = await createPipeline(api, 7, "main", VM);
    runUntilSettled(fake, id, "tf:plan");
    fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    runUntilSettled(fake, id, "ansible:configure");
    await fake.settled();

    expect(received).toHaveLength(fake.hookDeliveries.length);
    for (const req of received) {
      expect(req.method).toBe("POST");
      expect(req.path).toBe("/gitlab/webhook");
      expect(req.headers["x-gitlab-token"]).toBe("hook-secret");
      expect(req.headers["content-type"]).toBe("application/json");
      expect(req.headers["user-agent"]).toMatch(/^GitLab\/\d+\.\d+\.\d+$/);
      expect(req.headers["x-gitlab-instance"]).toBe(fake.url);
      expect(req.headers["x-gitlab-event-uuid"]).toMatch(/^[0-9a-f-]{36}$/);
      expect(req.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/);
    }
    const pipelineHooks = received.filter((r) => r.headers["x-gitlab-event"] === "Pipeline Hook");
    expect(
      pipelineHooks.map((r) => (bodyOfHook(r).object_attributes as { status: string }).status),
    ).toStrictEqual(["pending", "running", "manual", "running", "success"]);
    const jobHooks = received.filter((r) => r.headers["x-gitlab-event"] === "Job Hook");
    const byJob = (name: string) =>
      jobHooks
        .map(bodyOfHook)
        .filter((b) => b.build_name === name)
        .map((b) => b.build_status);
    expect(byJob("tf:validate")).toStrictEqual(["created", "pending", "running", "success"]);
    expect(byJob("tf:apply")).toStrictEqual(["created", "manual", "pending", "running", "success"]);
    expect(new Set(received.map((r) => r.headers["x-gitlab-webhook-uuid"])).size).toBe(1);

    const success = bodyOfHook(pipelineHooks.at(-1)!);
    expect(success).toMatchObject({
      object_kind: "pipeline",
      object_attributes: {
        id,
        status: "success",
        detailed_status: "passed",
        stages: ["validate", "plan", "apply", "configure"],
        source: "api",
        ref: "main",
      },
      project: { id: 7, path_with_namespace: "infra/vms" },
    });
    const finishedAt = (success.object_attributes as { finished_at: string }).finished_at;
    expect(finishedAt).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(
      (success.builds as { name: string; status: string; manual: boolean }[]).map((b) => [
        b.name,
        b.status,
        b.manual,
      ]),
    ).toStrictEqual([
      ["tf:validate", "success", false],
      ["tf:plan", "success", false],
      ["tf:apply", "success", true],
      ["ansible:configure", "success", false],
    ]);
    const planHook = jobHooks
      .map(bodyOfHook)
      .find((b) => b.build_name === "tf:plan" && b.build_status === "success")!;
    expect(planHook).toMatchObject({
      object_kind: "build",
      pipeline_id: id,
      project_id: 7,
      build_stage: "plan",
      build_allow_failure: false,
      build_failure_reason: "unknown_failure",
      commit: { id, status: "running" },
    });
    expect(planHook.build_finished_at_iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it("records every delivery with the receiver's answer, or why it could not be made", async () => {
    const { url } = await startReceiver(500);
    const { fake, api } = await start();
    fake.deliverHooks({ url, secretToken: "s", events: ["pipeline"] });
    const { id } = await createPipeline(api, 7, "main", VM);
    fake.advance(id);
    await fake.settled();
    expect(fake.hookDeliveries).toHaveLength(1);
    expect(fake.hookDeliveries[0]).toMatchObject({
      event: "Pipeline Hook",
      url,
      response: { status: 500, body: "nope" },
      body: { object_kind: "pipeline", object_attributes: { id, status: "pending" } },
    });

    await receiver!.close();
    receiver = undefined;
    fake.advance(id);
    await fake.settled();
    expect(fake.hookDeliveries).toHaveLength(2);
    expect(fake.hookDeliveries[1]!.response).toBeUndefined();
    expect(fake.hookDeliveries[1]!.error).toEqual(expect.any(String));

    fake.stopHooks();
    runUntilSettled(fake, id, "tf:plan"); // the pipeline blocks: a status change
    expect(fake.pipeline(id).status).toBe("manual");
    await fake.settled();
    expect(fake.hookDeliveries).toHaveLength(2);
  });
});

// ---------------------------------------------------------------------------------------------
// GitLab's own JSON schemas (spec/fixtures/api/schemas), checked structurally: required keys,
// primitive types, enums, `additionalProperties: false`, following `$ref`s from the schema's folder.

interface JsonSchema {
  type?: string | string[];
  required?: string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean;
  items?: JsonSchema;
  allOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  format?: string;
  $ref?: string;
}

const SCHEMAS = "gitlab-schemas";

function loadSchema(file: string): JsonSchema {
  return readFixtureJson(path.posix.join(SCHEMAS, file)) as JsonSchema;
}

function jsonTypes(value: unknown): string[] {
  if (value === null) return ["null"];
  if (Array.isArray(value)) return ["array"];
  if (typeof value === "number")
    return Number.isInteger(value) ? ["integer", "number"] : ["number"];
  if (typeof value === "object") return ["object"];
  return [typeof value];
}

/** Ways `value` breaks `schema` (read from `file`), as `where: what` lines. */
function violations(value: unknown, schema: JsonSchema, file: string, where = "$"): string[] {
  if (schema.$ref !== undefined) {
    const target = path.posix.join(path.posix.dirname(file), schema.$ref);
    return violations(value, loadSchema(target), target, where);
  }
  const problems: string[] = [];
  if (schema.type !== undefined) {
    const allowed = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!jsonTypes(value).some((t) => allowed.includes(t))) {
      problems.push(`${where}: ${JSON.stringify(value)} is not ${allowed.join("|")}`);
    }
  }
  if (schema.enum !== undefined && !schema.enum.includes(value)) {
    problems.push(
      `${where}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`,
    );
  }
  if (
    schema.format === "date-time" &&
    typeof value === "string" &&
    Number.isNaN(Date.parse(value))
  ) {
    problems.push(`${where}: ${value} is not a date-time`);
  }
  for (const sub of schema.allOf ?? []) problems.push(...violations(value, sub, file, where));
  if (
    schema.anyOf &&
    !schema.anyOf.some((sub) => violations(value, sub, file, where).length === 0)
  ) {
    problems.push(`${where}: matches none of anyOf`);
  }
  if (
    schema.oneOf &&
    schema.oneOf.filter((sub) => violations(value, sub, file, where).length === 0).length !== 1
  ) {
    problems.push(`${where}: does not match exactly one of oneOf`);
  }
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    for (const key of schema.required ?? []) {
      if (!(key in record)) problems.push(`${where}: missing ${key}`);
    }
    for (const [key, sub] of Object.entries(schema.properties ?? {})) {
      if (key in record) problems.push(...violations(record[key], sub, file, `${where}.${key}`));
    }
    if (schema.additionalProperties === false) {
      const known = Object.keys(schema.properties ?? {});
      for (const key of Object.keys(record)) {
        if (!known.includes(key)) problems.push(`${where}: unexpected ${key}`);
      }
    }
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    for (const [index, item] of value.entries()) {
      problems.push(...violations(item, schema.items, file, `${where}[${index}]`));
    }
  }
  return problems;
}

function expectSchema(value: unknown, file: string): void {
  expect(violations(value, loadSchema(file), file), file).toStrictEqual([]);
}

describe("the schema check itself", () => {
  it("reports a missing key, a wrong type and an unexpected key", () => {
    const schema: JsonSchema = {
      type: "object",
      required: ["id", "name"],
      properties: { id: { type: "integer" }, name: { type: "string" } },
      additionalProperties: false,
    };
    expect(violations({ id: 1.5, extra: true }, schema, "x.json")).toStrictEqual([
      "$: missing name",
      "$.id: 1.5 is not integer",
      "$: unexpected extra",
    ]);
  });
});

describe("fake GitLab JSON against GitLab's own API schemas", () => {
  it("matches pipeline/detail.json, user/basic.json and ci_detailed_status.json in every status", async () => {
    const { fake, api } = await start();
    const created = await createPipeline(api, "infra/vms", "main", {
      inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" },
    });
    expectSchema(created, "public_api/v4/pipeline/detail.json");
    // The check follows detail.json's `$ref` to basic.json:
    const withoutWebUrl: Record<string, unknown> = { ...created };
    delete withoutWebUrl.web_url;
    expect(
      violations(
        withoutWebUrl,
        loadSchema("public_api/v4/pipeline/detail.json"),
        "public_api/v4/pipeline/detail.json",
      ),
    ).toStrictEqual(["$: missing web_url"]);
    expectSchema(created.user, "public_api/v4/user/basic.json");
    expectSchema(created.detailed_status, "status/ci_detailed_status.json");

    const steps: [string, "running" | "success" | "failed"][] = [
      ["tf:validate", "running"],
      ["tf:validate", "success"],
      ["tf:plan", "success"],
      ["tf:apply", "success"],
      ["ansible:configure", "failed"],
    ];
    const seen = new Set<string>();
    for (const [job, status] of steps) {
      fake.setJobStatus(created.id, job, status);
      const shown = await api.Pipelines.show(7, created.id);
      seen.add(shown.status);
      expectSchema(shown, "public_api/v4/pipeline/detail.json");
      expectSchema(shown.detailed_status, "status/ci_detailed_status.json");
    }
    expect([...seen].sort()).toStrictEqual(["failed", "manual", "running"]);
  });

  it("matches job.json for jobs that have not failed", async () => {
    // job.json has `additionalProperties: false` and no `failure_reason`, which GitLab adds to
    // failed jobs only; GitLab's own specs check it against jobs that have not failed.
    const { fake, api } = await start();
    const created = await createPipeline(api, 7, "main", {
      inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" },
    });
    fake.setJobStatus(created.id, "tf:validate", "success");
    fake.setJobStatus(created.id, "tf:plan", "running");
    const jobs = await api.Jobs.all(7, { pipelineId: created.id });
    expect(jobs.map((j) => j.status).sort()).toStrictEqual([
      "created",
      "created",
      "running",
      "success",
    ]);
    for (const job of jobs) expectSchema(job, "public_api/v4/job.json");
    const single = await api.Jobs.show(7, jobs[0]!.id);
    expectSchema(single, "public_api/v4/job.json");

    fake.setJobStatus(created.id, "tf:plan", "failed");
    const failed = await api.Jobs.show(7, fake.job(created.id, "tf:plan").id);
    expect(
      violations(failed, loadSchema("public_api/v4/job.json"), "public_api/v4/job.json"),
    ).toStrictEqual(["$: unexpected failure_reason"]);
  });
});

describe("fake GitLab's new JSON against GitLab's own API schemas", () => {
  it("matches job.json for a played job and for a job with artifacts", async () => {
    const { fake, api, id } = await startWithPipeline();
    runUntilSettled(fake, id, "tf:plan");
    const played = await api.Jobs.play(7, fake.job(id, "tf:apply").id);
    expectSchema(played, "public_api/v4/job.json");
    runUntilSettled(fake, id, "tf:apply");
    const withArtifacts = await api.Jobs.show(7, played.id);
    expect(withArtifacts.artifacts_file).toBeDefined();
    expectSchema(withArtifacts, "public_api/v4/job.json");
  });

  it("matches pipeline/basic.json for listed pipelines and pipeline/detail.json for a canceled one", async () => {
    const { fake, api, id } = await startWithPipeline();
    fake.advance(id);
    for (const listed of await api.Pipelines.all(7)) {
      expectSchema(listed, "public_api/v4/pipeline/basic.json");
    }
    const canceled = await api.Pipelines.cancel(7, id);
    expectSchema(canceled, "public_api/v4/pipeline/detail.json");
    expectSchema(canceled.detailed_status, "status/ci_detailed_status.json");
  });
});

describe("GitLab job logs built around real tool output", () => {
  const MARKER = /section_(start|end):(\d+):([a-z_]+)\r\x1b\[0K/g; // eslint-disable-line no-control-regex

  /** The section names of a log, as start/end events in order. */
  function sectionEvents(log: string): string[] {
    return [...log.matchAll(MARKER)].map((m) => `${m[1]}:${m[3]}`);
  }

  it("writes GitLab's section markers and the runner's preamble as the real runner log does", () => {
    const real = readFixture("gitlab-trace/trace_with_sections");
    const plan = readFixture("terraform-plan-text/terraform-plan-comment-basic-1-modify-plan.txt");
    const log = planTrace(plan, { startedAt: new Date("2026-01-05T09:00:00Z") });

    // The same marker syntax as the real log, every section closed in order.
    expect(sectionEvents(real).length).toBeGreaterThan(0);
    expect(isRunnerTrace(real)).toBe(true);
    expect(isRunnerTrace(log)).toBe(true);
    expect(sectionEvents(log)).toStrictEqual(
      [
        "prepare_executor",
        "prepare_script",
        "get_sources",
        "step_script",
        "upload_artifacts_on_success",
        "cleanup_file_variables",
      ].flatMap((name) => [`start:${name}`, `end:${name}`]),
    );
    const times = [...log.matchAll(MARKER)].map((m) => Number(m[2]));
    expect(times[0]).toBe(Date.parse("2026-01-05T09:00:00Z") / 1000);
    expect(times).toStrictEqual([...times].sort((a, b) => a - b));

    expect(log.startsWith("\x1b[0KRunning with gitlab-runner ")).toBe(true);
    expect(log).toContain('\x1b[36;1mExecuting "step_script" stage of the job script\x1b[0;m\n');
    expect(log).toContain(
      "\x1b[32;1m$ terraform plan -no-color -input=false -out=tfplan\x1b[0;m\n",
    );
    expect(log).toContain(plan); // the tool's output, byte for byte
    expect(log.endsWith("\x1b[32;1mJob succeeded\x1b[0;m\n")).toBe(true);
    expect(real).toContain("Job succeeded");
  });

  it("ends an Ansible run with failed hosts as a failed job with ansible-playbook's exit code", () => {
    const failed = readFixture("ansible/fail-color.txt");
    const ok = readFixture("ansible/ok-first-nocolor.txt");
    expect(ansibleExitCode(ok)).toBe(0);
    expect(ansibleExitCode(failed)).toBe(2);
    expect(
      ansibleExitCode(
        readFixture("ansible-callback/callback_default.out.include_role_fails.stdout"),
      ),
    ).toBe(2);
    expect(ansibleExitCode("ERROR! the playbook: site.yml could not be found\n")).toBe(1);

    const log = ansibleTrace(failed);
    expect(log).toContain(failed);
    expect(log.endsWith("\x1b[31;1mERROR: Job failed: exit code 2\n\x1b[0;m\n")).toBe(true);
    expect(ansibleTrace(ok)).toContain("Job succeeded");
  });

  it("prints a synthetic Ansible run in the layout of a real one", () => {
    const real = readFixture("ansible/ok-first-nocolor.txt").split("\n");
    const ours = syntheticAnsibleRun({ host: "test-vm-01", color: false }).split("\n");
    const banner = (lines: string[]) => lines.filter((l) => / \*+$/.test(l)).map((l) => l.length);
    expect(new Set(banner(ours))).toStrictEqual(new Set(banner(real)));
    const recap = (lines: string[]) => lines.find((l) => l.includes(" : ok="))!;
    expect(recap(ours).indexOf(": ok=")).toBe(recap(real).indexOf(": ok="));
    expect(recap(ours).length).toBe(recap(real).length);

    const colored = syntheticAnsibleRun({ tasks: [{ name: "x", result: "fatal", msg: "boom" }] });
    const realColored = readFixture("ansible/fail-color.txt");
    const hostColumn = (text: string) =>
      /\n(\x1b\[[0-9;]+m[^\x1b]+\x1b\[0m +): /.exec(text)?.[1]?.length; // eslint-disable-line no-control-regex
    expect(hostColumn(colored.replace("web-01", "test-vm-01"))).toBe(hostColumn(realColored));
  });

  it("shows the plan and Ansible output given as fixtures in the simulated jobs' logs", async () => {
    const plan = readFixture("terraform-plan-text/terraform-plan-comment-basic-2-delete-plan.txt");
    const ansible = readFixture("ansible/fail-color.txt");
    const { fake, api, id } = await startWithPipeline({
      projects: [{ ...project, traces: { "tf:plan": plan, "ansible:configure": ansible } }],
    });
    runUntilSettled(fake, id, "tf:plan");
    const planLog = await api.Jobs.showLog(7, fake.job(id, "tf:plan").id);
    expect(planLog).toContain(plan);
    expect(traceWhileRunning(planLog)).not.toContain(plan);
    fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    runUntilSettled(fake, id, "ansible:configure");
    const configure = await api.Jobs.show(7, fake.job(id, "ansible:configure").id);
    expect(configure).toMatchObject({ status: "failed", failure_reason: "script_failure" });
    expect(await api.Jobs.showLog(7, configure.id)).toContain(ansible);
  });

  it("prints the synthetic plan for the VM it is given, in Terraform's layout", () => {
    const plan = syntheticPlan({ name: "db-01", ip: "10.0.0.7/24", node: "pve2" });
    expect(plan).toContain("  # proxmox_virtual_environment_vm.vm will be created\n");
    expect(plan).toContain('+ name                    = "db-01"');
    expect(plan).toContain('+ node_name               = "pve2"');
    expect(plan).toContain('+ vm_ip = "10.0.0.7"');
    expect(plan).toContain("\nPlan: 1 to add, 0 to change, 0 to destroy.\n");
    // The real `terraform show -no-color` fixture opens the same way.
    const real = readFixture("terraform-plan-text/terraform-plan-comment-basic-2-delete-plan.txt");
    const opening =
      "Terraform used the selected providers to generate the following execution\nplan.";
    expect(real).toContain(opening);
    expect(plan).toContain(opening);
  });
});

describe("fake GitLab webhooks against GitLab's recorded payloads", () => {
  /** Paths of every key in `expected` missing from `actual` (objects only; arrays by first item). */
  function missingKeys(expected: unknown, actual: unknown, where = "$"): string[] {
    if (Array.isArray(expected)) {
      return Array.isArray(actual) && expected.length > 0 && actual.length > 0
        ? missingKeys(expected[0], actual[0], `${where}[0]`)
        : [];
    }
    if (typeof expected !== "object" || expected === null) return [];
    if (typeof actual !== "object" || actual === null) return [];
    const a = actual as Record<string, unknown>;
    return Object.entries(expected as Record<string, unknown>).flatMap(([key, value]) =>
      key in a ? missingKeys(value, a[key], `${where}.${key}`) : [`${where}.${key}`],
    );
  }

  it("sends every key GitLab's own Pipeline Hook and Job Hook payloads have", async () => {
    const received: RecordedRequest[] = [];
    const receiver = await startFakeServer((req, res) => {
      received.push(req);
      res.writeHead(200).end();
    });
    try {
      const { fake, api } = await start();
      fake.deliverHooks({ url: receiver.url, secretToken: "t" });
      const { id } = await createPipeline(api, 7, "main", VM);
      runUntilSettled(fake, id, "tf:plan");
      fake.playJob(id, "tf:apply");
      runUntilSettled(fake, id, "tf:apply");
      runUntilSettled(fake, id, "ansible:configure");
      await fake.settled();

      const last = (event: string) =>
        JSON.parse(
          received.filter((r) => r.headers["x-gitlab-event"] === event).at(-1)!.body,
        ) as unknown;
      const pipelineHook = last("Pipeline Hook");
      const jobHook = last("Job Hook");
      expect(
        missingKeys(readFixtureJson("gitlab-webhooks/pipeline.json"), pipelineHook),
      ).toStrictEqual([]);
      expect(missingKeys(readFixtureJson("gitlab-webhooks/job.json"), jobHook)).toStrictEqual([]);

      // The same value types and time format as the recorded payloads.
      const fixtureJob = readFixtureJson("gitlab-webhooks/job.json") as Record<string, unknown>;
      const ours = jobHook as Record<string, unknown>;
      for (const key of [
        "build_id",
        "build_status",
        "build_created_at",
        "build_duration",
        "pipeline_id",
      ]) {
        expect([key, typeof ours[key]]).toStrictEqual([key, typeof fixtureJob[key]]);
      }
      const timeFormat = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/;
      expect(fixtureJob.build_created_at).toMatch(timeFormat);
      expect(ours.build_created_at).toMatch(timeFormat);
      expect(
        (pipelineHook as { object_attributes: { created_at: string } }).object_attributes
          .created_at,
      ).toMatch(timeFormat);
    } finally {
      await receiver.close();
    }
  });
});

describe("fake GitLab: Terraform state", () => {
  const NOW = new Date("2026-03-02T10:15:30.123Z");
  const alice = { id: 21, username: "alice", name: "Alice Example" };

  function startWithStates(role: FakeProjectOptions["role"] = "maintainer") {
    return start({ projects: [{ ...project, role }], users: [alice], now: () => NOW });
  }

  function stateUrl(fakeGitlab: FakeGitlab, name: string, suffix = ""): string {
    return `${fakeGitlab.url}/api/v4/projects/7/terraform/state/${encodeURIComponent(name)}${suffix}`;
  }

  /** The credentials Terraform's http backend sends: the token as a Basic password. */
  function basicAuth(fakeGitlab: FakeGitlab, password: string = token): Record<string, string> {
    const credentials = Buffer.from(`${fakeGitlab.user.username}:${password}`).toString("base64");
    return { authorization: `Basic ${credentials}` };
  }

  /** What Terraform's http backend sends to lock a state. */
  function postLock(fakeGitlab: FakeGitlab, name: string, info: Partial<TerraformLockInfo>) {
    return fetch(stateUrl(fakeGitlab, name, "/lock"), {
      method: "POST",
      headers: { ...basicAuth(fakeGitlab), "content-type": "application/json" },
      body: JSON.stringify(info),
    });
  }

  const STATES_QUERY = `query TerraformStates($fullPath: ID!) {
  project(fullPath: $fullPath) {
    terraformStates {
      count
      nodes { id name lockedAt lockedByUser { username name } createdAt updatedAt }
    }
  }
}`;

  async function graphql(
    fakeGitlab: FakeGitlab,
    query: string,
    variables: Record<string, unknown> = {},
    headers: Record<string, string> = { authorization: `Bearer ${token}` },
  ): Promise<{ status: number; contentType: string | null; body: unknown }> {
    const response = await fetch(`${fakeGitlab.url}/api/graphql`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ query, variables }),
    });
    return {
      status: response.status,
      contentType: response.headers.get("content-type"),
      body: await response.json(),
    };
  }

  it("locks a state as Terraform's http backend does, and answers a second lock with 409 and the holder's lock", async () => {
    const { fake } = await startWithStates();
    const first = terraformLockInfo({ ID: "8d2a6c1e-4f0b-4a51-9d0e-2b7c3f5e9a10" });
    const locked = await postLock(fake, "web-01", first);
    expect(locked.status).toBe(200);
    expect(locked.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    // GitLab stores the ID and answers with its own user and clock for `Who` and `Created`.
    expect(JSON.parse(await locked.text())).toStrictEqual({
      Operation: "OperationTypeApply",
      Info: "",
      Version: "1.9.8",
      Path: "",
      ID: first.ID,
      Who: "vmbot",
      Created: "2026-03-02T10:15:30.123Z",
    });
    expect(fake.terraformState(7, "web-01")).toMatchObject({
      name: "web-01",
      latestVersion: null,
      lock: { id: first.ID, user: { username: "vmbot" }, lockedAt: "2026-03-02T10:15:30.123Z" },
    });
    // Locking created the state, without a file yet.
    const empty = await fetch(stateUrl(fake, "web-01"), { headers: basicAuth(fake) });
    expect(empty.status).toBe(204);

    const second = terraformLockInfo({ Operation: "OperationTypePlan", Who: "dev@laptop" });
    const conflict = await postLock(fake, "web-01", second);
    expect(conflict.status).toBe(409);
    // The holder's ID, user and time; the rest is echoed from the refused request.
    expect(JSON.parse(await conflict.text())).toStrictEqual({
      Operation: "OperationTypePlan",
      Info: "",
      Version: "1.9.8",
      Path: "",
      ID: first.ID,
      Who: "vmbot",
      Created: "2026-03-02T10:15:30.123Z",
    });
    expect(fake.terraformState(7, "web-01")?.lock?.id).toBe(first.ID);
  });

  it("answers a lock request without Terraform's lock info as Grape does", async () => {
    const { fake } = await startWithStates();
    const response = await postLock(fake, "web-01", { ID: "x".repeat(256), Who: "dev@laptop" });
    expect(response.status).toBe(400);
    expect(await response.json()).toStrictEqual({
      error:
        "ID ID must be less than 255 characters, Operation is missing, Info is missing, Version is missing, Created is missing, Path is missing",
    });
    expect(fake.terraformState(7, "web-01")).toBeUndefined();
  });

  it("shows who holds a lock in GraphQL, with a Bearer token or PRIVATE-TOKEN", async () => {
    const { fake } = await startWithStates();
    fake.addTerraformState(7, "web-01", {
      lockedBy: "alice",
      lockedAt: new Date("2026-03-02T09:00:05.678Z"),
      createdAt: new Date("2026-02-27T16:40:00Z"),
    });
    fake.addTerraformState("infra/vms", "db-01");

    const bearer = await graphql(fake, STATES_QUERY, { fullPath: "infra/vms" });
    expect(bearer.status).toBe(200);
    expect(bearer.contentType).toBe("application/json; charset=utf-8");
    expect(bearer.body).toStrictEqual({
      data: {
        project: {
          terraformStates: {
            count: 2,
            // Ordered by name; times to the second, as GitLab's Time type shows them.
            nodes: [
              {
                id: "gid://gitlab/Terraform::State/302",
                name: "db-01",
                lockedAt: null,
                lockedByUser: null,
                createdAt: "2026-03-02T10:15:30Z",
                updatedAt: "2026-03-02T10:15:30Z",
              },
              {
                id: "gid://gitlab/Terraform::State/301",
                name: "web-01",
                lockedAt: "2026-03-02T09:00:05Z",
                lockedByUser: { username: "alice", name: "Alice Example" },
                createdAt: "2026-02-27T16:40:00Z",
                updatedAt: "2026-03-02T09:00:05Z",
              },
            ],
          },
        },
      },
    });
    const privateToken = await graphql(
      fake,
      STATES_QUERY,
      { fullPath: "infra/vms" },
      { "private-token": token },
    );
    expect(privateToken.body).toStrictEqual(bearer.body);

    const single = await graphql(
      fake,
      `
        {
          project(fullPath: "infra/vms") {
            terraformState(name: "web-01") {
              lockedByUser {
                id
                username
                webUrl
              }
            }
          }
        }
      `,
    );
    expect(single.body).toStrictEqual({
      data: {
        project: {
          terraformState: {
            lockedByUser: {
              id: "gid://gitlab/User/21",
              username: "alice",
              webUrl: `${fake.url}/alice`,
            },
          },
        },
      },
    });
  });

  it("pages the states by name with cursors", async () => {
    const { fake } = await startWithStates();
    for (const name of ["c", "a", "b"]) fake.addTerraformState(7, name);
    const page = async (after: string | null) =>
      (
        await graphql(
          fake,
          `
            query ($after: String) {
              project(fullPath: "infra/vms") {
                terraformStates(first: 2, after: $after) {
                  count
                  nodes {
                    name
                  }
                  pageInfo {
                    hasNextPage
                    endCursor
                  }
                }
              }
            }
          `,
          { after },
        )
      ).body as {
        data: {
          project: {
            terraformStates: {
              count: number;
              nodes: { name: string }[];
              pageInfo: { hasNextPage: boolean; endCursor: string };
            };
          };
        };
      };
    const first = (await page(null)).data.project.terraformStates;
    expect(first.count).toBe(3);
    expect(first.nodes.map((n) => n.name)).toStrictEqual(["a", "b"]);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = (await page(first.pageInfo.endCursor)).data.project.terraformStates;
    expect(second.nodes.map((n) => n.name)).toStrictEqual(["c"]);
    expect(second.pageInfo.hasNextPage).toBe(false);
  });

  it("force-unlocks with gitbeaker as a Maintainer, and refuses a Developer with 403", async () => {
    const { fake, api } = await startWithStates("developer");
    fake.addTerraformState(7, "web-01", { lockedBy: "alice" });

    const refused = await failureOf(
      api.ProjectTerraformState.removeTerraformStateLock(7, "web-01"),
    );
    expect(refused).toStrictEqual({ status: 403, description: "403 Forbidden" });
    expect(fake.terraformState(7, "web-01")?.lock?.user.username).toBe("alice");

    fake.setRole(7, "maintainer");
    const mark = fake.mark();
    const unlocked = await api.ProjectTerraformState.removeTerraformStateLock(
      "infra/vms",
      "web-01",
      { showExpanded: true },
    );
    expect(unlocked.status).toBe(200);
    // The endpoint's JSON body is the status code it set.
    expect(unlocked.data as unknown).toBe(200);
    const [request] = fake.requestsSince(mark);
    expect(request?.method).toBe("DELETE");
    expect(request?.path).toBe("/api/v4/projects/infra%2Fvms/terraform/state/web-01/lock");
    expect(fake.terraformState(7, "web-01")?.lock).toBeNull();

    const shown = await graphql(
      fake,
      `
        {
          project(fullPath: "infra/vms") {
            terraformStates {
              nodes {
                name
                lockedAt
                lockedByUser {
                  username
                }
              }
            }
          }
        }
      `,
    );
    expect(shown.body).toStrictEqual({
      data: {
        project: {
          terraformStates: { nodes: [{ name: "web-01", lockedAt: null, lockedByUser: null }] },
        },
      },
    });
  });

  it("unlocks only with the lock's own ID when one is given, as Terraform's unlock sends it", async () => {
    const { fake } = await startWithStates();
    fake.addTerraformState(7, "web-01", { lockedBy: "alice", lockId: "held-by-alice" });
    const unlock = (id: string) =>
      fetch(stateUrl(fake, "web-01", "/lock"), {
        method: "DELETE",
        headers: { ...basicAuth(fake), "content-type": "application/json" },
        body: JSON.stringify(terraformLockInfo({ ID: id })),
      });

    const wrong = await unlock("someone-else");
    expect(wrong.status).toBe(409);
    expect(await wrong.text()).toBe("409");
    expect(fake.terraformState(7, "web-01")?.lock?.id).toBe("held-by-alice");

    const right = await unlock("held-by-alice");
    expect(right.status).toBe(200);
    expect(await right.text()).toBe("200");
    expect(fake.terraformState(7, "web-01")?.lock).toBeNull();
  });

  it("reads a state's file with gitbeaker, and answers a missing state with 404", async () => {
    const { fake, api } = await startWithStates("developer");
    const content = {
      version: 4,
      terraform_version: "1.9.8",
      serial: 7,
      lineage: "l",
      outputs: {},
      resources: [],
    };
    fake.addTerraformState(7, "web.01", { content });

    // Not JSON-formatted by GitLab: gitbeaker gets the file as text.
    const file = await api.ProjectTerraformState.show(7, "web.01");
    expect(JSON.parse(file as unknown as string)).toStrictEqual(content);
    expect(fake.terraformState(7, "web.01")?.latestVersion?.serial).toBe(7);

    expect(await failureOf(api.ProjectTerraformState.show(7, "web-02"))).toStrictEqual({
      status: 404,
      description: "404 Not found",
    });
    expect(await failureOf(api.ProjectTerraformState.show(99, "web.01"))).toStrictEqual({
      status: 404,
      description: "404 Project Not Found",
    });
    fake.setRole(7, "maintainer");
    expect(await failureOf(api.ProjectTerraformState.remove(7, "web-02"))).toStrictEqual({
      status: 404,
      description: "404 Not found",
    });
  });

  it("needs a token, Developer to read, and Maintainer to lock, store or delete", async () => {
    const { fake } = await startWithStates("reporter");
    fake.addTerraformState(7, "web-01");
    const get = (headers: Record<string, string>) => fetch(stateUrl(fake, "web-01"), { headers });

    expect((await get({})).status).toBe(401);
    expect((await get(basicAuth(fake, "wrong"))).status).toBe(401);
    const reporter = await get(basicAuth(fake));
    expect(reporter.status).toBe(403);
    expect(await reporter.json()).toStrictEqual({ message: "403 Forbidden" });

    fake.setRole(7, "developer");
    expect((await get(basicAuth(fake))).status).toBe(200);
    expect((await get({ "private-token": token })).status).toBe(200);
    expect((await postLock(fake, "web-01", terraformLockInfo())).status).toBe(403);
    const store = await fetch(stateUrl(fake, "web-01"), {
      method: "POST",
      headers: { ...basicAuth(fake), "content-type": "application/json" },
      body: "{}",
    });
    expect(store.status).toBe(403);
    const remove = await fetch(stateUrl(fake, "web-01"), {
      method: "DELETE",
      headers: basicAuth(fake),
    });
    expect(remove.status).toBe(403);
    expect(fake.terraformState(7, "web-01")?.lock).toBeNull();
  });

  it("stores a state only under its lock, and deletes only an unlocked state", async () => {
    const { fake, api } = await startWithStates();
    const info = terraformLockInfo();
    expect((await postLock(fake, "web-01", info)).status).toBe(200);
    const store = (query: string) =>
      fetch(`${stateUrl(fake, "web-01")}${query}`, {
        method: "POST",
        headers: { ...basicAuth(fake), "content-type": "application/json" },
        body: JSON.stringify({ version: 4, serial: 2, lineage: "l", outputs: {}, resources: [] }),
      });

    // Terraform sends its lock's ID with the state; without it GitLab's lock check raises.
    const unlocked = await store("");
    expect(unlocked.status).toBe(500);
    expect(await unlocked.json()).toStrictEqual({ message: "500 Internal Server Error" });
    const stored = await store(`?ID=${info.ID}`);
    expect(stored.status).toBe(200);
    expect(await stored.text()).toBe('""');
    expect(fake.terraformState(7, "web-01")?.latestVersion).toMatchObject({
      serial: 2,
      createdBy: { username: "vmbot" },
    });

    // A locked state is not deleted, though the answer is 200.
    await api.ProjectTerraformState.remove(7, "web-01");
    expect(fake.terraformState(7, "web-01")).toBeDefined();
    fake.unlockTerraformState(7, "web-01");
    await api.ProjectTerraformState.remove(7, "web-01");
    expect(fake.terraformState(7, "web-01")).toBeUndefined();
  });

  it("answers GraphQL with a null project for an unknown path or no token, 401 for an invalid token, no states for a Reporter", async () => {
    const { fake } = await startWithStates("reporter");
    fake.addTerraformState(7, "web-01", { lockedBy: "alice" });

    expect((await graphql(fake, STATES_QUERY, { fullPath: "infra/nope" })).body).toStrictEqual({
      data: { project: null },
    });
    expect((await graphql(fake, STATES_QUERY, { fullPath: "infra/vms" }, {})).body).toStrictEqual({
      data: { project: null },
    });
    const invalid = await graphql(
      fake,
      STATES_QUERY,
      { fullPath: "infra/vms" },
      {
        authorization: "Bearer glpat-revoked",
      },
    );
    expect(invalid.status).toBe(401);
    expect(invalid.body).toStrictEqual({ errors: [{ message: "Invalid token" }] });
    expect((await graphql(fake, STATES_QUERY, { fullPath: "infra/vms" })).body).toStrictEqual({
      data: { project: { terraformStates: { count: 0, nodes: [] } } },
    });
  });

  it("answers a bad GraphQL query with an errors list in GitLab's shape", async () => {
    const { fake } = await startWithStates();
    /** Where `text` first appears in `query`, as GraphQL counts lines and columns. */
    const locationOf = (query: string, text: string) => {
      const lines = query.slice(0, query.indexOf(text)).split("\n");
      return { line: lines.length, column: (lines.at(-1)?.length ?? 0) + 1 };
    };

    const unknownFieldQuery = `query {
  project(fullPath: "infra/vms") {
    terraformStates { nodes { lockHolder } }
  }
}`;
    const unknownField = await graphql(fake, unknownFieldQuery);
    expect(unknownField.status).toBe(200);
    expect(unknownField.body).toStrictEqual({
      errors: [
        {
          message: "Field 'lockHolder' doesn't exist on type 'TerraformState'",
          locations: [locationOf(unknownFieldQuery, "lockHolder")],
          path: ["query", "project", "terraformStates", "nodes", "lockHolder"],
          extensions: {
            code: "undefinedField",
            typeName: "TerraformState",
            fieldName: "lockHolder",
          },
        },
      ],
    });

    const missingArgumentQuery = "query Lookup { project { id } }";
    expect((await graphql(fake, missingArgumentQuery)).body).toStrictEqual({
      errors: [
        {
          message: "Field 'project' is missing required arguments: fullPath",
          locations: [locationOf(missingArgumentQuery, "project")],
          path: ["query Lookup", "project"],
          extensions: {
            code: "missingRequiredArguments",
            className: "Field",
            name: "project",
            arguments: "fullPath",
          },
        },
      ],
    });

    const syntax = (await graphql(fake, `{ project(fullPath: "infra/vms") { `)).body as {
      errors: { message: string; locations: unknown }[];
    };
    expect(Object.keys(syntax)).toStrictEqual(["errors"]);
    expect(syntax.errors).toHaveLength(1);
    expect(syntax.errors[0]?.message).toMatch(/^Syntax Error: /);
    expect(syntax.errors[0]?.locations).toStrictEqual([{ line: 1, column: 36 }]);

    expect((await graphql(fake, "")).body).toStrictEqual({
      errors: [{ message: "No query string was present" }],
    });
  });

  it("fails GraphQL requests on demand like any other", async () => {
    const { fake } = await startWithStates();
    fake.failNext({ method: "POST", path: /^\/api\/graphql$/ }, { status: 502 });
    const response = await fetch(`${fake.url}/api/graphql`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ query: '{ project(fullPath: "infra/vms") { id } }' }),
    });
    expect(response.status).toBe(502);
    expect(
      (
        await graphql(
          fake,
          `
            {
              project(fullPath: "infra/vms") {
                id
              }
            }
          `,
        )
      ).body,
    ).toStrictEqual({
      data: { project: { id: "gid://gitlab/Project/7" } },
    });
  });
});

describe("simulated outputs: a replace, a state lock, an unreachable host", () => {
  const LOCK = {
    id: "6f1c2a9e-3b7d-4e58-a0c4-9d2e7b31f05a",
    who: "ci-runner@runner-7f3a9c",
    createdAt: new Date("2026-03-02T10:15:30.123Z"),
  };

  it("prints a replace plan that the plan parser reads as one VM destroyed and created again", () => {
    const text = syntheticReplacePlan({ name: "db-02", node: "pve3", cores: 4, diskGb: 40 });
    const plan = parsePlanText(text);
    expect(plan.resources).toStrictEqual([
      {
        address: "proxmox_virtual_environment_vm.vm",
        action: "replace",
        replaceOrder: "delete-first",
        reason: "node_name forces replacement",
      },
    ]);
    expect(plan.counts).toStrictEqual({ add: 1, change: 0, destroy: 1 });
    expect(plan.derivedCounts).toStrictEqual({
      add: 1,
      change: 0,
      destroy: 1,
      replace: 1,
      import: 0,
    });
    expect(plan.mismatch).toBeUndefined();
    expect(plan.errors).toStrictEqual([]);
    expect(plan.noChanges).toBe(false);
    expect(text).toContain('name                    = "db-02"');
    expect(text).toContain('~ node_name               = "pve1" -> "pve3" # forces replacement');
    expect(text).toContain("~ cores   = 2 -> 4");
    expect(text).toContain("~ size         = 20 -> 40");
    expect(terraformExitCode(text)).toBe(0);
  });

  it("moves the VM from another node than the one asked for, or from the one given", () => {
    expect(syntheticReplacePlan({ node: "pve1" })).toContain('"pve2" -> "pve1" # forces');
    expect(syntheticReplacePlan({ node: "pve2", fromNode: "pve4", vmId: 117 })).toMatch(
      /"pve4" -> "pve2" # forces replacement\n.*vm_id += 117 -> \(known after apply\)/,
    );
  });

  it("shows no attribute changing to the value it already has, as Terraform's diff hides those", () => {
    // The existing VM has 2 cores and a 20 GB disk: the defaults, so nothing there changes.
    const text = syntheticReplacePlan({ name: "web-01", node: "pve2" });
    const unchanged = text
      .split("\n")
      .filter((line) => /^\s*~ \S+\s+= (.+) -> \1(?: #.*)?$/.test(line));
    expect(unchanged).toStrictEqual([]);
    expect(text).not.toContain("~ cpu {");
    expect(text).toContain("# (3 unchanged attributes hidden)");
    expect(text).toContain("# (6 unchanged blocks hidden)");
    expect(parsePlanText(text).counts).toStrictEqual({ add: 1, change: 0, destroy: 1 });
  });

  it("prints a state lock error naming the lock and its holder, which fails Terraform", () => {
    const text = syntheticLockError(LOCK);
    expect(terraformExitCode(text)).not.toBe(0);
    expect(text).toContain("│ Error: Error acquiring the state lock");
    expect(text).toContain(`HTTP remote state already locked: ID=${LOCK.id}`);
    expect(text).toMatch(new RegExp(`│ {3}ID: +${LOCK.id}\n`));
    expect(text).toMatch(new RegExp(`│ {3}Who: +${LOCK.who}\n`));
    expect(text).toContain("│   Operation: OperationTypeApply\n");

    const plan = parsePlanText(text);
    expect(plan.errors).toHaveLength(1);
    expect(plan.errors[0]?.summary).toBe("Error acquiring the state lock");
    expect(plan.errors[0]?.detail).toContain(`Who:       ${LOCK.who}`);
    expect(plan.resources).toStrictEqual([]);
    expect(plan.counts).toBeUndefined();
  });

  it("prints the lock's creation time as Go's time.Time String does, fraction trimmed", () => {
    expect(syntheticLockError(LOCK)).toContain(
      "│   Created:   2026-03-02 10:15:30.123 +0000 UTC\n",
    );
    const whole = syntheticLockError({ ...LOCK, createdAt: new Date("2026-03-02T10:15:30Z") });
    expect(whole).toContain("│   Created:   2026-03-02 10:15:30 +0000 UTC\n");
    const tenths = syntheticLockError({ ...LOCK, createdAt: new Date("2026-03-02T10:15:30.500Z") });
    expect(tenths).toContain("│   Created:   2026-03-02 10:15:30.5 +0000 UTC\n");
    expect(syntheticLockError({ ...LOCK, operation: "OperationTypePlan" })).toContain(
      "│   Operation: OperationTypePlan\n",
    );
  });

  it("fails the plan job, and so the pipeline, when its output is the lock error", async () => {
    const { fake, api, id } = await startWithPipeline();
    fake.setTraces(id, { "tf:plan": syntheticLockError(LOCK) });
    runUntilSettled(fake, id, "tf:plan");

    const planJob = fake.job(id, "tf:plan");
    expect(planJob).toMatchObject({ status: "failed", failureReason: "script_failure" });
    const log = await api.Jobs.showLog(7, planJob.id);
    expect(log).toContain("$ terraform plan -no-color -input=false -out=tfplan");
    expect(log).toContain(`ID=${LOCK.id}`);
    expect(log).toContain("ERROR: Job failed: exit code 1");
    expect(log).not.toContain("Job succeeded");
    expect(fake.job(id, "tf:validate").status).toBe("success");
    expect(fake.job(id, "tf:apply").status).toBe("skipped");
    expect(fake.job(id, "ansible:configure").status).toBe("skipped");
    expect(fake.pipeline(id).status).toBe("failed");
  });

  it("passes the plan job, blocked on the manual apply, when its output is the replace plan", async () => {
    const { fake, id } = await startWithPipeline();
    fake.setTraces(id, { "tf:plan": syntheticReplacePlan({ name: "web-01", node: "pve2" }) });
    runUntilSettled(fake, id, "tf:plan");
    expect(fake.job(id, "tf:plan").status).toBe("success");
    expect(fake.job(id, "tf:plan").log).toContain("Plan: 1 to add, 0 to change, 1 to destroy.");
    expect(fake.pipeline(id).status).toBe("manual");
  });

  it("prints an unreachable host as ansible-playbook does, exit code 4", () => {
    const text = syntheticAnsibleRun({
      host: "web-07",
      tasks: [...UNREACHABLE_TASKS],
      color: false,
    });
    expect(ansibleExitCode(text)).toBe(4);
    expect(text).toContain("TASK [Gathering Facts]");
    expect(text).toMatch(/^fatal: \[web-07\]: UNREACHABLE! => \{.*"unreachable":true\}$/m);
    expect(text).toMatch(/^PLAY RECAP \*+$/m);
    expect(text).toMatch(
      /^web-07 +: ok=0 +changed=0 +unreachable=1 +failed=0 +skipped=0 +rescued=0 +ignored=0 *$/m,
    );

    const run = parseAnsibleOutput(text);
    expect(run.recapFound).toBe(true);
    expect(run.hosts).toStrictEqual([
      {
        host: "web-07",
        ok: 0,
        changed: 0,
        unreachable: 1,
        failed: 0,
        skipped: 0,
        rescued: 0,
        ignored: 0,
      },
    ]);
    expect(run.failures).toHaveLength(1);
    expect(run.failures[0]).toMatchObject({
      host: "web-07",
      task: "Gathering Facts",
      kind: "unreachable",
      ignored: false,
    });
    expect(run.failures[0]?.message).toMatch(/^Failed to connect to the host via ssh: /);
  });

  it("reads the same from the coloured run, and fails the configure job with exit code 4", async () => {
    const text = syntheticAnsibleRun({ host: "web-01", tasks: [...UNREACHABLE_TASKS] });
    expect(text).toContain("\x1b[1;31mfatal: [web-01]: UNREACHABLE! =>");
    expect(ansibleExitCode(text)).toBe(4);
    const run = parseAnsibleOutput(text);
    expect(run.hosts.map((h) => [h.host, h.unreachable, h.failed])).toStrictEqual([
      ["web-01", 1, 0],
    ]);
    expect(run.failures.map((f) => [f.host, f.kind])).toStrictEqual([["web-01", "unreachable"]]);

    const { fake, id } = await startWithPipeline();
    fake.setTraces(id, { "ansible:configure": text });
    runUntilSettled(fake, id, "tf:plan");
    fake.playJob(id, "tf:apply");
    runUntilSettled(fake, id, "tf:apply");
    runUntilSettled(fake, id, "ansible:configure");
    const configure = fake.job(id, "ansible:configure");
    expect(configure.status).toBe("failed");
    expect(configure.log).toContain("ERROR: Job failed: exit code 4");
    expect(fake.pipeline(id).status).toBe("failed");
  });
});

describe("fake GitLab: onPipelineCreated and vmParamsOf", () => {
  it("calls the listener once per created pipeline, with that pipeline, until stopped", async () => {
    const { fake, api } = await start();
    const seen: FakePipeline[] = [];
    const stop = fake.onPipelineCreated((pipeline) => {
      seen.push(pipeline);
    });

    const first = await createPipeline(api, 7, "main", VM);
    expect(seen.map((p) => p.id)).toStrictEqual([first.id]);
    const second = await createPipeline(api, 7, "main", {
      inputs: { vm_name: "db-01", vm_ip: "10.0.0.7/24" },
    });
    expect(seen.map((p) => p.id)).toStrictEqual([first.id, second.id]);
    expect(seen[0]).toBe(fake.pipeline(first.id));
    expect(seen[1]).toBe(fake.pipeline(second.id));
    expect(seen[1]?.inputs).toMatchObject({ vm_name: "db-01", vm_ip: "10.0.0.7/24" });

    // A refused pipeline is not created, so nobody hears of it.
    await failureOf(createPipeline(api, 7, "mian", VM));
    expect(seen).toHaveLength(2);

    stop();
    await createPipeline(api, 7, "main", VM);
    expect(seen).toHaveLength(2);
    expect(fake.pipelines).toHaveLength(3);
    stop(); // stopping twice is harmless
  });

  it("keeps other listeners when one stops, and hands each the pipeline with its jobs", async () => {
    const { fake, api } = await start();
    const a: number[] = [];
    const b: string[][] = [];
    const stopA = fake.onPipelineCreated((pipeline) => a.push(pipeline.id));
    const stopB = fake.onPipelineCreated((pipeline) => b.push(pipeline.jobs.map((j) => j.name)));
    const first = await createPipeline(api, 7, "main", VM);
    stopA();
    await createPipeline(api, 7, "main", VM);
    stopB();
    expect(a).toStrictEqual([first.id]);
    expect(b).toStrictEqual([
      ["tf:validate", "tf:plan", "tf:apply", "ansible:configure"],
      ["tf:validate", "tf:plan", "tf:apply", "ansible:configure"],
    ]);
  });

  it("lets the listener set the new pipeline's outputs before any job runs", async () => {
    const { fake, api } = await start();
    fake.onPipelineCreated((pipeline) => {
      const vm = vmParamsOf(pipeline);
      fake.setTraces(pipeline.id, {
        "tf:plan": syntheticLockError({
          id: "lock-1",
          who: `someone@${vm.name ?? "?"}`,
          createdAt: new Date("2026-01-05T08:00:00Z"),
        }),
      });
    });
    const { id } = await createPipeline(api, 7, "main", VM);
    runUntilSettled(fake, id, "tf:plan");
    expect(fake.job(id, "tf:plan").status).toBe("failed");
    expect(fake.job(id, "tf:plan").log).toContain("Who:       someone@web-01");
  });

  it("reads the VM from the pipeline's inputs, with their defaults", async () => {
    const { fake, api } = await start({
      projects: [
        {
          ...project,
          inputs: {
            ...project.inputs,
            proxmox_node: { default: "pve" },
            dns_server: {},
            template_vm_id: { type: "number", default: 9000 },
            cpu_cores: { type: "number" },
            memory_mb: { type: "number" },
            disk_size_gb: { type: "number" },
          },
        },
      ],
    });
    const params: ReturnType<typeof vmParamsOf>[] = [];
    fake.onPipelineCreated((pipeline) => params.push(vmParamsOf(pipeline)));
    await createPipeline(api, 7, "main", {
      inputs: {
        vm_name: "db-01",
        vm_ip: "10.0.0.7/24",
        proxmox_node: "pve2",
        dns_server: "10.0.0.53",
        cpu_cores: 4,
        memory_mb: 8192,
        disk_size_gb: 64,
      },
    });
    expect(params).toStrictEqual([
      {
        name: "db-01",
        ip: "10.0.0.7/24",
        gateway: "192.168.1.1",
        node: "pve2",
        dns: "10.0.0.53",
        templateId: 9000,
        cores: 4,
        memoryMb: 8192,
        diskGb: 64,
      },
    ]);
    expect(vmParamsOf(fake.pipelines[0]!)).toStrictEqual(params[0]);
  });

  it("gives only what was asked for, and reads upper-case variables when there are no inputs", async () => {
    const { fake, api } = await start({
      projects: [project, { id: 9, path: "infra/legacy" }],
    });
    const first = await createPipeline(api, 7, "main", VM);
    expect(vmParamsOf(fake.pipeline(first.id))).toStrictEqual({
      name: "web-01",
      ip: "192.168.1.50/24",
      gateway: "192.168.1.1",
    });
    const legacy = await createPipeline(api, 9, "main", {
      variables: [
        { key: "VM_NAME", value: "old-01" },
        { key: "VM_IP", value: "10.1.0.9/16" },
        { key: "CPU_CORES", value: "8" },
        { key: "MEMORY_MB", value: "lots" },
      ],
    });
    expect(vmParamsOf(fake.pipeline(legacy.id))).toStrictEqual({
      name: "old-01",
      ip: "10.1.0.9/16",
      cores: 8,
    });
  });
});

describe("fake GitLab: the rules a new project on a current GitLab has", () => {
  it("protects the default branch: a developer may not run a pipeline there, in GitLab's words", async () => {
    const { api } = await start({ projects: [{ ...project, role: "developer" }] });
    expect(await failureOf(createPipeline(api, 7, "main", VM))).toStrictEqual({
      status: 400,
      description:
        '{"base":["You do not have sufficient permission to run a pipeline on \'main\'. Please select a different branch or contact your administrator for assistance."]}',
    });
  });

  it("fails a developer's plan job on the state lock, as Terraform prints it", async () => {
    const { fake, id } = await startWithPipeline({
      projects: [{ ...project, role: "developer", protectedBranches: {} }],
    });
    runUntilSettled(fake, id, "tf:plan");
    const plan = fake.job(id, "tf:plan");
    expect(plan.status).toBe("failed");
    expect(plan.log).toContain("Error: Error acquiring the state lock");
    expect(plan.log).toContain("Error message: HTTP remote state endpoint invalid auth");
    expect(plan.log).toContain("ERROR: Job failed: exit code 1");
  });

  it("runs a maintainer's plan job to success", async () => {
    const { fake, id } = await startWithPipeline();
    runUntilSettled(fake, id, "tf:plan");
    expect(fake.job(id, "tf:plan").status).toBe("success");
  });

  it("tells its version and the caller's own access to the project", async () => {
    const { api } = await start({
      version: "17.9.3-ee",
      projects: [{ ...project, role: "developer" }],
    });
    expect(await api.Metadata.show()).toMatchObject({ version: "17.9.3-ee", enterprise: true });
    const shown = await api.Projects.show(7);
    expect(shown).toMatchObject({
      path_with_namespace: "infra/vms",
      default_branch: "main",
      permissions: { project_access: { access_level: 30 }, group_access: null },
    });
    // A developer does not see the project's CI/CD settings.
    expect(shown).not.toHaveProperty("ci_pipeline_variables_minimum_override_role");
  });

  it("below 17.10 drops the inputs parameter unread, so the spec's defaults and requirements apply", async () => {
    const { api } = await start({ version: "17.9.3" });
    expect(await failureOf(createPipeline(api, 7, "main", VM))).toStrictEqual({
      status: 400,
      description:
        '{"base":["`vm_name` input: required value has not been provided, `vm_ip` input: required value has not been provided"]}',
    });
  });
});
