import { createThreadPoster } from "../slack/thread.js";
import { createConfigureRetry, retryStep } from "../tracker/retry-configure.js";
import {
  nextStep,
  noNextStepWords,
  notYoursToRetry,
  retryRefusedWords,
  retryUnknownWords,
  retryVmGoneWords,
} from "../views/failure.js";
import {
  closureFor,
  clickedRequest,
  type ButtonArgs,
  type PlanDecisionDeps,
} from "./plan-decision.js";

/**
 * Retry configure, after a configure job failed (the VM exists): the requester or an approver
 * runs the configure job again. Like Approve: who clicked is checked at the click, the request is
 * claimed in one conditional move (failed → configuring) that records the intent and the audit
 * entry together, and GitLab is asked once; the tracker follows the new job and posts its recap.
 */
export function createRetryConfigureAction(deps: PlanDecisionDeps) {
  return async (args: ButtonArgs) => {
    await args.ack();
    const clicked = await clickedRequest(deps, args);
    if (clicked === undefined) return;
    const { user, answer, request: found } = clicked;
    const failure = found.failure;
    if (nextStep(found) !== "retry_configure" || failure === null) {
      await answer(noNextStepWords(found, "retry"));
      return;
    }
    if (found.requester !== user && !(await deps.access.may("approve", user))) {
      await answer(notYoursToRetry(found, deps.access.who("approve")));
      return;
    }
    // The VM this request made must still be there, and not on its way out: checked in the move,
    // one at a time with a destroy's request, so that both are never on their way.
    const attempt = (failure.retries ?? 0) + 1;
    const claimed = await deps.store.transitionOnLiveVm(
      found.spec.name,
      found.id,
      ["failed"],
      "configuring",
      { error: null, failure: { ...failure, retries: attempt } },
      { step: retryStep(failure.jobId, attempt), detail: { jobId: failure.jobId, by: user } },
      { actor: user, action: "configure_retried", detail: { failedJobId: failure.jobId } },
    );
    if (claimed === "gone" || claimed === "destroying") {
      await answer(retryVmGoneWords(found, claimed === "destroying"));
      return;
    }
    if (claimed === undefined) {
      await answer(noNextStepWords((await deps.store.getRequest(found.id)) ?? found, "retry"));
      return;
    }
    const log = deps.log.child({ requestId: found.id, user, command: "retry_configure" });
    const { show } = closureFor(deps, args.client, log);
    await show(claimed);
    const retry = createConfigureRetry({
      ...deps,
      log,
      post: createThreadPoster({ client: args.client, effects: deps.effects, log }),
    });
    const outcome = await retry.run(claimed, failure.jobId, user, true);
    if (outcome.kind === "started") {
      log.info({ jobId: outcome.job.id }, "configure job retried");
    } else if (outcome.kind === "not_started") {
      const released = await retry.release(claimed, outcome.why);
      await answer(retryRefusedWords(found, outcome.why));
      if (released !== undefined) await show(released);
    } else {
      await answer(retryUnknownWords(found));
    }
  };
}
