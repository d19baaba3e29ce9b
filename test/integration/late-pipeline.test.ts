import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startFakeGitlab, VM_PIPELINE_INPUTS } from "../../sandbox/simulators/gitlab/index.js";
import { createSlackSigner, stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import { startFakeSlack } from "../../sandbox/simulators/slack/index.js";
import { CHANNEL, fakeBotEnv, PROJECT_PATH, REQUESTER } from "../support/harness.js";
import { waitFor } from "../support/wait.js";
import { portOf, runBot, type BotProcess } from "../support/process.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { storeLocation, withStoreAt } from "../support/store-at.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("a pipeline create in flight across a SIGKILL", () => {
  it("keeps the pipeline the request follows and cancels the one GitLab makes visible late", async () => {
    const slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
    const gitlab = await startFakeGitlab({
      token: TEST_SECRETS.gitlabToken,
      projects: [{ id: 42, path: PROJECT_PATH, role: "maintainer", inputs: VM_PIPELINE_INPUTS }],
    });
    const dir = mkdtempSync(join(tmpdir(), "vmbot-late-"));
    dirs.push(dir);
    const store = await storeLocation(dir);
    const { db } = store;
    const env = fakeBotEnv({ slack, gitlab }, db, {
      POLL_INTERVAL_MS: "500",
      LOG_LEVEL: "info",
      ...store.restartEnv,
    });
    let bot: BotProcess = runBot(env, dir);
    try {
      // GitLab takes the first create and makes it visible only when the test says so.
      const release: (() => void)[] = [];
      const landed = new Promise<void>((resolve) => {
        release.push(resolve);
      });
      const land = () => {
        for (const resolve of release) resolve();
      };
      gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, { until: landed });

      const signer = createSlackSigner({
        eventsUrl: `http://127.0.0.1:${await portOf(bot)}/slack/events`,
        signingSecret: TEST_SECRETS.signingSecret,
        slack,
      });
      await signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
      await slack.waitFor("views.open");
      const view = slack.views.at(-1)!;
      await signer.viewSubmission({
        view,
        values: stateValuesFor(view, { vm_ip: "192.168.1.50/24" }),
        userId: REQUESTER,
      });
      await waitFor(
        () => (gitlab.requestsTo("POST", /\/pipeline$/).length === 1 ? true : undefined),
        "the create to be in flight",
        15_000,
      );
      // Killed with the create in flight: no answer, nothing recorded but the intent.
      bot.child.kill("SIGKILL");
      await bot.exited;

      bot = runBot(env, dir);
      await portOf(bot);
      // The restarted bot looks, finds nothing yet, and creates the request's pipeline.
      const adopted = await waitFor(
        () => gitlab.pipelines[0],
        "the restarted bot's pipeline",
        15_000,
      );
      await slack.waitFor("chat.update", (call) =>
        JSON.stringify(call.args.blocks).includes(`pipeline #${adopted.id}`),
      );

      // Now the first create lands, carrying the same request ID.
      land();
      const late = await waitFor(() => gitlab.pipelines[1], "the late pipeline", 15_000);
      expect(late.variables).toContainEqual(expect.objectContaining({ key: "VMBOT_REQUEST_ID" }));
      await waitFor(
        () => (gitlab.pipeline(late.id).status === "canceled" ? true : undefined),
        "the late pipeline to be canceled",
        15_000,
      );

      // Exactly one pipeline can reach a playable apply: the late one's jobs are canceled.
      expect(gitlab.job(late.id, "tf:apply").status).toBe("canceled");
      expect(gitlab.job(late.id, "tf:plan").status).toBe("canceled");
      expect(gitlab.pipeline(adopted.id).status).not.toBe("canceled");
      const note = await waitFor(
        () => slack.messages.find((m) => m.text.includes(`(#${late.id})`)),
        "the note in the request's thread",
        15_000,
      );
      expect(note.text).toBe(
        `:warning: GitLab created a second pipeline for this request late (#${late.id}), after vmbot had started #${adopted.id}. vmbot follows #${adopted.id} and canceled #${late.id}.`,
      );

      // The request follows the adopted pipeline to its plan.
      for (let i = 0; i < 10 && gitlab.job(adopted.id, "tf:plan").status !== "success"; i += 1) {
        gitlab.advance(adopted.id);
      }
      await slack.waitFor(
        "chat.update",
        (call) =>
          call.args.text === "VM web-01 — Awaiting approval" &&
          JSON.stringify(call.args.blocks).includes("plan_approve"),
        15_000,
      );
      expect(gitlab.pipelines).toHaveLength(2);
      expect(gitlab.requestsTo("POST", /\/pipelines\/\d+\/cancel$/).map((r) => r.path)).toEqual([
        expect.stringContaining(`/pipelines/${late.id}/cancel`),
      ]);
      await withStoreAt(db, async (read) => {
        const [request] = await read.listActive();
        expect(request?.pipelineId).toBe(adopted.id);
        const canceled = (await read.listAudit(request!.id)).filter(
          (entry) => entry.action === "late_pipeline_canceled",
        );
        expect(canceled.map((entry) => [entry.detail.pipelineId, entry.detail.kept])).toEqual([
          [late.id, adopted.id],
        ]);
      });
    } finally {
      bot.child.kill("SIGTERM");
      await bot.exited;
      await Promise.all([slack.close(), gitlab.close()]);
      await store.drop();
    }
  }, 90_000);
});
