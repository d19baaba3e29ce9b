import { describe, expect, it } from "vitest";
import {
  syntheticLockError,
  syntheticStateAuthError,
} from "../../sandbox/simulators/gitlab/traces.js";
import { parsePlanText } from "../../src/terraform/plan-text.js";
import { classifyFailure } from "../../src/tracker/failure-cause.js";
import {
  causeWords,
  failureExcerptWords,
  jobFailedWords,
  nextStep,
  noNextStepWords,
  notYoursToPlanAgain,
  notYoursToRetry,
  plannedAgainReply,
  retryNotTakenWords,
  retryRefusedWords,
  retryStartedWords,
  retryUnknownWords,
} from "../../src/views/failure.js";
import { requestMessage } from "../../src/views/request-message.js";
import { renderRequest } from "../../src/views/render.js";
import { readFixture } from "../support/fixtures.js";
import { planSummary, sampleRequest } from "../support/requests.js";

const job = {
  name: "ansible:configure",
  status: "failed",
  webUrl: "https://gitlab.example.com/j/9",
};

/** Vault's API client's answer to a token its policy does not allow, as a job prints it. */
const VAULT_DENIED = `Error: error reading from Vault: Error making API request.

URL: GET https://vault.example.com/v1/secret/data/proxmox
Code: 403. Errors:

* permission denied
`;

describe("a failed job's cause, classified from its log", () => {
  it("reads a held lock with its holder, and an unauthorised lock", () => {
    const lock = syntheticLockError({
      id: "2b6a1e44-1111-4c3b-9d7e-0a1b2c3d4e5f",
      who: "root@runner-12",
      createdAt: new Date("2026-12-01T08:00:00Z"),
    });
    expect(classifyFailure(lock)).toEqual({ cause: "state_locked", lockedBy: "root@runner-12" });
    expect(classifyFailure(syntheticStateAuthError())).toEqual({ cause: "state_auth" });
  });

  it("reads an unreachable host from a real ansible-playbook run", () => {
    const log = readFixture("corpus/ansible-core-2.14/all-unreachable.txt");
    expect(classifyFailure(log)).toEqual({ cause: "unreachable" });
    // A run whose hosts all answered is not unreachable.
    expect(classifyFailure("db-02 : ok=3 changed=1 unreachable=0 failed=1")).toBeUndefined();
  });

  it("reads Vault's permission denied, the runner's timeout, and a provider error from a real plan", () => {
    expect(classifyFailure(VAULT_DENIED)?.cause).toBe("vault_denied");
    expect(
      classifyFailure("ERROR: Job failed: execution took longer than 1h0m0s seconds\n")?.cause,
    ).toBe("timeout");
    const text = readFixture("corpus/terraform-1.11/plan-error-validation.txt");
    const diagnostic = parsePlanText(text).errors[0];
    expect(classifyFailure(text, diagnostic)).toEqual({
      cause: "terraform_error",
      summary: "Invalid value for variable",
    });
    expect(classifyFailure("Error: something else entirely")).toBeUndefined();
  });
});

describe("the words of a failure", () => {
  it("says each cause in one sentence", () => {
    expect(causeWords({ cause: "state_locked", lockedBy: "alice@runner" })).toBe(
      "The Terraform state is locked by alice@runner: an admin can clear a stuck lock with `/vm unlock`, then run the request again.",
    );
    expect(causeWords({ cause: "unreachable" })).toBe(
      "Ansible could not reach the VM over SSH: it may still be booting, or its address, gateway or VLAN do not let the runner in.",
    );
    expect(causeWords({ cause: "vault_denied" })).toBe(
      "Vault refused the job's token (permission denied): its Vault role or policy must allow reading the secrets the pipeline uses.",
    );
    expect(causeWords({ cause: "timeout" })).toBe(
      "The job ran longer than its time limit in GitLab and was stopped.",
    );
    expect(causeWords({ cause: "terraform_error", summary: "Invalid value for variable" })).toBe(
      "Terraform stopped on an error from the provider or its API: Invalid value for variable.",
    );
    expect(causeWords({ cause: "state_auth" })).toContain("must be a Maintainer of the project");
  });

  it("puts the job, its log, the cause and where the details are in the message, no log lines", () => {
    expect(jobFailedWords("configure", job, causeWords({ cause: "unreachable" }))).toBe(
      "The configure job `ansible:configure` failed in GitLab. <https://gitlab.example.com/j/9|Open its log>. Ansible could not reach the VM over SSH: it may still be booting, or its address, gateway or VLAN do not let the runner in. The VM exists: the failed task is in the thread.",
    );
    expect(jobFailedWords("plan", { ...job, name: "tf:plan", status: "canceled" }, undefined)).toBe(
      "The plan job `tf:plan` was canceled in GitLab. <https://gitlab.example.com/j/9|Open its log>. The error is in the thread.",
    );
  });

  it("puts the excerpt in the thread as a code block, with the cut said first", () => {
    expect(failureExcerptWords("error", "Error: boom\n\n  on main.tf line 1", undefined)).toBe(
      ":x: Terraform's error:\n```Error: boom\n\n  on main.tf line 1```",
    );
    expect(failureExcerptWords("tail", "ERROR: Job failed", "Only the first 1 MB was read.")).toBe(
      ":x: The last lines of the job's log:\nOnly the first 1 MB was read.\n```ERROR: Job failed```",
    );
  });
});

describe("a failed request's next step", () => {
  const configureFailed = sampleRequest({
    status: "failed",
    error: "The configure job failed.",
    failure: { stage: "configure", jobId: 9, cause: "unreachable" },
  });
  const planFailed = sampleRequest({
    status: "failed",
    error: "The plan job failed.",
    failure: { stage: "plan", jobId: 7, cause: "state_locked" },
  });

  it("offers Retry configure after a configure failure and Plan again after a plan failure", () => {
    expect(nextStep(configureFailed)).toBe("retry_configure");
    expect(nextStep(planFailed)).toBe("plan_again");
    expect(
      nextStep(sampleRequest({ status: "failed", failure: { stage: "apply", jobId: 8 } })),
    ).toBe(undefined);
    const retry = JSON.stringify(requestMessage(configureFailed).blocks);
    expect(retry).toContain('"action_id":"request_retry_configure"');
    expect(retry).toContain('"text":"Retry configure"');
    expect(retry).not.toContain("request_withdraw");
    const again = JSON.stringify(requestMessage(planFailed).blocks);
    expect(again).toContain('"action_id":"request_plan_again"');
    expect(again).toContain('"text":"Plan again"');
    // After the plan (the message is the plan message): the button is there too.
    const reviewed = renderRequest({
      ...configureFailed,
      review: {
        plan: planSummary([]),
        planJobId: 7,
        planJobUrl: "https://gitlab.example.com/j/7",
        planFile: "none",
      },
    });
    expect(JSON.stringify(reviewed.blocks)).toContain("request_retry_configure");
  });

  it("shows where a plan went again instead of the button", () => {
    const linked = sampleRequest({
      ...planFailed,
      failure: {
        stage: "plan",
        jobId: 7,
        again: { requestId: "vm-new-12345678", by: "U0REQ", at: "2026-12-02T10:05:00.000Z" },
      },
    });
    const body = JSON.stringify(requestMessage(linked).blocks);
    expect(body).toContain(":mag: <@U0REQ> planned this again as request `vm-new-12345678`.");
    expect(body).not.toContain("request_plan_again");
    expect(noNextStepWords(linked, "again")).toBe(
      "web-01 was planned again already, as request `vm-new-12345678`: follow that one.",
    );
  });

  it("answers the people around a retry in words", () => {
    expect(notYoursToRetry(configureFailed, ["U0APPROVER", "S0GROUP"])).toBe(
      "Only <@U0REQ>, who asked for web-01, or an approver (<@U0APPROVER> or <!subteam^S0GROUP>) can retry its configuration.",
    );
    expect(notYoursToPlanAgain(planFailed)).toBe(
      "Only <@U0REQ>, who asked for web-01, can plan it again. You can ask for your own VM with /vm create.",
    );
    expect(noNextStepWords(sampleRequest({ status: "ready" }), "retry")).toBe(
      "web-01 is ready now: there is nothing to retry its configuration for.",
    );
    expect(
      retryStartedWords("U0APPROVER", { id: 12, webUrl: "https://gitlab.example.com/j/12" }),
    ).toBe(
      ":wrench: <@U0APPROVER> retried the configuration: GitLab runs it again as <https://gitlab.example.com/j/12|job #12>.",
    );
    expect(retryRefusedWords(configureFailed, "Job is not retryable.")).toBe(
      "GitLab did not run the configuration of web-01 again, so it is still failed. Job is not retryable.",
    );
    expect(retryNotTakenWords("Job is not retryable.")).toBe(
      "The configure job failed in GitLab, and GitLab did not run it again. Job is not retryable. The VM exists: press Retry configure to try once more.",
    );
    expect(retryUnknownWords(configureFailed)).toContain("it does not retry twice");
    expect(plannedAgainReply("U0REQ", sampleRequest({ id: "vm-new-12345678" }))).toBe(
      ":mag: <@U0REQ> planned web-01 again with the same inputs: follow `vm-new-12345678`.",
    );
  });
});
