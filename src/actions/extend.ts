import { oneAtATime } from "../requests/one-at-a-time.js";
import type { AllMiddlewareArgs, App, BlockButtonAction } from "@slack/bolt";
import { checkExtension, openExtensionRequest } from "../extend/ask.js";
import { claimExtension, finishExtension } from "../extend/finish.js";
import { awaitExtensionApproval } from "../extend/waiting.js";
import { EXTEND_APPROVE, HOME_VM_ASK_LONGER, LEASE_ASK_LONGER } from "../ids.js";
import { recordApproval } from "../policy/approval-step.js";
import { renderRequestMessage } from "../slack/request-message.js";
import type { RequestRecord } from "../store/store.js";
import type { RequestStarter } from "../tracker/starter.js";
import {
  extensionAskedWords,
  extensionBusyWords,
  extensionEnd,
  extensionNoChannelWords,
  extensionNotRecordedWords,
} from "../views/extend.js";
import { homeNotice } from "../views/home.js";
import { leaseExtendedWords } from "../views/lease.js";
import {
  alreadyDecided,
  checkDecision,
  closureFor,
  tell,
  type ButtonArgs,
  type PlanDecisionDeps,
} from "./plan-decision.js";
import { NOT_RECORDED, storeWriteFailure } from "./store-failure.js";

/**
 * A lease past the maximum: the owner's "Ask for …" (in the lease reminder or on the Home) opens
 * an extension request in the channel the VM was asked for in; its Approve counts toward the
 * policy's `extend` rule, and the approval that meets it moves the lease, once.
 */

export type ExtendActionDeps = PlanDecisionDeps & { starter: RequestStarter };

type SlackClient = AllMiddlewareArgs["client"];

/** Opens the extension request; the words for the owner, and the request when it is new. */
async function askLonger(
  deps: ExtendActionDeps,
  user: string,
  value: unknown,
): Promise<{ words: string; request?: RequestRecord }> {
  const checked = await checkExtension(deps, user, value);
  if ("refusal" in checked) return { words: checked.refusal };
  const { vm, ms } = checked;
  // Asked from a direct message or the Home: the request goes where the VM was asked for.
  const channel = deps.config.slack.channel ?? (await deps.store.getRequest(vm.requestId))?.channel;
  if (channel === undefined) return { words: extensionNoChannelWords };
  const opened = await openExtensionRequest(deps, { vm, ms, requester: user, channel });
  if (opened === "not_recorded") return { words: extensionNotRecordedWords };
  if (!opened.created) return { words: extensionBusyWords(vm.name, opened.request) };
  return { words: extensionAskedWords(vm.name, ms, channel), request: opened.request };
}

/** Posts the request's message, then lets it wait for the approvers (who are called in). */
async function post(deps: ExtendActionDeps, client: SlackClient, request: RequestRecord) {
  const log = deps.log.child({ requestId: request.id, command: "extend" });
  await deps.starter.start(request);
  const posted = (await deps.store.getRequest(request.id)) ?? request;
  const now = deps.now ?? (() => new Date());
  const waiting = await awaitExtensionApproval(deps, posted, now());
  if (waiting) await closureFor(deps, client, log).show(waiting);
}

function registerAsk(app: App, deps: ExtendActionDeps): void {
  // In the lease reminder (a direct message): answered privately under it.
  app.action<BlockButtonAction>(
    LEASE_ASK_LONGER,
    async ({ ack, action, body, respond, client }) => {
      await ack();
      const asked = await askLonger(deps, body.user.id, action.value);
      await respond({ replace_original: false, response_type: "ephemeral", text: asked.words });
      if (asked.request) await post(deps, client, asked.request);
    },
  );
  // On the Home: a Home has no message to answer under, so a small window tells.
  app.action<BlockButtonAction>(HOME_VM_ASK_LONGER, async ({ ack, action, body, client }) => {
    await ack();
    const asked = await askLonger(deps, body.user.id, action.value);
    try {
      await client.views.open({ trigger_id: body.trigger_id, view: homeNotice(asked.words) });
    } catch (error) {
      deps.log.warn({ err: error, user: body.user.id }, "could not answer a Home click");
    }
    if (asked.request) await post(deps, client, asked.request);
  });
}

/**
 * Approve on an extension request: recorded toward the rule; the approval that meets it claims
 * the request in one conditional move (with the intent) and the lease moves once.
 */
export function createExtendApproveAction(deps: ExtendActionDeps) {
  const now = deps.now ?? (() => new Date());
  return async (args: ButtonArgs) => {
    await args.ack();
    const found = await checkDecision(deps, args, "approve");
    if (!found) return;
    const user = args.body.user.id;
    const answer = (text: string) => tell(args.client, args.body.channel?.id ?? "", user, text);
    if (found.kind !== "extend") {
      await answer("This button belongs to a lease extension; this request is not one.");
      return;
    }
    const log = deps.log.child({ requestId: found.id, user, command: "approve_extension" });
    const { show } = closureFor(deps, args.client, log);
    try {
      const approval = await oneAtATime(deps.store, found.id, () =>
        recordApproval(deps, found, user, now()),
      );
      if (approval.kind === "waiting") {
        await answer(approval.words);
        if (approval.request)
          await renderRequestMessage(args.client, deps.store, approval.request, log);
        return;
      }
      const decision = { kind: "approved" as const, by: user, at: now().toISOString() };
      const claimed = await claimExtension(deps.store, found, decision, approval);
      if (!claimed) {
        await answer(alreadyDecided((await deps.store.getRequest(found.id)) ?? found));
        return;
      }
      const ended = await finishExtension(
        { store: deps.store, effects: deps.effects, log },
        claimed,
      );
      const final = ended ?? (await deps.store.getRequest(found.id)) ?? claimed;
      const until = extensionEnd(claimed);
      // The lease may not have moved: the VM gone, or a destroy of it opened first.
      if (final.status === "failed" && final.error !== null) await answer(final.error);
      else if (until !== undefined) await answer(leaseExtendedWords(found.spec.name, until));
      await show(final);
    } catch (error) {
      if (storeWriteFailure(error) === undefined) throw error;
      log.error({ err: error }, "could not record the approval: the store refused the write");
      await answer(NOT_RECORDED);
    }
  };
}

export function registerExtendActions(app: App, deps: ExtendActionDeps): void {
  registerAsk(app, deps);
  app.action<BlockButtonAction>(EXTEND_APPROVE, createExtendApproveAction(deps));
}
