import type { RequestRecord } from "../store/store.js";
import { closeIntents } from "../tracker/closure.js";
import { withdrawable } from "../views/request-message.js";
import { notYoursToWithdraw, stillStartingWords, withdrawProblemWords } from "../views/withdraw.js";
import {
  alreadyDecided,
  closureFor,
  clickedRequest,
  type ButtonArgs,
  type PlanDecisionDeps,
} from "./plan-decision.js";

/** A status move may race the tracker (planning → awaiting approval): tried again on the new one. */
const CLAIM_ATTEMPTS = 3;

/**
 * Withdraw: the requester takes back their own request before its apply starts. The same
 * conditional move as Reject (so nobody can approve afterwards), recorded as withdrawn by them,
 * then the same closure: the pipeline canceled and the plan's artifacts deleted in GitLab.
 */
export function createWithdrawAction(deps: PlanDecisionDeps) {
  const now = deps.now ?? (() => new Date());
  return async (args: ButtonArgs) => {
    await args.ack();
    const clicked = await clickedRequest(deps, args);
    if (clicked === undefined) return;
    const { user, answer, request } = clicked;
    if (request.requester !== user) {
      await answer(notYoursToWithdraw(request));
      return;
    }
    const log = deps.log.child({ requestId: request.id, user, command: "withdraw" });
    let current: RequestRecord | undefined = request;
    const decision = { kind: "withdrawn" as const, by: user, at: now().toISOString() };
    let claimed: RequestRecord | undefined;
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS && claimed === undefined; attempt += 1) {
      if (current === undefined || !withdrawable(current)) break;
      claimed = await deps.store.transition(
        current.id,
        [current.status],
        "withdrawn",
        { decision },
        closeIntents(current),
        { actor: user, action: "withdrawn", detail: { from: current.status } },
      );
      if (claimed === undefined) current = await deps.store.getRequest(current.id);
    }
    if (claimed === undefined) {
      if (current === undefined) return;
      await answer(
        current.pipelineId === null && current.status === "queued"
          ? stillStartingWords(current)
          : alreadyDecided(current),
      );
      return;
    }
    log.info("request withdrawn by its requester");
    const { show, closure } = closureFor(deps, args.client, log);
    await show(claimed);
    const problems = await closure.close(claimed, true);
    for (const problem of problems) await answer(withdrawProblemWords(problem));
  };
}
