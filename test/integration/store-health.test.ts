import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { NOT_RECORDED } from "../../src/actions/store-failure.js";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import type { FakeMessage } from "../../sandbox/simulators/slack/index.js";
import {
  ADMIN,
  APPROVER,
  CHANNEL,
  PROJECT_PATH,
  REQUESTER,
  askForVm,
  harnessPerTest,
  reject,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";

// These hold SQLite's own write lock: their bot is on SQLite whichever engine the run uses.
const start = harnessPerTest();

/**
 * Another program holds the store's write lock (an operator's open transaction in a sqlite3
 * shell): every write the bot tries fails, as on a full disk or a read-only file.
 */
function holdWriteLock(h: Harness): { release(): void } {
  const other = new Database(h.config.dbPath);
  other.exec("BEGIN IMMEDIATE");
  return {
    release() {
      other.exec("ROLLBACK");
      other.close();
    },
  };
}

const health = async (h: Harness) => {
  const response = await fetch(`${h.baseUrl}/healthz`);
  return { status: response.status, body: (await response.json()) as Record<string, string> };
};

describe("a store that cannot take a write", () => {
  it("turns /healthz to 503 with the reason, and back to 200 when it can again", async () => {
    const h = await start({ db: "sqlite" });
    expect((await health(h)).status).toBe(200);
    const lock = holdWriteLock(h);
    try {
      // A write that worked is trusted for a moment: wait for the next probe.
      const answer = await waitFor(
        async () => {
          const current = await health(h);
          return current.status === 503 ? current : undefined;
        },
        "/healthz to answer 503",
        { timeoutMs: 10_000, intervalMs: 100 },
      );
      expect(answer.status).toBe(503);
      expect(answer.body).toEqual({
        status: "unavailable",
        reason: "the store cannot be written: another program holds its write lock",
        database: { engine: "sqlite", reachable: false },
      });
    } finally {
      lock.release();
    }
    expect((await health(h)).status).toBe(200);
  });

  it("answers an Approve click it cannot record privately, and plays nothing", async () => {
    const h = await start({ db: "sqlite" });
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    const request = (await h.bot.store.listActive())[0]!;
    const message = h.slack.message(CHANNEL, request.messageTs!)!;
    const lock = holdWriteLock(h);
    try {
      await h.signer.blockAction({ message, userId: APPROVER, actionId: "plan_approve" });
      const answer = await h.slack.waitFor(
        "chat.postEphemeral",
        (call) => call.args.user === APPROVER,
      );
      expect(answer.args).toMatchObject({ channel: CHANNEL, text: NOT_RECORDED });
    } finally {
      lock.release();
    }
    expect((await h.bot.store.getRequest(request.id))?.status).toBe("awaiting_approval");
    expect(h.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(0);
    expect(JSON.stringify(h.slack.message(CHANNEL, request.messageTs!)?.blocks)).toContain(
      "plan_approve",
    );
  });

  it("answers a Reject click it cannot record privately, and cancels nothing", async () => {
    const h = await start({ db: "sqlite" });
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    const request = (await h.bot.store.listActive())[0]!;
    const message = h.slack.message(CHANNEL, request.messageTs!)!;
    const lock = holdWriteLock(h);
    try {
      await reject(h, message, APPROVER);
      const answer = await h.slack.waitFor(
        "chat.postEphemeral",
        (call) => call.args.user === APPROVER,
      );
      expect(answer.args).toMatchObject({ channel: CHANNEL, text: NOT_RECORDED });
    } finally {
      lock.release();
    }
    expect((await h.bot.store.getRequest(request.id))?.status).toBe("awaiting_approval");
    expect(h.gitlab.requestsTo("POST", /\/cancel$/)).toHaveLength(0);
  });

  it("answers a force-unlock confirmation it cannot record privately, and unlocks nothing", async () => {
    const h = await start({ db: "sqlite", project: { role: "maintainer" } });
    h.gitlab.addUser({ username: "alice" });
    h.gitlab.addTerraformState(PROJECT_PATH, "general", { lockedBy: "alice" });
    const command = await h.signer.slashCommand({
      text: "unlock",
      userId: ADMIN,
      channelId: CHANNEL,
    });
    const prompt = await h.slack.waitForResponse((post) => post.url === command.responseUrl);
    const message: FakeMessage = {
      channel: CHANNEL,
      ts: "1796205600.000100",
      text: String(prompt.body.text),
      blocks: prompt.body.blocks as FakeMessage["blocks"],
      user: h.slack.identity.botUserId,
      bot_id: h.slack.identity.botId,
      app_id: h.slack.identity.appId,
    };
    const lock = holdWriteLock(h);
    try {
      await h.signer.blockAction({
        message,
        ephemeral: true,
        actionId: "unlock_confirm",
        userId: ADMIN,
      });
      const answer = await h.slack.waitFor(
        "chat.postEphemeral",
        (call) => call.args.user === ADMIN,
      );
      expect(answer.args).toMatchObject({ channel: CHANNEL, text: NOT_RECORDED });
    } finally {
      lock.release();
    }
    expect(h.gitlab.requestsTo("DELETE", /\/lock$/)).toHaveLength(0);
    expect(h.gitlab.terraformState(PROJECT_PATH, "general")?.lock).not.toBeNull();
  });

  it("answers a form it cannot record on the form itself, and creates nothing", async () => {
    const h = await start({ db: "sqlite" });
    await h.signer.slashCommand({ text: "create web-02", userId: REQUESTER, channelId: CHANNEL });
    await h.slack.waitFor("views.open");
    const view = h.slack.views.at(-1)!;
    const lock = holdWriteLock(h);
    let delivery;
    try {
      delivery = await h.signer.viewSubmission({
        view,
        values: stateValuesFor(view, { vm_ip: "192.168.1.50/24" }),
        userId: REQUESTER,
      });
    } finally {
      lock.release();
    }
    expect(delivery.json).toEqual({
      response_action: "errors",
      errors: {
        vm_name:
          "vmbot could not record your request just now (its store cannot take a write), so nothing was created. Please press Create again in a minute.",
      },
    });
    expect(await h.bot.store.listActive()).toEqual([]);
    expect(h.gitlab.pipelines).toHaveLength(0);
  });
});
