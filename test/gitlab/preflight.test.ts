import { describe, expect, it } from "vitest";
import { judgeGitlab, versionOf, type PreflightSettings } from "../../src/gitlab/preflight.js";
import { failureCause } from "../../src/tracker/failure-cause.js";
import {
  syntheticLockError,
  syntheticStateAuthError,
} from "../../sandbox/simulators/gitlab/traces.js";

const settings: PreflightSettings = {
  url: "https://gitlab.example.com",
  project: "infra/vms",
  ref: "main",
  pipelineParams: "inputs",
  sendsVariables: true,
};

const about = { version: "18.2.1", accessLevel: 40, variablesMinimumRole: "developer" };

describe("judging GitLab at start", () => {
  it.each([
    ["17.9.3-ee", "inputs", true],
    ["16.11.0", "inputs", true],
    ["17.10.0", "inputs", false],
    ["17.10.2-ee", "inputs", false],
    ["18.0.0", "inputs", false],
    ["17.9.3", "variables", false],
    ["unknown", "inputs", false],
  ] as const)("GitLab %s in %s mode: fatal %s", (version, pipelineParams, fatal) => {
    const result = judgeGitlab({ ...about, version }, { ...settings, pipelineParams });
    expect(result.fatal.length > 0).toBe(fatal);
    expect(result.warnings).toEqual([]);
  });

  it("reads major and minor from GitLab's version strings", () => {
    expect(versionOf("17.10.2-ee")).toEqual([17, 10]);
    expect(versionOf("v17")).toBeUndefined();
  });

  it.each([
    [30, "The bot's token is a Developer in infra/vms; it needs to be a Maintainer"],
    [20, "The bot's token is a Reporter in infra/vms; it needs to be a Maintainer"],
    [null, "The bot's token has no role in infra/vms that GitLab shows"],
  ])("warns about access level %s", (accessLevel, words) => {
    const result = judgeGitlab({ ...about, accessLevel, variablesMinimumRole: null }, settings);
    expect(result.fatal).toEqual([]);
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings[0]).toContain(words);
  });

  it.each([
    ["no_one_allowed", 40, true, true],
    ["owner", 40, true, true],
    ["maintainer", 40, true, false],
    ["developer", 40, true, false],
    ["no_one_allowed", 40, false, false],
  ] as const)(
    "pipeline variables limited to %s, token level %s, sending variables %s: warns %s",
    (variablesMinimumRole, accessLevel, sendsVariables, warns) => {
      const result = judgeGitlab(
        { ...about, accessLevel, variablesMinimumRole },
        { ...settings, sendsVariables },
      );
      expect(
        result.warnings.some((w) => w.includes("Minimum role to use pipeline variables")),
      ).toBe(warns);
    },
  );
});

describe("a failed job's cause, from its whole log", () => {
  it("names the Maintainer role when GitLab refused the state lock", () => {
    expect(failureCause(syntheticStateAuthError())).toContain("must be a Maintainer");
  });

  it("names who holds the lock and /vm unlock when the state is locked", () => {
    const cause = failureCause(
      syntheticLockError({
        id: "2b6a1e44-1111-4c3b-9d7e-0a1b2c3d4e5f",
        who: "root@runner-12",
        createdAt: new Date("2026-12-01T08:00:00Z"),
      }),
    );
    expect(cause).toBe(
      "The Terraform state is locked by root@runner-12: an admin can clear a stuck lock with `/vm unlock`, then run the request again.",
    );
  });

  it("says nothing when the log shows no cause it knows", () => {
    expect(failureCause("Error: something else entirely")).toBeUndefined();
  });
});
