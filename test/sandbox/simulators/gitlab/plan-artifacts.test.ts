import { Gitlab, GitbeakerRequestError, GitbeakerTimeoutError } from "@gitbeaker/rest";
import { afterEach, describe, expect, it } from "vitest";
import { TEST_SECRETS } from "../../../support/secrets.js";
import {
  startFakeGitlab,
  type FakeGitlab,
  type FakeProjectOptions,
  type Role,
} from "../../../../sandbox/simulators/gitlab/index.js";

/**
 * The fake GitLab's job artifacts erasure, the apply job's need of the plan's artifacts, who
 * played a job, and answers lost after GitLab acted.
 */

const token = TEST_SECRETS.gitlabToken;
const project: FakeProjectOptions = {
  id: 7,
  path: "infra/vms",
  role: "maintainer",
  inputs: { vm_name: {}, vm_ip: {}, action: { default: "apply" } },
};

let fake: FakeGitlab | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/**
 * A pipeline whose plan a Maintainer ran (GitLab refuses the state lock, and so the plan, to
 * anyone less), waiting on its manual apply; then the token's user has `role`. The client given
 * back gives up after `queryTimeout`; the pipeline is made by one that waits, however busy the
 * machine.
 */
async function planned(role: Role = "maintainer", queryTimeout?: number) {
  fake = await startFakeGitlab({ token, projects: [{ ...project, role: "maintainer" }] });
  const patient = new Gitlab({ host: fake.url, token });
  const api =
    queryTimeout === undefined ? patient : new Gitlab({ host: fake.url, token, queryTimeout });
  const created = (await patient.Pipelines.create(7, "main", {
    inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" },
  } as never)) as { id: number };
  for (let i = 0; i < 20 && fake.job(created.id, "tf:apply").status !== "manual"; i++) {
    fake.advance(created.id);
  }
  fake.setRole(7, role);
  return { fake, api, id: created.id };
}

function runUntilDone(gitlab: FakeGitlab, id: number, job: string): void {
  for (let i = 0; i < 20; i++) {
    if (["success", "failed", "canceled"].includes(gitlab.job(id, job).status)) return;
    gitlab.advance(id);
  }
  throw new Error(`${job} never finished`);
}

async function statusOf(promise: Promise<unknown>): Promise<number> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GitbeakerRequestError);
  return (error as GitbeakerRequestError).cause?.response.status ?? 0;
}

describe("fake GitLab: deleting a job's artifacts", () => {
  it("answers 204, removes the archive and keeps the log", async () => {
    const { fake, id } = await planned();
    const plan = fake.job(id, "tf:plan");
    expect(plan.artifacts.has("tfplan")).toBe(true);
    const response = await fetch(`${fake.url}/api/v4/projects/7/jobs/${plan.id}/artifacts`, {
      method: "DELETE",
      headers: { "private-token": token },
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(plan.artifacts.size).toBe(0);
    expect(plan.log).toContain("terraform plan");
    const shown = (await (
      await fetch(`${fake.url}/api/v4/projects/7/jobs/${plan.id}`, {
        headers: { "private-token": token },
      })
    ).json()) as Record<string, unknown>;
    expect(shown).not.toHaveProperty("artifacts_file");
    // Again: still 204, as DeleteService finds nothing more to erase.
    const again = await fetch(`${fake.url}/api/v4/projects/7/jobs/${plan.id}/artifacts`, {
      method: "DELETE",
      headers: { "private-token": token },
    });
    expect(again.status).toBe(204);
  });

  it("is refused to a Developer with 403 (it needs Maintainer) and the artifacts stay", async () => {
    const { fake, api, id } = await planned("developer");
    const plan = fake.job(id, "tf:plan");
    expect(await statusOf(api.JobArtifacts.remove(7, { jobId: plan.id }))).toBe(403);
    expect(plan.artifacts.has("tfplan")).toBe(true);
  });

  it("answers 404 for an unknown job and 401 without a token", async () => {
    const { fake, api } = await planned();
    expect(await statusOf(api.JobArtifacts.remove(7, { jobId: 999_999 }))).toBe(404);
    const anonymous = await fetch(`${fake.url}/api/v4/projects/7/jobs/5002/artifacts`, {
      method: "DELETE",
    });
    expect(anonymous.status).toBe(401);
  });
});

describe("fake GitLab: the apply job needs the plan's artifacts", () => {
  it("applies when the plan's artifacts are there", async () => {
    const { fake, id } = await planned();
    fake.playJob(id, "tf:apply");
    runUntilDone(fake, id, "tf:apply");
    expect(fake.job(id, "tf:apply").status).toBe("success");
  });

  it("fails with Terraform's missing plan file error when they were deleted, after a cancel too", async () => {
    const { fake, api, id } = await planned();
    await api.Pipelines.cancel(7, id);
    await api.JobArtifacts.remove(7, { jobId: fake.job(id, "tf:plan").id });
    // Canceling left the manual job playable: someone with Developer rights plays it.
    fake.addUser({ username: "mallory" });
    fake.playJob(id, "tf:apply", { as: "mallory" });
    runUntilDone(fake, id, "tf:apply");
    const apply = fake.job(id, "tf:apply");
    expect(apply.status).toBe("failed");
    expect(apply.log).toContain('Error: Failed to load "tfplan" as a plan file');
    expect(apply.log).toContain("no such file or directory");
    expect(apply.log).toContain("ERROR: Job failed");
    expect(apply.artifacts.has("vm_ip.txt")).toBe(false);
    const shown = (await api.Jobs.show(7, apply.id)) as { user: { username: string } };
    expect(shown.user.username).toBe("mallory");
  });
});

describe("fake GitLab: answers lost after GitLab acted", () => {
  it("plays the job, then drops the connection", async () => {
    const { fake, api, id } = await planned();
    fake.failNext({ method: "POST", path: /\/play$/ }, { afterEffect: "reset" });
    await expect(api.Jobs.play(7, fake.job(id, "tf:apply").id)).rejects.toThrow(/fetch failed/);
    expect(fake.job(id, "tf:apply").status).toBe("pending");
    expect(fake.requestsTo("POST", /\/play$/)).toHaveLength(1);
  });

  it("plays the job, then answers too late for the client", async () => {
    // The play has to reach the fake before the client gives up, however busy the machine.
    const { fake, api, id } = await planned("maintainer", 1_000);
    fake.failNext({ method: "POST", path: /\/play$/ }, { afterEffect: { delayMs: 2_000 } });
    await expect(api.Jobs.play(7, fake.job(id, "tf:apply").id)).rejects.toBeInstanceOf(
      GitbeakerTimeoutError,
    );
    expect(fake.job(id, "tf:apply").status).toBe("pending");
  });

  it("cancels, removes a lock or deletes artifacts, then answers 502 as a proxy would", async () => {
    const { fake, api, id } = await planned();
    fake.failNext({ path: /\/cancel$/ }, { afterEffect: { status: 502 } });
    fake.failNext({ method: "DELETE", path: /\/artifacts$/ }, { afterEffect: { status: 502 } });
    fake.failNext({ method: "DELETE", path: /\/lock$/ }, { afterEffect: "reset" });
    fake.addUser({ username: "alice" });
    fake.addTerraformState("infra/vms", "general", { lockedBy: "alice" });
    // Raw requests: gitbeaker's stock requester would retry a 502.
    const send = (method: string, path: string) =>
      fetch(`${fake.url}/api/v4/projects/7${path}`, {
        method,
        headers: { "private-token": token },
      }).then((response) => response.status);
    expect(await send("POST", `/pipelines/${id}/cancel`)).toBe(502);
    expect(fake.job(id, "ansible:configure").status).toBe("canceled");
    expect(await send("DELETE", `/jobs/${fake.job(id, "tf:plan").id}/artifacts`)).toBe(502);
    expect(fake.job(id, "tf:plan").artifacts.size).toBe(0);
    await expect(api.ProjectTerraformState.removeTerraformStateLock(7, "general")).rejects.toThrow(
      /fetch failed/,
    );
    expect(fake.terraformState(7, "general")?.lock).toBeNull();
  });
});
