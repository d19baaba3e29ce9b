import type { App, BlockButtonAction } from "@slack/bolt";
import { PlayedResultSchema } from "../effect-results.js";
import { userMessage } from "../views/errors.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { Job } from "../gitlab/gitlab.js";
import { DESTROY_APPROVE } from "../ids.js";
import { renderRequestMessage } from "../slack/request-message.js";
import { readBackPlay } from "../tracker/play.js";
import { escapeMrkdwn, link } from "../slack/mrkdwn.js";
import {
  alreadyDecided,
  checkDecision,
  tell,
  type ButtonArgs,
  type PlanDecisionDeps,
} from "./plan-decision.js";

/**
 * Approve on a destroy request (behind Slack's confirmation naming the VM): the request is
 * claimed in one conditional update with the intent to play, then the destroy job is played
 * exactly once. A lost answer is settled by reading the job back, never by playing again.
 */

/** Destroy-job states from which an approval can no longer destroy anything. */
const SUPERSEDED = new Set(["canceled", "failed", "skipped"]);

const vm = (name: string) => `*${escapeMrkdwn(name)}*`;

export function createDestroyApproveAction(deps: PlanDecisionDeps) {
  const now = deps.now ?? (() => new Date());
  return async (args: ButtonArgs) => {
    await args.ack();
    const found = await checkDecision(deps, args, "approve");
    if (!found) return;
    const user = args.body.user.id;
    const answer = (text: string) => tell(args.client, args.body.channel?.id ?? "", user, text);
    if (found.kind !== "destroy") {
      await answer("This button belongs to a destroy request; this request is not one.");
      return;
    }
    const log = deps.log.child({ requestId: found.id, user, command: "approve_destroy" });
    const render = async (request: typeof found) => {
      await renderRequestMessage(args.client, deps.store, request, log);
    };
    const decision = { kind: "approved" as const, by: user, at: now().toISOString() };
    const step = `play_destroy:${decision.at}`;
    const claimed = deps.store.transition(
      found.id,
      ["awaiting_approval"],
      "applying",
      { decision },
      { step },
      { actor: user, action: "approved" },
    );
    if (!claimed) {
      await answer(alreadyDecided(deps.store.getRequest(found.id) ?? found));
      return;
    }
    /** Nothing was started in GitLab: the approval is given back, the buttons return. */
    const release = async (words: string, reason: string) => {
      deps.store.complete(found.id, step, { failed: true });
      const released = deps.store.transition(
        found.id,
        ["applying"],
        "awaiting_approval",
        { decision: null, error: null },
        undefined,
        { actor: user, action: "approval_released", detail: { reason } },
      );
      await answer(words);
      if (released) await render(released);
    };
    const notStarted = (why: string) =>
      `vmbot could not start the destroy job, so ${vm(found.spec.name)} still awaits approval. ${why}`;
    let destroy: Job;
    try {
      const jobs = await deps.gitlab.pipelineJobs(found.pipelineId ?? 0);
      const named = jobs.find((job) => job.name === deps.config.gitlab.jobs.destroy);
      if (!named)
        throw new Error(`the pipeline has no job named ${deps.config.gitlab.jobs.destroy}`);
      destroy = named;
    } catch (error) {
      // Only a read so far: nothing was asked of GitLab, so nothing can have started.
      log.error(
        { err: error },
        "could not read the pipeline before playing; releasing the approval",
      );
      await release(notStarted(userMessage(error)), "pipeline_unreadable");
      return;
    }
    if (SUPERSEDED.has(destroy.status)) {
      const words = `${vm(found.spec.name)} cannot be destroyed by this request: its destroy job is ${destroy.status} in GitLab. Run /vm destroy again.`;
      deps.store.complete(found.id, step, { abandoned: destroy.status });
      const ended = deps.store.transition(
        found.id,
        ["applying"],
        "canceled",
        { error: words, decision: null },
        undefined,
        { actor: user, action: "approval_refused", detail: { destroyStatus: destroy.status } },
      );
      await answer(words);
      if (ended) await render(ended);
      return;
    }
    try {
      // Played already (in GitLab, or by the tracker finishing this approval): not again.
      await deps.effects.once(found.id, step, {
        result: PlayedResultSchema,
        fresh: true,
        act: async () =>
          destroy.status === "manual"
            ? { jobId: destroy.id, status: (await deps.gitlab.playJob(destroy.id)).status }
            : { jobId: destroy.id, status: destroy.status, playedElsewhere: true },
      });
      deps.store.audit({
        requestId: found.id,
        actor: user,
        action: "destroy_started",
        detail: { jobId: destroy.id },
      });
      log.info({ jobId: destroy.id }, "destroy approved; destroy job started");
      await render(claimed);
    } catch (error) {
      if (gitlabRefused(error)) {
        log.warn({ err: error }, "GitLab refused to start the destroy job; releasing the approval");
        await release(notStarted(userMessage(error)), "play_refused");
        return;
      }
      // The answer was lost (timeout, reset, 5xx): GitLab may have started the job. Read it back.
      log.warn({ err: error }, "no answer to the play; reading the destroy job back");
      const back = await readBackPlay(deps.gitlab, destroy.id);
      if (back.kind === "played") {
        deps.store.complete(found.id, step, {
          jobId: back.job.id,
          status: back.job.status,
          confirmed: true,
        });
        deps.store.audit({
          requestId: found.id,
          actor: user,
          action: "destroy_started",
          detail: { jobId: back.job.id, confirmedByReading: true },
        });
        await answer(
          `GitLab was slow to answer, but it did start the destroy job of ${vm(found.spec.name)} (${link(back.job.webUrl, `job #${back.job.id}`)}).`,
        );
        await render(claimed);
      } else if (back.kind === "not_played") {
        await release(
          `GitLab did not answer, and the destroy job of ${vm(found.spec.name)} has not started, so it still awaits approval: approve again to retry. ${userMessage(error)}`,
          "play_unanswered",
        );
      } else {
        // Still unknown: the approval stands, the tracker reads the job again and settles it.
        log.warn({ err: back.error }, "could not read the destroy job back either");
        const checking = deps.store.transition(found.id, ["applying"], "applying", {
          error: `Approved; vmbot is checking with GitLab whether the destroy job started (GitLab did not answer in time). This message updates when GitLab says.`,
        });
        await answer(
          `GitLab did not answer when vmbot started the destroy job of ${vm(found.spec.name)}, nor when it looked again. Your approval stands; vmbot keeps checking and never plays it twice.`,
        );
        if (checking) await render(checking);
      }
    }
  };
}

export function registerDestroyApprove(app: App, deps: PlanDecisionDeps): void {
  app.action<BlockButtonAction>(DESTROY_APPROVE, createDestroyApproveAction(deps));
}
