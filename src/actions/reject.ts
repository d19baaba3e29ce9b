import type { AllMiddlewareArgs, SlackViewMiddlewareArgs, ViewSubmitAction } from "@slack/bolt";
import { z } from "zod";
import { REJECT_REASON } from "../ids.js";
import type { RequestRecord } from "../store/store.js";
import { closeIntents } from "../tracker/closure.js";
import {
  REASON_MAX,
  rejectedButWords,
  rejectFormNotOpenedWords,
  rejectModal,
} from "../views/reject.js";
import {
  alreadyDecided,
  checkDecision,
  checkDecisionBy,
  closureFor,
  RequestIdSchema,
  tell,
  type ButtonArgs,
  type PlanDecisionDeps,
} from "./plan-decision.js";
import { NOT_RECORDED, storeWriteFailure } from "./store-failure.js";
import { safeJson } from "../safe-json.js";

/**
 * Reject, first step: the click is checked as Approve's is, then a form asks why (optional).
 * Nothing changes until the form comes back.
 */
export function createRejectAction(deps: PlanDecisionDeps) {
  return async (args: ButtonArgs) => {
    await args.ack();
    const found = await checkDecision(deps, args, "reject");
    if (!found) return;
    try {
      await args.client.views.open({ trigger_id: args.body.trigger_id, view: rejectModal(found) });
    } catch (error) {
      deps.log.warn({ err: error, requestId: found.id }, "could not open Reject's form");
      await tell(
        args.client,
        args.body.channel?.id ?? "",
        args.body.user.id,
        rejectFormNotOpenedWords(found.spec.name),
      );
    }
  };
}

const RejectMetadataSchema = z.object({ requestId: RequestIdSchema });
const RejectValuesSchema = z.object({
  [REJECT_REASON]: z
    .object({ [REJECT_REASON]: z.object({ value: z.string().nullish() }).optional() })
    .optional(),
});

type RejectViewArgs = SlackViewMiddlewareArgs<ViewSubmitAction> & AllMiddlewareArgs;

/**
 * Reject, second step, when its form comes back: the clicker and the request are checked again,
 * the request is claimed (with who, when and why), then its pipeline is canceled and the plan's
 * artifacts deleted in GitLab (a canceled pipeline's manual apply job stays playable; without its
 * plan it applies nothing).
 */
export function createRejectSubmission(deps: PlanDecisionDeps) {
  const now = deps.now ?? (() => new Date());
  return async ({ ack, body, view, client }: RejectViewArgs) => {
    await ack();
    const user = body.user.id;
    const metadata = RejectMetadataSchema.safeParse(safeJson(view.private_metadata));
    const values = RejectValuesSchema.safeParse(view.state.values);
    const reason = values.success
      ? (values.data[REJECT_REASON]?.[REJECT_REASON]?.value ?? "").trim().slice(0, REASON_MAX)
      : "";
    const requestId = metadata.success ? metadata.data.requestId : undefined;
    const channel =
      requestId === undefined ? "" : ((await deps.store.getRequest(requestId))?.channel ?? "");
    const found = await checkDecisionBy(deps, client, user, channel, requestId, "reject");
    if (!found) return;
    const log = deps.log.child({ requestId: found.id, user, command: "reject" });
    const decision = {
      kind: "rejected" as const,
      by: user,
      at: now().toISOString(),
      ...(reason === "" ? {} : { reason }),
    };
    let claimed: RequestRecord | undefined;
    try {
      claimed = await deps.store.transition(
        found.id,
        ["awaiting_approval"],
        "rejected",
        { decision },
        closeIntents(found),
        {
          actor: user,
          // A lease extension's rejection is named as such in the audit.
          action: found.kind === "extend" ? "extension_rejected" : "rejected",
          ...(reason === "" ? {} : { detail: { reason } }),
        },
      );
    } catch (error) {
      if (storeWriteFailure(error) === undefined) throw error;
      // A form's submission names no channel: the answer goes where the click was.
      log.error({ err: error }, "could not record the rejection: the store refused the write");
      await tell(client, found.channel, user, NOT_RECORDED);
      return;
    }
    if (!claimed) {
      const current = (await deps.store.getRequest(found.id)) ?? found;
      await tell(client, found.channel, user, alreadyDecided(current));
      return;
    }
    const { show, closure } = closureFor(deps, client, log);
    await show(claimed);
    const problems = await closure.close(claimed, true);
    for (const problem of problems) {
      await tell(client, found.channel, user, rejectedButWords(problem));
    }
  };
}
