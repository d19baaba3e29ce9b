import { Gitlab, GitbeakerRequestError, GitbeakerRetryError, Projects } from "@gitbeaker/rest";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createRateLimiters,
  getMatchingRateLimiter,
  type RateLimiters,
} from "@gitbeaker/requester-utils";
import { createRequester, rateLimitFor, retryAfterMs } from "../../src/gitlab/requester.js";
import {
  startFakeGitlab,
  VM_PIPELINE_INPUTS,
  type FakeGitlab,
} from "../../sandbox/simulators/gitlab/index.js";
import { TEST_SECRETS } from "../support/secrets.js";

let gitlab: FakeGitlab;
let api: InstanceType<typeof Gitlab>;

beforeEach(async () => {
  gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: "infra/vms", inputs: VM_PIPELINE_INPUTS }],
  });
  api = new Gitlab({
    host: gitlab.url,
    token: TEST_SECRETS.gitlabToken,
    requesterFn: createRequester({ maxRetries: 2, baseDelayMs: 10, maxDelayMs: 2_000 }),
  });
});
afterEach(async () => {
  await gitlab.close();
});

const create = async () =>
  (await api.Pipelines.create("infra/vms", "main", {
    inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" },
  } as Parameters<typeof api.Pipelines.create>[2])) as unknown as { id: number };
/** The limits gitbeaker's resources take when none are given (its DEFAULT_RATE_LIMITS). */
const DEFAULT_LIMITS = (() => {
  let limits: Record<string, unknown> = {};
  new Projects({
    host: "http://gitlab.invalid",
    token: "-",
    requesterFn: (options: { rateLimits?: Record<string, unknown> }) => {
      limits = options.rateLimits ?? {};
      return {} as never;
    },
  });
  return limits as Parameters<typeof createRateLimiters>[0];
})();

const creates = () => gitlab.requestsTo("POST", /\/pipeline$/);

describe("the GitLab requester", () => {
  it("shows only GitLab's successful answers to its observer: an error page may be a proxy's, dated by another clock", async () => {
    const seen: number[] = [];
    const observed = new Gitlab({
      host: gitlab.url,
      token: TEST_SECRETS.gitlabToken,
      requesterFn: createRequester({ maxRetries: 2, baseDelayMs: 10, maxDelayMs: 2_000 }, (r) => {
        seen.push(r.status);
      }),
    });
    gitlab.failNext({ method: "GET", path: /\/projects\/infra%2Fvms$/ }, { status: 503 });
    await observed.Projects.show("infra/vms");
    expect(seen).toEqual([200]);
  });

  it("never repeats a pipeline creation that met a 502, so no VM is created twice", async () => {
    gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, { status: 502 });
    await expect(create()).rejects.toBeInstanceOf(GitbeakerRequestError);
    expect(creates()).toHaveLength(1);
  });

  it("retries a creation refused with 429 after the server's Retry-After", async () => {
    gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, { status: 429, retryAfter: 1 });
    const started = Date.now();
    const pipeline = await create();
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(pipeline.id).toBe(gitlab.pipelines[0]!.id);
    expect(creates()).toHaveLength(2);
    expect(gitlab.pipelines).toHaveLength(1);
  });

  it("retries a read that met 502, 503 or a dropped connection", async () => {
    const { id } = await create();
    const path = new RegExp(`/pipelines/${id}$`);
    gitlab.failNext({ method: "GET", path }, { status: 502 });
    gitlab.failNext({ method: "GET", path }, "reset");
    const pipeline = await api.Pipelines.show("infra/vms", id);
    expect(pipeline).toMatchObject({ id });
    expect(gitlab.requestsTo("GET", path)).toHaveLength(3);
  });

  it("gives up on a read after its bounded number of retries", async () => {
    const { id } = await create();
    const path = new RegExp(`/pipelines/${id}$`);
    gitlab.failNext({ method: "GET", path }, { status: 503 }, { times: 5 });
    await expect(api.Pipelines.show("infra/vms", id)).rejects.toBeInstanceOf(GitbeakerRetryError);
    expect(gitlab.requestsTo("GET", path)).toHaveLength(3);
  });

  it("does not retry what GitLab refused for good", async () => {
    gitlab.setTokenValid(false);
    await expect(create()).rejects.toMatchObject({ cause: { description: "401 Unauthorized" } });
    expect(creates()).toHaveLength(1);
  });
});

describe("retryAfterMs", () => {
  it("reads seconds and HTTP dates", () => {
    expect(retryAfterMs("3")).toBe(3_000);
    expect(retryAfterMs("Wed, 02 Dec 2026 10:00:05 GMT", Date.parse("2026-12-02T10:00:00Z"))).toBe(
      5_000,
    );
    expect(retryAfterMs(null)).toBeUndefined();
    expect(retryAfterMs("soon")).toBeUndefined();
  });
});

describe("rateLimitFor", () => {
  const own = (limiters: RateLimiters) =>
    new Set(
      Object.values(limiters).map((limit) => (typeof limit === "function" ? limit : limit.limit)),
    );
  const ENDPOINTS = [
    "projects/42/pipeline",
    "projects/43/pipeline",
    "projects/infra%2Fvms/pipeline",
    "projects/42/pipelines/17",
    "projects/42/pipelines/17/jobs",
    "projects/42/jobs",
    "projects/42/jobs/5/play",
    "projects/42/jobs/5/trace",
    "projects/42/jobs/6/trace",
    "projects/42/issues/3/notes",
    "projects/42/export",
    "projects/42/repository/archive.zip",
    "groups/7/members",
    "metadata",
    "projects/4a2/jobs",
  ];

  it.each([
    ["gitbeaker's own limits", createRateLimiters(DEFAULT_LIMITS)],
    [
      "limits that name numbers",
      createRateLimiters({ "**": 10, "projects/42/**": 5, "projects/*/jobs/5/*": 2 }),
    ],
  ])("takes the limiter gitbeaker's lookup takes, with %s", (_, limiters) => {
    expect(Object.keys(limiters).length).toBeGreaterThan(2);
    for (const method of ["GET", "POST"]) {
      for (const endpoint of ENDPOINTS) {
        const cached = rateLimitFor(endpoint, limiters, method);
        const looked = getMatchingRateLimiter(endpoint, limiters, method);
        if (own(limiters).has(looked)) expect(cached, `${method} ${endpoint}`).toBe(looked);
        // gitbeaker's fallback, made anew for each lookup: kept once for the endpoint's shape.
        else expect(own(limiters).has(cached), `${method} ${endpoint}`).toBe(false);
        expect(rateLimitFor(endpoint, limiters, method)).toBe(cached);
      }
    }
  });

  it("shares one limiter between endpoints that differ only by their numbers", () => {
    const limiters = createRateLimiters({
      "projects/*/issues/*/notes": { method: "post", limit: 1 },
    });
    const a = rateLimitFor("projects/42/issues/3/notes", limiters, "GET");
    expect(rateLimitFor("projects/43/issues/9/notes", limiters, "GET")).toBe(a);
    expect(rateLimitFor("projects/43/issues/9/notes", limiters, "POST")).not.toBe(a);
  });
});
