import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { FakeMessage, ResponseUrlPost } from "../../sandbox/simulators/slack/index.js";
import { CHANNEL, harnessPerTest, PROJECT_PATH, type Harness } from "../support/harness.js";

/**
 * `/vm unlock` under the policy's unlock rule: an admin's confirmation is one approval of the lock
 * they saw, and the lock is removed, once, by the confirmation that meets the rule.
 */

const start = harnessPerTest();
const PLATFORM = ["U0PLAT1", "U0PLAT2"];
const SECURITY = "U0SEC1";
const LOCK_PATH = /\/terraform\/state\/general\/lock$/;

const policy = (require: string) => `
version: 1
groups:
  platform: [${PLATFORM.join(", ")}]
  security: [${SECURITY}]
roles:
  approvers: [platform, security]
  admins: [platform, security]
approvals:
  - name: two keys
    action: unlock
    require: ${require}
`;

const dirs: string[] = [];
afterEach(() => {
  dirs.splice(0).forEach((dir) => {
    rmSync(dir, { recursive: true, force: true });
  });
});

/** The bot with `text` as its policy (no APPROVERS, no ADMINS), and `general` locked by alice. */
async function lockedUnder(text: string) {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-policy-unlock-"));
  dirs.push(dir);
  writeFileSync(join(dir, "policy.yaml"), text);
  const h = await start({
    env: { VMBOT_POLICY: join(dir, "policy.yaml"), APPROVERS: undefined, ADMINS: undefined },
    project: { role: "maintainer" },
  });
  h.gitlab.addUser({ username: "alice", name: "Alice Ops" });
  const lockedAt = new Date(Math.floor((Date.now() - 3_600_000) / 1000) * 1000);
  h.gitlab.addTerraformState(PROJECT_PATH, "general", { lockedBy: "alice", lockedAt });
  return h;
}

/** `/vm unlock general` as `userId`, then Force-unlock on the prompt: the answer to the click. */
async function confirmUnlock(h: Harness, userId: string): Promise<ResponseUrlPost> {
  const delivery = await h.signer.slashCommand({
    text: "unlock general",
    userId,
    channelId: CHANNEL,
  });
  const prompt = await h.slack.waitForResponse((post) => post.url === delivery.responseUrl);
  const message: FakeMessage = {
    channel: CHANNEL,
    ts: "1796205600.000100",
    text: String(prompt.body.text),
    blocks: prompt.body.blocks as FakeMessage["blocks"],
    user: h.slack.identity.botUserId,
    bot_id: h.slack.identity.botId,
    app_id: h.slack.identity.appId,
  };
  const before = h.slack.responses.length;
  await h.signer.blockAction({ message, ephemeral: true, actionId: "unlock_confirm", userId });
  return h.slack.waitForResponse((post) => h.slack.responses.indexOf(post) >= before);
}

const unlocks = (h: Harness) => h.gitlab.requestsTo("DELETE", LOCK_PATH).length;

describe("/vm unlock under an unlock rule", () => {
  it("needs one admin from platform and one from security: the first leaves the lock, a second from platform does not count, security's removes it once", async () => {
    const h = await lockedUnder(policy("[{ group: platform }, { group: security }]"));
    expect(String((await confirmUnlock(h, PLATFORM[0]!)).body.text)).toBe(
      ":busts_in_silhouette: Your approval to force-unlock `general` is recorded: 1 of 2 approvals: 1 of 1 from platform, 0 of 1 from security. The lock is removed when the rest approve: each runs `/vm unlock general` and confirms.",
    );
    expect(String((await confirmUnlock(h, PLATFORM[1]!)).body.text)).toMatch(
      /^:busts_in_silhouette: Your approval does not add to what force-unlocking `general` needs \(1 of 2 approvals/,
    );
    expect(unlocks(h)).toBe(0);
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).toBeTruthy();

    expect(String((await confirmUnlock(h, SECURITY)).body.text)).toContain("general");
    expect(unlocks(h)).toBe(1);
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).toBeFalsy();
    const actions = (await h.bot.store.listAudit()).map((entry) => [entry.action, entry.actor]);
    expect(actions).toEqual(
      expect.arrayContaining([
        ["unlock_approval_recorded", PLATFORM[0]],
        ["unlock_approval_recorded", PLATFORM[1]],
        ["unlock_requested", SECURITY],
      ]),
    );
    // Asked again, the state is not locked: nothing more is removed.
    const again = await h.signer.slashCommand({
      text: "unlock general",
      userId: PLATFORM[0]!,
      channelId: CHANNEL,
    });
    const answer = await h.slack.waitForResponse((post) => post.url === again.responseUrl);
    expect(String(answer.body.text)).toContain("is not locked");
    expect(unlocks(h)).toBe(1);
  });

  it("unlocks at the first confirmation when the rule needs one admin, as without a rule", async () => {
    const h = await lockedUnder(policy("[{ group: platform }]"));
    await confirmUnlock(h, PLATFORM[0]!);
    expect(unlocks(h)).toBe(1);
    expect((await h.bot.store.listAudit()).map((entry) => entry.action)).not.toContain(
      "unlock_approval_recorded",
    );
  });
});
