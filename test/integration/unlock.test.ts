import { waitFor } from "../support/wait.js";
import { describe, expect, it } from "vitest";
import type { FakeMessage, ResponseUrlPost } from "../../sandbox/simulators/slack/index.js";
import { expectWithinSlackLimits } from "../support/block-kit.js";
import {
  ADMIN,
  askForVm,
  CHANNEL,
  harnessPerTest,
  PROJECT_PATH,
  REQUESTER,
  type Harness,
  type HarnessOptions,
} from "../support/harness.js";

const start = harnessPerTest();

const HOUR = 3_600_000;
const LOCK_PATH = /\/terraform\/state\/general\/lock$/;

/** A bot whose GitLab token is a Maintainer, with `general` locked by alice three hours ago. */
async function lockedProject(options: HarnessOptions = {}) {
  const h = await start({ ...options, project: { role: "maintainer", ...options.project } });
  h.gitlab.addUser({ username: "alice", name: "Alice Ops" });
  const lockedAt = new Date(Math.floor((Date.now() - 3 * HOUR) / 1000) * 1000);
  h.gitlab.addTerraformState(PROJECT_PATH, "general", { lockedBy: "alice", lockedAt });
  return { h, lockedAt };
}

/** Types `/vm unlock [arg]` and returns the answer posted to its response_url. */
async function unlock(h: Harness, arg = "", userId = ADMIN): Promise<ResponseUrlPost> {
  const delivery = await h.signer.slashCommand({
    text: `unlock ${arg}`.trim(),
    userId,
    channelId: CHANNEL,
  });
  expect(delivery.status).toBe(200);
  return h.slack.waitForResponse((post) => post.url === delivery.responseUrl);
}

/** The ephemeral prompt as the clicker's Slack client holds it. */
function asMessage(h: Harness, post: ResponseUrlPost): FakeMessage {
  return {
    channel: CHANNEL,
    ts: "1796205600.000100",
    text: String(post.body.text),
    blocks: post.body.blocks as FakeMessage["blocks"],
    user: h.slack.identity.botUserId,
    bot_id: h.slack.identity.botId,
    app_id: h.slack.identity.appId,
  };
}

/** Clicks a button of the prompt and returns what the bot answered through the click's response_url. */
async function click(h: Harness, prompt: ResponseUrlPost, actionId: string, userId = ADMIN) {
  const before = h.slack.responses.length;
  await h.signer.blockAction({
    message: asMessage(h, prompt),
    ephemeral: true,
    actionId,
    userId,
  });
  return h.slack.waitForResponse((post) => h.slack.responses.indexOf(post) >= before);
}

const unlockRequests = (h: Harness) => h.gitlab.requestsTo("DELETE", LOCK_PATH);

describe("/vm unlock", () => {
  it("says so when the state is not locked, or when no state is, and changes nothing", async () => {
    const h = await start({ project: { role: "maintainer" } });
    h.gitlab.addTerraformState(PROJECT_PATH, "general");
    expect((await unlock(h, "general")).body).toMatchObject({
      response_type: "ephemeral",
      text: ":unlock: The Terraform state `general` is not locked. Nothing to do.",
    });
    expect((await unlock(h)).body).toMatchObject({
      response_type: "ephemeral",
      text: `:unlock: No Terraform state in \`${PROJECT_PATH}\` is locked. Nothing to do.`,
    });
    expect(unlockRequests(h)).toHaveLength(0);
    expect(h.gitlab.requestsTo("POST", /^\/api\/graphql$/)).toHaveLength(2);
  });

  it("lists the locked states, oldest lock first, when given no name and more than one is locked", async () => {
    const { h } = await lockedProject();
    h.gitlab.addTerraformState(PROJECT_PATH, "vm-db-01", {
      lockedBy: "alice",
      lockedAt: new Date(Date.now() - 5 * HOUR),
    });
    h.gitlab.addTerraformState(PROJECT_PATH, "vm-web-01");
    const answer = await unlock(h);
    expectWithinSlackLimits(answer.body);
    expect(answer.body.text).toBe(`2 Terraform states in ${PROJECT_PATH} are locked.`);
    const listed = JSON.stringify(answer.body.blocks);
    expect(listed.indexOf("`vm-db-01`")).toBeGreaterThan(-1);
    expect(listed.indexOf("`vm-db-01`")).toBeLessThan(listed.indexOf("`general`"));
    expect(listed).not.toContain("vm-web-01");
    expect(listed).toContain("/vm unlock <VM or state>");
    expect(listed).not.toContain("unlock_confirm");
    expect(unlockRequests(h)).toHaveLength(0);
  });

  it("finds a VM's own state by the VM's name", async () => {
    const h = await start({ project: { role: "maintainer" } });
    await askForVm(h, "web-01");
    h.gitlab.addUser({ username: "alice", name: "Alice Ops" });
    h.gitlab.addTerraformState(PROJECT_PATH, "vm-web-01", { lockedBy: "alice" });
    h.gitlab.addTerraformState(PROJECT_PATH, "general", { lockedBy: "alice" });
    const prompt = await unlock(h, "web-01");
    const text = JSON.stringify(prompt.body.blocks);
    expect(text).toContain(
      "The Terraform state `vm-web-01` (the VM `web-01`'s) is locked by *alice*",
    );
    expect(text).toContain('\\"state\\":\\"vm-web-01\\"');
  });

  it("shows the lock, and after confirmation unlocks it, checks, tells the channel and audits", async () => {
    const { h, lockedAt } = await lockedProject();
    const prompt = await unlock(h);
    expectWithinSlackLimits(prompt.body);
    expect(prompt.body.response_type).toBe("ephemeral");
    expect(JSON.stringify(prompt.body.blocks)).toContain(
      `is locked by *alice* since <!date^${lockedAt.getTime() / 1000}^{date_short_pretty} {time}|${lockedAt.toISOString().replace(".000", "")}> (3 h 0 min ago).`,
    );
    expect(unlockRequests(h)).toHaveLength(0);

    const done = await click(h, prompt, "unlock_confirm");
    expect(done.body).toMatchObject({
      replace_original: true,
      text: ":unlock: Unlocked the Terraform state `general`; GitLab confirms it is free. The channel has been told.",
    });
    expect(unlockRequests(h)).toHaveLength(1);
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).toBeNull();
    // Read before (prompt), before the unlock (still the same lock?), again right before reading
    // the lock's ID (a state deleted since is not made again by it), and after (gone?).
    expect(h.gitlab.requestsTo("POST", /^\/api\/graphql$/)).toHaveLength(4);

    const notice = await h.slack.waitFor("chat.postMessage");
    expect(notice.args.channel).toBe(CHANNEL);
    expect(notice.args.text).toContain(
      `:unlock: <@${ADMIN}> force-unlocked the Terraform state \`general\`, locked by *alice* since`,
    );
    const audit = (await h.bot.store.listAudit()).filter((entry) =>
      entry.action.startsWith("unlock"),
    );
    expect(audit.map((entry) => [entry.actor, entry.action, entry.requestId])).toEqual([
      [ADMIN, "unlock_requested", null],
      [ADMIN, "unlocked", null],
    ]);
    expect(audit[1]?.detail).toEqual({
      state: "general",
      holder: "alice",
      lockedAt: lockedAt.toISOString().replace(".000", ""),
    });
  });

  it.each([
    ["a 500 after Slack took it", { afterEffect: 500 }],
    ["a 503 before Slack took it", { status: 503 }],
  ] as const)("tells the channel once when the notice's answer is lost (%s)", async (_, lost) => {
    const { h } = await lockedProject();
    const prompt = await unlock(h);
    h.slack.failNext("chat.postMessage", lost);
    await click(h, prompt, "unlock_confirm");
    await waitFor(
      () =>
        h.slack.messages.some((m) => m.channel === CHANNEL && m.text.includes("force-unlocked"))
          ? true
          : undefined,
      "the notice",
    );
    // The click is answered; then nothing more is said in the channel, here or in place.
    await h.slack.waitForResponse((post) => String(post.body.text).includes("Unlocked"));
    const notices = h.slack.messages.filter((m) => m.text.includes("force-unlocked"));
    expect(notices).toHaveLength(1);
    expect(h.slack.responses.filter((post) => post.body.response_type === "in_channel")).toEqual(
      [],
    );
  });

  it("leaves the lock when the admin cancels", async () => {
    const { h } = await lockedProject();
    const prompt = await unlock(h);
    const answer = await click(h, prompt, "unlock_cancel");
    expect(answer.body).toMatchObject({
      replace_original: true,
      text: ":lock: Left the Terraform state `general` locked. Nothing changed.",
    });
    expect(unlockRequests(h)).toHaveLength(0);
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).not.toBeNull();
    expect(h.slack.callsTo("chat.postMessage")).toHaveLength(0);
  });

  it("refuses a non-admin, privately, without asking GitLab", async () => {
    const { h } = await lockedProject();
    const answer = await unlock(h, "", REQUESTER);
    expect(answer.body).toMatchObject({
      response_type: "ephemeral",
      text: ":warning: Only vmbot's admins (<@U0ADMIN>) may unlock Terraform state. Ask one of them if the state is stuck.",
    });
    expect(h.gitlabSinceStart()).toHaveLength(0);
  });

  it("checks the clicker again at the click: a non-admin's click unlocks nothing", async () => {
    const { h } = await lockedProject();
    const prompt = await unlock(h);
    const answer = await click(h, prompt, "unlock_confirm", REQUESTER);
    expect(answer.body).toMatchObject({ replace_original: false, response_type: "ephemeral" });
    expect(String(answer.body.text)).toContain("Only vmbot's admins (<@U0ADMIN>)");
    expect(unlockRequests(h)).toHaveLength(0);
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).not.toBeNull();
  });

  it("names the project's states when the asked one does not exist", async () => {
    const { h } = await lockedProject();
    h.gitlab.addTerraformState(PROJECT_PATH, "staging");
    const answer = await unlock(h, "prod");
    expect(answer.body.text).toBe(
      "GitLab has no Terraform state `prod` in `infra/vms`. Its states: `general`, `staging`.",
    );
    expect(h.gitlab.requestsTo("DELETE", /lock$/)).toHaveLength(0);
  });

  it("explains a 403 when the token is not a Maintainer, and keeps the lock", async () => {
    const { h } = await lockedProject({ project: { role: "developer" } });
    const prompt = await unlock(h);
    const answer = await click(h, prompt, "unlock_confirm");
    expect(answer.body.text).toBe(
      ":warning: GitLab did not let the bot unlock the Terraform state `general` (403 Forbidden): unlocking needs the Maintainer role on the project for the bot's token.",
    );
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).not.toBeNull();
    const actions = (await h.bot.store.listAudit()).map((entry) => entry.action);
    expect(actions).toContain("unlock_requested");
    expect(actions).not.toContain("unlocked");
    expect(h.slack.callsTo("chat.postMessage")).toHaveLength(0);
  });

  it("does not unlock a lock other than the one the admin was shown", async () => {
    const { h } = await lockedProject();
    const prompt = await unlock(h);
    h.gitlab.unlockTerraformState(PROJECT_PATH, "general");
    h.gitlab.addUser({ username: "bob" });
    h.gitlab.lockTerraformState(PROJECT_PATH, "general", {
      lockedBy: "bob",
      lockedAt: new Date(Date.now() + 5_000),
    });
    const answer = await click(h, prompt, "unlock_confirm");
    expect(String(answer.body.text)).toContain(
      "The lock on `general` is no longer the one you were shown, so vmbot did not unlock it.",
    );
    expect(unlockRequests(h)).toHaveLength(0);
  });

  /**
   * Confirms the unlock `prompt` shows while GitLab holds the bot's next request to the lock
   * endpoint with `method` until `meanwhile` has changed the lock: what GitLab then finds when it
   * handles the request. Returns what the bot answered.
   */
  async function confirmWhileHeld(
    h: Harness,
    prompt: ResponseUrlPost,
    method: "POST" | "DELETE",
    meanwhile: () => void,
  ) {
    let release: () => void = () => undefined;
    h.gitlab.failNext(
      { method, path: LOCK_PATH },
      { until: new Promise<void>((resolve) => (release = resolve)) },
    );
    const answered = click(h, prompt, "unlock_confirm");
    await expect.poll(() => h.gitlab.requestsTo(method, LOCK_PATH).length).toBe(1);
    meanwhile();
    release();
    return answered;
  }

  /** Alice's lock given up, and the state locked again by a new run of bob's. */
  function relockedByBob(h: Harness) {
    h.gitlab.unlockTerraformState(PROJECT_PATH, "general");
    h.gitlab.addUser({ username: "bob" });
    h.gitlab.lockTerraformState(PROJECT_PATH, "general", {
      lockedBy: "bob",
      info: { ID: "bob-run" },
    });
  }

  it("leaves a lock a new run took between the check and the unlock: the unlock names the lock it removes", async () => {
    const { h } = await lockedProject();
    const prompt = await unlock(h);
    const answered = confirmWhileHeld(h, prompt, "DELETE", () => {
      relockedByBob(h);
    });
    expect(String((await answered).body.text)).toContain(
      "The lock on `general` is no longer the one you were shown, so vmbot did not unlock it.",
    );
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).toMatchObject({
      id: "bob-run",
    });
    const actions = (await h.bot.store.listAudit()).map((entry) => entry.action);
    expect(actions).toEqual(["unlock_requested", "unlock_lock_changed"]);
    expect(h.slack.callsTo("chat.postMessage")).toHaveLength(0);
  });

  it("leaves a lock a new run took before vmbot read the lock's ID, and removes nothing", async () => {
    const { h } = await lockedProject();
    const prompt = await unlock(h);
    const answered = confirmWhileHeld(h, prompt, "POST", () => {
      relockedByBob(h);
    });
    expect(String((await answered).body.text)).toContain("is no longer the one you were shown");
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).toMatchObject({
      id: "bob-run",
    });
    expect(unlockRequests(h)).toHaveLength(0);
  });

  it("gives back at once the lock its reading took when the state was freed just before it", async () => {
    const { h } = await lockedProject();
    const prompt = await unlock(h);
    const answered = confirmWhileHeld(h, prompt, "POST", () => {
      h.gitlab.unlockTerraformState(PROJECT_PATH, "general");
    });
    expect((await answered).body.text).toBe(
      ":unlock: The Terraform state `general` was unlocked meanwhile. Nothing to do.",
    );
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).toBeNull();
    const actions = (await h.bot.store.listAudit()).map((entry) => entry.action);
    expect(actions).toEqual(["unlock_requested", "unlock_not_needed"]);
  });

  it("says so when someone else unlocked it meanwhile", async () => {
    const { h } = await lockedProject();
    const prompt = await unlock(h);
    h.gitlab.unlockTerraformState(PROJECT_PATH, "general");
    const answer = await click(h, prompt, "unlock_confirm");
    expect(answer.body.text).toBe(
      ":unlock: The Terraform state `general` was unlocked meanwhile. Nothing to do.",
    );
    expect(unlockRequests(h)).toHaveLength(0);
  });

  it("answers clearly when GitLab is down", async () => {
    const { h } = await lockedProject();
    const url = h.gitlab.url;
    await h.gitlab.close();
    const answer = await unlock(h);
    expect(String(answer.body.text)).toContain(`GitLab at ${url} could not be reached`);
  });

  it("acts on the named state, and refuses a name that cannot be one", async () => {
    const { h } = await lockedProject();
    h.gitlab.addTerraformState(PROJECT_PATH, "staging");
    expect((await unlock(h, "staging")).body.text).toContain("`staging` is not locked");
    const delivery = await h.signer.slashCommand({
      text: "unlock ../../etc",
      userId: ADMIN,
      channelId: CHANNEL,
    });
    expect(JSON.parse(delivery.body)).toMatchObject({ response_type: "ephemeral" });
    expect(delivery.body).toContain("Usage: `/vm unlock [VM or state]`");
  });
});
