/**
 * vmbot against a GitLab with a current GitLab's rules: the default branch protected for
 * Maintainers, the Terraform state lock refused to a job token below Maintainer, untyped inputs
 * as strings, and no `inputs` parameter before 17.10.
 */
import { describe, expect, it } from "vitest";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import { StartupError } from "../../src/start.js";
import {
  CHANNEL,
  REQUESTER,
  askForVm,
  harnessPerTest,
  runUntilSettled,
  type Harness,
  type HarnessOptions,
} from "../support/harness.js";

const start = harnessPerTest();

async function startupFailure(options: HarnessOptions): Promise<string> {
  const failure = await start(options).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(StartupError);
  return (failure as Error).message;
}

const requestMessage = (h: Harness) =>
  JSON.stringify(h.slack.messages.find((m) => m.channel === CHANNEL && !m.thread_ts)?.blocks);

describe("GitLab's version", () => {
  it("stops the start in inputs mode against a GitLab older than 17.10, naming its version", async () => {
    const message = await startupFailure({ gitlab: { version: "17.9.3-ee" } });
    expect(message).toContain("GitLab at http://127.0.0.1:");
    expect(message).toContain(
      "is version 17.9.3-ee, which ignores the inputs of a pipeline created through the API (they arrived in 17.10)",
    );
    expect(message).toContain("GITLAB_PIPELINE_PARAMS=variables");
  });

  it("starts against that GitLab with GITLAB_PIPELINE_PARAMS=variables, and sends variables only", async () => {
    const h = await start({
      gitlab: { version: "17.9.3-ee" },
      env: { GITLAB_PIPELINE_PARAMS: "variables" },
      project: { inputs: undefined },
    });
    const pipelineId = await askForVm(h);
    const body = JSON.parse(h.gitlab.requestsTo("POST", /\/pipeline$/)[0]!.body) as object;
    expect(body).not.toHaveProperty("inputs");
    expect(h.gitlab.pipelines.find((p) => p.id === pipelineId)?.variables).toContainEqual({
      key: "VM_NAME",
      value: "web-01",
      variable_type: "env_var",
    });
  });

  it("starts against a current GitLab, having read its version and the token's role once", async () => {
    const h = await start();
    expect(h.gitlab.requestsTo("GET", /\/metadata$/)).toHaveLength(1);
    expect(h.gitlab.requestsTo("GET", /\/projects\/infra%2Fvms$/)).toHaveLength(1);
    expect(h.logs.some((line) => line.includes('"msg":"GitLab checked"'))).toBe(true);
  });
});

describe("a token whose user is only a Developer", () => {
  it("is named in a warning at start, with the role it needs", async () => {
    const h = await start({ project: { role: "developer" } });
    const warning = h.logs.find((line) => line.includes("it needs to be a Maintainer"));
    expect(warning).toContain(
      "The bot's token is a Developer in infra/vms; it needs to be a Maintainer: on the protected branch main a Developer cannot run pipelines or play jobs",
    );
  });

  it("cannot start a pipeline on the protected main: the request message names the branch and the role", async () => {
    const h = await start({ project: { role: "developer" } });
    await h.signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
    await h.slack.waitFor("views.open");
    const view = h.slack.views.at(-1)!;
    await h.signer.viewSubmission({
      view,
      values: stateValuesFor(view, { vm_name: "web-01", vm_ip: "192.168.1.50/24" }),
      userId: REQUESTER,
    });
    await h.slack.waitFor("chat.update", (call) => JSON.stringify(call.args).includes("Failed"));
    expect(h.gitlab.pipelines).toHaveLength(0);
    const text = requestMessage(h);
    expect(text).toContain("You do not have sufficient permission to run a pipeline on 'main'");
    expect(text).toContain(
      "The branch is protected: the bot's token needs a user with the Maintainer role on the project",
    );
  });

  it("on an unprotected branch gets a plan job that fails on the state lock, and the message says why", async () => {
    const h = await start({ project: { role: "developer", protectedBranches: {} } });
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    expect(h.gitlab.job(pipelineId, "tf:plan").status).toBe("failed");
    await h.bot.tracker.tick();
    const request = (await h.bot.store.getRequest((await h.bot.store.listAudit())[0]!.requestId!))!;
    expect(request.status).toBe("failed");
    expect(request.error).toContain(
      "GitLab refused the Terraform state lock to the job: the user whose token started the pipeline (the bot's) must be a Maintainer of the project.",
    );
    expect(requestMessage(h)).toContain("must be a Maintainer of the project");
  });
});
