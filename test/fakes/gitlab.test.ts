import path from "node:path";
import {
  Gitlab,
  GitbeakerRequestError,
  GitbeakerTimeoutError,
  type PipelineVariableSchema,
} from "@gitbeaker/rest";
import { afterEach, describe, expect, it } from "vitest";
import { describeWithFixtures, readFixtureJson } from "../support/fixtures.js";
import { TEST_SECRETS } from "../support/secrets.js";
import {
  startFakeGitlab,
  type FakeGitlab,
  type FakeGitlabOptions,
  type FakeProjectOptions,
} from "./gitlab.js";

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
      projects: [{ id: 9, path: "infra/legacy", pipelineVariablesMinimumRole: "maintainer" }],
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
    const impatient = new Gitlab({ host: fake.url, token, queryTimeout: 100 });
    fake.failNext({ path: /\/pipeline$/ }, { delayMs: 300 });
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

describeWithFixtures("fake GitLab JSON against GitLab's own API schemas", () => {
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
