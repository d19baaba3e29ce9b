import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runBot } from "./support/process.js";
import { TEST_SECRETS } from "./support/secrets.js";

const dir = mkdtempSync(join(tmpdir(), "vmbot-main-"));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("start-up", () => {
  it("exits non-zero naming every missing or malformed variable, and echoes no secret", async () => {
    const bot = runBot(
      {
        SLACK_BOT_TOKEN: TEST_SECRETS.appToken,
        GITLAB_TOKEN: TEST_SECRETS.gitlabToken,
        GITLAB_PROJECT: "not a project",
        POLL_INTERVAL_MS: "soon",
        APPROVERS: "U0APPROVER",
      },
      dir,
    );
    expect(await bot.exited).toBe(1);
    const stderr = bot.stderr();
    expect(stderr).toContain("vmbot cannot start: 5 configuration problems:");
    expect(stderr).toContain(
      "  - SLACK_BOT_TOKEN must start with xoxb- (the app's Bot User OAuth Token)",
    );
    expect(stderr).toContain(
      "  - SLACK_SIGNING_SECRET is required in HTTP mode: set it to the app's Signing Secret, or set SLACK_APP_TOKEN for Socket Mode",
    );
    expect(stderr).toContain(
      "  - GITLAB_PROJECT must be a project ID (e.g. 42) or a full path (e.g. infra/vms)",
    );
    expect(stderr).toContain(
      "  - POLL_INTERVAL_MS must be a whole number (milliseconds between pipeline polls)",
    );
    expect(stderr).toContain(
      "  - ADMINS is required: the Slack user or user-group IDs allowed to unlock Terraform state, e.g. U0123ABCD (or a policy file in VMBOT_POLICY)",
    );
    expect(stderr).toContain("See .env.example for every variable and its meaning.");
    for (const secret of Object.values(TEST_SECRETS)) expect(stderr).not.toContain(secret);
  });
});
