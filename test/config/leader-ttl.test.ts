import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { DEFAULT_LEADER_TTL_MS } from "../../src/store/postgres/leader.js";
import { TEST_SECRETS } from "../support/secrets.js";

const minimal = {
  SLACK_BOT_TOKEN: TEST_SECRETS.botToken,
  SLACK_SIGNING_SECRET: TEST_SECRETS.signingSecret,
  GITLAB_TOKEN: TEST_SECRETS.gitlabToken,
  GITLAB_PROJECT: "infra/vms",
  APPROVERS: "U0APPROVER",
  ADMINS: "U0ADMIN",
};

function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("the configuration was accepted");
}

const RANGE =
  "LEADER_TTL must be a duration from 3s to 5m, like 15s or 1m (how long another replica waits before taking over from a leader that stopped)";

describe("LEADER_TTL", () => {
  it("is the leader's own default, 15 seconds, when unset or blank", () => {
    expect(loadConfig(minimal).leaderTtlMs).toBe(DEFAULT_LEADER_TTL_MS);
    expect(DEFAULT_LEADER_TTL_MS).toBe(15_000);
    expect(loadConfig({ ...minimal, LEADER_TTL: "  " }).leaderTtlMs).toBe(15_000);
  });

  it.each([
    ["15s", 15_000],
    ["30s", 30_000],
    [" 1M ", 60_000],
    ["3s", 3_000],
    ["5m", 300_000],
    ["4500ms", 4_500],
  ])("reads %j as %i ms", (value, ms) => {
    expect(loadConfig({ ...minimal, LEADER_TTL: value }).leaderTtlMs).toBe(ms);
  });

  it.each(["2s", "2999ms", "301s", "6m", "0s", "15", "15 s", "1h", "-15s", "1.5s", "fifteen"])(
    "refuses %j, saying what it takes",
    (value) => {
      expect(problemsOf({ ...minimal, LEADER_TTL: value })).toEqual([RANGE]);
    },
  );
});
