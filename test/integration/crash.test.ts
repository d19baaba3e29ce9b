import { describe, expect, it } from "vitest";
import type { FakeMessage } from "../../sandbox/simulators/slack/index.js";
import { ADMIN, APPROVER, CHANNEL, PROJECT_PATH, reject } from "../support/harness.js";
import {
  APPROVE_FLOW_POINTS,
  ask,
  audit,
  CRASH_POINTS,
  DESTROY_FLOW_POINTS,
  expectDeclared,
  MOMENTS,
  planned,
  REJECT_FLOW_POINTS,
  requestMessage,
  requestMessages,
  settle,
  settled,
  startWorld,
  submitForm,
  TEST_MS,
  threadOf,
  UNLOCK_POINTS,
  until,
  WAIT_MS,
} from "../support/crash-world.js";
import { lockRemovals } from "../support/unlocks.js";

/**
 * Crash tests (test/support/crash-world.ts) of a rejected request (its pipeline canceled, its
 * plan deleted), of an unlock, of the requester's notice that their request could not be posted,
 * the pipeline adopted after a crash without the request ID, and the check that the crash tests'
 * files together cover every crash point. The approval's are in
 * crash-approve.test.ts and crash-replies.test.ts, the destroy's in crash-destroy.test.ts, the
 * lease's in crash-lease.test.ts.
 */

/** The crash points a test below is declared for, filled as they are declared. */
const declared: string[] = [];

describe.concurrent(
  "crash between the intent and the result of a rejection's and an unlock's effects",
  () => {
    for (const moment of MOMENTS) {
      declared.push(`cancel_pipeline:${moment}`, `erase_plan:${moment}`, `unlock:${moment}`);
      it(
        `crashes at cancel_pipeline:${moment} after a rejection, and the pipeline is canceled`,
        async () => {
          const w = await startWorld(`cancel_pipeline:${moment}`);
          try {
            const { pipelineId } = await ask(w);
            const plan = await planned(w, pipelineId);
            await reject(w, plan, APPROVER);
            await until(w, () => (w.crashes >= 1 ? true : undefined), "the crash");
            await until(
              w,
              () => (w.gitlab.requestsTo("POST", /\/cancel$/).length >= 1 ? true : undefined),
              "the cancel",
            );
            await until(
              w,
              () => (requestMessage(w)?.text.endsWith("Rejected") === true ? true : undefined),
              "the request message to say it was rejected",
            );
            await settled(w);
            // Canceled once, or again after the restart: GitLab's cancel is idempotent, and a
            // pipeline waiting on its manual job reads the same before and after one.
            expect(w.gitlab.requestsTo("POST", /\/cancel$/).length).toBeLessThanOrEqual(2);
            expect(w.gitlab.pipeline(pipelineId).status).not.toBe("running");
            expect(requestMessage(w)?.text.endsWith("Rejected")).toBe(true);
            expect(w.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(0);
            expect(requestMessages(w)).toHaveLength(1);
          } finally {
            await w.close();
          }
        },
        TEST_MS,
      );

      it(
        `crashes at erase_plan:${moment} after a rejection: the plan is deleted once, and an apply played later fails`,
        async () => {
          const w = await startWorld(`erase_plan:${moment}`);
          try {
            const { pipelineId } = await ask(w);
            const plan = await planned(w, pipelineId);
            await reject(w, plan, APPROVER);
            await until(w, () => (w.crashes >= 1 ? true : undefined), "the crash");
            await until(
              w,
              () => (w.gitlab.job(pipelineId, "tf:plan").artifacts.size === 0 ? true : undefined),
              "the plan's artifacts to be deleted",
            );
            await until(
              w,
              async () =>
                (await audit(w)).some((entry) => entry.action === "plan_erased") ? true : undefined,
              "the deletion in the audit",
            );
            await until(
              w,
              () => (requestMessage(w)?.text.endsWith("Rejected") === true ? true : undefined),
              "the request message to say it was rejected",
            );
            // The restarted bot still follows the pipeline: an apply played in GitLab is reported once.
            w.gitlab.playJob(pipelineId, "tf:apply");
            settle(w, pipelineId, "tf:apply");
            expect(w.gitlab.job(pipelineId, "tf:apply").status).toBe("failed");
            const alarm = await until(
              w,
              () =>
                threadOf(w, requestMessage(w)!).find((m) =>
                  m.text.includes("was played in GitLab after the request was rejected"),
                ),
              "the apply to be posted in the thread",
            );
            expect(alarm.text).toContain("Terraform has no plan to apply");
            // Passes after the deletion reported the apply; once the bot is settled and stopped,
            // nothing was deleted, audited or reported twice.
            await settled(w);
            expect(w.gitlab.requestsTo("DELETE", /\/jobs\/\d+\/artifacts$/)).toHaveLength(1);
            expect((await audit(w)).filter((entry) => entry.action === "plan_erased")).toHaveLength(
              1,
            );
            expect((await audit(w)).filter((entry) => entry.action === "rejected")).toHaveLength(1);
            expect(requestMessage(w)?.text.endsWith("Rejected")).toBe(true);
            expect(
              threadOf(w, requestMessage(w)!).filter((m) =>
                m.text.includes("was played in GitLab"),
              ),
            ).toHaveLength(1);
            expect(requestMessages(w)).toHaveLength(1);
          } finally {
            await w.close();
          }
        },
        TEST_MS,
      );

      it(
        `crashes at unlock:${moment}, and the unlock is finished and told once`,
        async () => {
          const w = await startWorld(`unlock:${moment}`);
          try {
            w.gitlab.addUser({ username: "alice" });
            w.gitlab.addTerraformState(PROJECT_PATH, "general", {
              lockedBy: "alice",
              lockedAt: new Date(Math.floor(Date.now() / 1000 - 3600) * 1000),
            });
            const command = await w.signer.slashCommand({
              text: "unlock",
              userId: ADMIN,
              channelId: CHANNEL,
            });
            const prompt = await w.slack.waitForResponse(
              (post) => post.url === command.responseUrl,
              WAIT_MS,
            );
            await w.signer.blockAction({
              message: {
                channel: CHANNEL,
                ts: "1796205600.000100",
                text: prompt.body.text as string,
                blocks: prompt.body.blocks as FakeMessage["blocks"],
                user: w.slack.identity.botUserId,
                bot_id: w.slack.identity.botId,
                app_id: w.slack.identity.appId,
              },
              ephemeral: true,
              actionId: "unlock_confirm",
              userId: ADMIN,
            });
            await until(w, () => (w.crashes >= 1 ? true : undefined), "the crash");
            const notice = await until(
              w,
              () => w.slack.messages.find((m) => m.text.includes("force-unlocked")),
              "the channel to be told",
            );
            // The restarted bot finishes an interrupted unlock once, at its start.
            await settled(w);
            expect(notice.channel).toBe(CHANNEL);
            expect(w.slack.messages.filter((m) => m.text.includes("force-unlocked"))).toHaveLength(
              1,
            );
            expect(w.gitlab.terraformState(PROJECT_PATH, "general")?.lock).toBeNull();
            expect(lockRemovals(w.gitlab, /\/lock$/)).toHaveLength(1);
            expect((await audit(w)).filter((entry) => entry.action === "unlocked")).toHaveLength(1);
          } finally {
            await w.close();
          }
        },
        TEST_MS,
      );
    }

    it(
      "without VMBOT_REQUEST_ID, adopts the first pipeline after the request and says it is not sure",
      async () => {
        const w = await startWorld("create_pipeline:after", {
          GITLAB_REQUEST_ID_VARIABLE: "false",
        });
        try {
          const { pipelineId } = await ask(w);
          expect(w.crashes).toBe(1);
          expect(w.gitlab.pipelines).toHaveLength(1);
          expect(w.gitlab.pipeline(pipelineId).variables.map((v) => v.key)).not.toContain(
            "VMBOT_REQUEST_ID",
          );
          const message = await until(
            w,
            () => {
              const m = requestMessage(w);
              return JSON.stringify(m?.blocks ?? []).includes("restarted while starting")
                ? m
                : undefined;
            },
            "the note in the request message",
          );
          expect(JSON.stringify(message.blocks)).toContain(
            `vmbot restarted while starting this request and took pipeline #${pipelineId}, the first one created after it, as its own: check that it is.`,
          );
        } finally {
          await w.close();
        }
      },
      TEST_MS,
    );

    it("has a test for each of its crash points, before and after", () => {
      expectDeclared(["rejection", "notice"], declared);
    });

    for (const moment of MOMENTS) {
      declared.push(`tell_not_posted:${moment}`);
      it(
        `crashes at tell_not_posted:${moment}: the requester is told once that the request message could not be posted`,
        async () => {
          const w = await startWorld(`tell_not_posted:${moment}`);
          try {
            w.slack.addChannel({ id: CHANNEL, name: "vm-requests", isMember: false });
            await submitForm(w);
            await until(w, () => (w.crashes >= 1 ? true : undefined), "the crash");
            const told = () =>
              w.slack.messages.filter(
                (m) =>
                  (m.metadata?.event_payload as { step?: string } | undefined)?.step ===
                  "tell_not_posted",
              );
            await until(w, () => (told().length >= 1 ? true : undefined), "the requester told");
            await settled(w);
            expect(told()).toHaveLength(1);
            expect(told()[0]?.text).toContain("(not_in_channel): invite it with");
            expect(w.gitlab.pipelines).toHaveLength(0);
            expect((await audit(w)).filter((e) => e.action === "failed")).toHaveLength(1);
          } finally {
            await w.close();
          }
        },
        TEST_MS,
      );
    }

    it("has a test for every crash point, before and after, across the crash tests' files", () => {
      // 8 effects of the approval flow, the rejection's cancel and plan deletion, the unlock, a
      // destroy's pipeline and play, the lease reminder and the requester's notice that the
      // request message could not be posted, each before and after; the destroy
      // request a lease's end opens, the play of one it destroys without approval, and the lease
      // an approved extension writes. Each file checks that it declares its own, and every test
      // fails unless the bot crashed where it asked.
      const points = [
        ...APPROVE_FLOW_POINTS,
        ...REJECT_FLOW_POINTS,
        ...UNLOCK_POINTS,
        ...DESTROY_FLOW_POINTS.map((point) => `destroy/${point}`),
        "lease_reminder",
        "tell_not_posted",
      ];
      const all = Object.values(CRASH_POINTS).flat();
      expect([...all].sort()).toEqual(
        [
          ...points.flatMap((point) => MOMENTS.map((moment) => `${point}:${moment}`)),
          "lease expiry/create_pipeline:after",
          ...MOMENTS.map((moment) => `lease expiry destroy/play_destroy:${moment}`),
          ...MOMENTS.map((moment) => `extend_lease:${moment}`),
        ].sort(),
      );
      expect(new Set(all).size).toBe(all.length);
    });
  },
);
