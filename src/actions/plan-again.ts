import type { RequestStarter } from "../tracker/starter.js";
import { createThreadPoster } from "../slack/thread.js";
import {
  nextStep,
  noNextStepWords,
  notYoursToPlanAgain,
  plannedAgainReply,
  plannedFromNote,
} from "../views/failure.js";
import { notRequesterWords } from "../views/refusals.js";
import {
  checkRequest,
  POLICY_CHECK_BUDGET_MS,
  type RequestVerdict,
} from "../policy/request-check.js";
import { HELD_MEANWHILE_WORDS, ipTakenWords, nameTakenWords } from "../views/conflicts.js";
import { findHeldConflicts, type Conflicts } from "../vm/conflicts.js";
import type { HoldGuard, RequestRecord } from "../store/store.js";
import { writeHeld } from "./held-write.js";
import {
  closureFor,
  clickedRequest,
  type ButtonArgs,
  type PlanDecisionDeps,
} from "./plan-decision.js";

export interface PlanAgainDeps extends PlanDecisionDeps {
  starter: RequestStarter;
}

/**
 * Plan again, after a plan failed (a stuck lock an admin cleared, an error since fixed): the
 * requester starts a new request with the same inputs, the way a form submission does (a new
 * request ID, its own message and pipeline). The old request is linked to it. Its submission key
 * is the old request's ID, so however many clicks arrive, one new request is made.
 */
export function createPlanAgainAction(deps: PlanAgainDeps) {
  const now = deps.now ?? (() => new Date());
  return async (args: ButtonArgs) => {
    await args.ack();
    const clicked = await clickedRequest(deps, args);
    if (clicked === undefined) return;
    const { user, answer, request: found } = clicked;
    const failure = found.failure;
    if (nextStep(found) !== "plan_again" || failure === null) {
      await answer(noNextStepWords(found, "again"));
      return;
    }
    if (found.requester !== user) {
      await answer(notYoursToPlanAgain(found));
      return;
    }
    if (!(await deps.access.may("create", user))) {
      await answer(notRequesterWords(deps.access.who("create")));
      return;
    }
    // The policy or the quotas may refuse now what they let through then (a request whose plan
    // failed holds nothing of the quota meanwhile), as they would a form.
    const again = await deps.store.findBySubmission(`again:${found.id}`);
    const verdict =
      again === undefined
        ? await checkRequest(deps, found.requester, found.spec, POLICY_CHECK_BUDGET_MS)
        : undefined;
    if (verdict?.ok === false) {
      await answer(`${Object.values(verdict.errors).join(" ")} Nothing was started.`);
      return;
    }
    // The name or the address may have been taken meanwhile (not by a plan of this one's).
    const written = await writeAgain(deps, found, user, verdict);
    if ("taken" in written) {
      await answer(written.taken + " Ask again with /vm create.");
      return;
    }
    const { request: next, created } = written;
    const log = deps.log.child({ requestId: found.id, user, command: "plan_again" });
    const linked = await deps.store.transition(
      found.id,
      ["failed"],
      "failed",
      { failure: { ...failure, again: { requestId: next.id, by: user, at: now().toISOString() } } },
      undefined,
      { actor: user, action: "planned_again", detail: { requestId: next.id } },
    );
    const { show } = closureFor(deps, args.client, log);
    if (linked !== undefined) await show(linked);
    if (!created) {
      log.info({ again: next.id }, "plan again clicked for a request already planned again");
      return;
    }
    log.info({ again: next.id }, "planned again with the same inputs");
    await deps.starter.start(next);
    const started = (await deps.store.getRequest(next.id)) ?? next;
    const permalink =
      started.messageTs === null
        ? undefined
        : await args.client.chat
            .getPermalink({ channel: started.channel, message_ts: started.messageTs })
            .then((answered) => answered.permalink)
            .catch(() => undefined);
    const post = createThreadPoster({ client: args.client, effects: deps.effects, log });
    await post(linked ?? found, `planned_again`, plannedAgainReply(user, started, permalink));
  };
}

/** What holds the name or the address, in words; undefined when nothing does. */
function takenWords(spec: RequestRecord["spec"], taken: Conflicts): string | undefined {
  const words = [
    taken.name === undefined ? undefined : nameTakenWords(taken.name),
    taken.ip === undefined ? undefined : ipTakenWords(spec.ip, taken.ip, taken.suggestion),
  ].filter((said) => said !== undefined);
  return words.length === 0 ? undefined : words.join(" ");
}

/**
 * The new request, written once with the check that nothing holds its name or address and that
 * it still fits its quotas (and who planned it again, in the same write); or what is in the way.
 */
async function writeAgain(
  deps: PlanAgainDeps,
  found: RequestRecord,
  user: string,
  verdict: Extract<RequestVerdict, { ok: true }> | undefined,
) {
  const rule = verdict?.decision.rule;
  const written = await writeHeld({
    spec: found.spec,
    quota: verdict?.quota,
    write: (guard: HoldGuard) =>
      deps.store.createVmRequest(
        {
          requester: found.requester,
          spec: found.spec,
          notes: [plannedFromNote(found)],
          channel: found.channel,
          submissionKey: `again:${found.id}`,
        },
        guard,
        {
          actor: user,
          action: "requested",
          detail: {
            spec: found.spec,
            plannedAgainFrom: found.id,
            ...(rule === undefined ? {} : { rule }),
          },
        },
      ),
    taken: async () => takenWords(found.spec, await findHeldConflicts(deps.store, found.spec)),
    recheck: () => checkRequest(deps, found.requester, found.spec, POLICY_CHECK_BUDGET_MS),
    overQuota: (errors: Partial<Record<string, string>>) => Object.values(errors).join(" "),
  });
  if (written === undefined) return { taken: HELD_MEANWHILE_WORDS };
  return "refused" in written ? { taken: written.refused } : written;
}
