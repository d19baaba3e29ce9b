import type {
  AllMiddlewareArgs,
  BlockButtonAction,
  RespondFn,
  SlackActionMiddlewareArgs,
  SlackCommandMiddlewareArgs,
} from "@slack/bolt";
import { z } from "zod";
import type { Logger } from "../logger.js";
import type { UnlockService } from "../unlock/service.js";
import { failure, UNLOCK_USAGE, type Reply, type UnlockTarget } from "../views/unlock.js";
import { STATE_NAME } from "../vm/state-name.js";
import { answerLost, postOnce } from "../slack/lost-answers.js";
import { findMessage } from "../slack/find.js";

/** `/vm unlock`, Force-unlock and Cancel: each reads what Slack sent, asks the unlock service, answers. */

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;
type ButtonArgs = SlackActionMiddlewareArgs<BlockButtonAction> & AllMiddlewareArgs;

const UnlockArgSchema = z.string().regex(STATE_NAME).optional();

/** What the Force-unlock and Cancel buttons carry (`views/unlock.ts`), as JSON in their value. */
const UnlockTargetSchema = z.object({
  state: z.string().regex(STATE_NAME),
  lockedAt: z.string().min(1),
});

const ephemeral = (reply: Reply) => ({ response_type: "ephemeral" as const, ...reply });
const replace = (reply: Reply) => ({ replace_original: true, ...reply });
const beside = (reply: Reply) => ({
  replace_original: false,
  response_type: "ephemeral" as const,
  ...reply,
});

function targetOf(value: string | undefined): UnlockTarget | undefined {
  try {
    const parsed = UnlockTargetSchema.safeParse(JSON.parse(value ?? ""));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** `/vm unlock [VM or state]`, admins only: the service checks who asks. */
export function unlockCommand(unlock: UnlockService) {
  return async ({ command, ack, respond }: CommandArgs, arg: string | undefined) => {
    const name = UnlockArgSchema.safeParse(arg);
    if (!name.success) {
      await ack(ephemeral(failure(UNLOCK_USAGE)));
      return;
    }
    await ack();
    await respond(ephemeral(await unlock.show(command.user_id, name.data)));
  };
}

/** Cancel: the state stays locked, and the prompt says so. */
export function unlockCancel(unlock: UnlockService) {
  return async ({ ack, action, respond }: ButtonArgs) => {
    await ack();
    await respond(replace(unlock.cancel(targetOf(action.value)?.state)));
  };
}

/**
 * Force-unlock (after Slack's confirmation dialog). The unlock is recorded in SLACK_CHANNEL, else
 * in the channel of the prompt.
 */
export function unlockConfirm(
  unlock: UnlockService,
  deps: { channel: string | undefined; log: Logger },
) {
  return async ({ ack, action, body, respond, client }: ButtonArgs) => {
    await ack();
    const user = body.user.id;
    const channel = deps.channel ?? body.channel?.id;
    const answer = await unlock.unlock(user, targetOf(action.value), channel);
    await respond(answer.inPlace ? replace(answer.reply) : beside(answer.reply));
    if (answer.notice === undefined) return;
    const log = deps.log.child({ user, command: "unlock" });
    await tellChannel({ channel, client, respond, log }, answer.notice);
  };
}

/** The channel's record of the unlock; through the response URL when the bot is not a member. */
async function tellChannel(
  where: {
    channel: string | undefined;
    client: ButtonArgs["client"];
    respond: RespondFn;
    log: Logger;
  },
  notice: Reply,
): Promise<void> {
  if (where.channel !== undefined) {
    try {
      const channel = where.channel;
      const since = String(Date.now() / 1000 - 60);
      // A lost answer is read back (the notice's words, in the last minute) before posting again.
      await postOnce(
        async () => ({ ts: (await where.client.chat.postMessage({ channel, ...notice })).ts }),
        () => findMessage(where.client, { channel, oldest: since }, (m) => m.text === notice.text),
      );
      return;
    } catch (error) {
      // Slack may have taken it: answered in place as well, the channel would be told twice.
      if (answerLost(error)) {
        where.log.warn(
          { err: error },
          "no answer to the unlock's notice; it may be in the channel",
        );
        return;
      }
      where.log.warn(
        { err: error },
        "could not post the unlock in the channel; answering in place",
      );
    }
  }
  await where.respond({ response_type: "in_channel", replace_original: false, ...notice });
}
