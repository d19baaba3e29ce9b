import type { AllMiddlewareArgs, AnyMiddlewareArgs, Middleware } from "@slack/bolt";
import { z } from "zod";
import type { Logger } from "../logger.js";
import { StoreWriteError } from "../store/store.js";

/** What a click or a command that the store could not record is answered, privately. */
export const NOT_RECORDED =
  "vmbot could not record that just now (its store cannot take a write), so it did not count and nothing was done. Please try again in a minute; if it keeps failing, tell the team that runs vmbot.";

/**
 * What a click or a command is answered when it failed otherwise (its store could not be read,
 * PostgreSQL being unreachable, say): what it asked may have been done in part, so the person is
 * sent to look.
 */
export const NOT_FINISHED =
  "vmbot ran into a problem and could not finish what you asked. Look at the request's message; if nothing changed, try again in a minute, and if it keeps failing, tell the team that runs vmbot.";

/** Who clicked or typed, and where, from any interaction's body. */
const ClickerSchema = z.object({
  user: z.object({ id: z.string() }).optional(),
  user_id: z.string().optional(),
  channel: z.object({ id: z.string() }).optional(),
  channel_id: z.string().optional(),
});

/** The StoreWriteError behind `error`, if a refused store write is what it comes down to. */
export function storeWriteFailure(error: unknown): StoreWriteError | undefined {
  for (let cause = error, depth = 0; cause !== undefined && depth < 5; depth += 1) {
    if (cause instanceof StoreWriteError) return cause;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return undefined;
}

/**
 * A listener that failed is never left in silence: one whose store write failed (a click on
 * Approve, Reject or an unlock button, a command) is answered privately that it did not count,
 * and one that failed otherwise (its store could not be read, say) that it could not be finished.
 */
export function answerListenerFailures(log: Logger): Middleware<AnyMiddlewareArgs> {
  return async ({ next, body, client }) => {
    try {
      await next();
    } catch (error) {
      const failure = storeWriteFailure(error);
      const parsed = ClickerSchema.safeParse(body);
      const user = parsed.success ? (parsed.data.user?.id ?? parsed.data.user_id) : undefined;
      const channel = parsed.success
        ? (parsed.data.channel?.id ?? parsed.data.channel_id)
        : undefined;
      if (failure !== undefined) {
        log.error(
          { err: error, user, reason: failure.reason },
          "an interaction could not be recorded: the store refused a write",
        );
      }
      if (user !== undefined) await answer(client, user, channel, failure, log);
      // Logged where every listener's error is (app.error), as before.
      if (failure === undefined) throw error;
    }
  };
}

/** Tells the person privately that what they asked did not count, or could not be finished. */
async function answer(
  client: AllMiddlewareArgs["client"],
  user: string,
  channel: string | undefined,
  failure: StoreWriteError | undefined,
  log: Logger,
): Promise<void> {
  const text = failure === undefined ? NOT_FINISHED : NOT_RECORDED;
  try {
    await (channel === undefined
      ? client.chat.postMessage({ channel: user, text })
      : client.chat.postEphemeral({ channel, user, text }));
  } catch (answerError) {
    log.error({ err: answerError, user }, "could not tell the person what became of their click");
  }
}
