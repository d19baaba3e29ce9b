import type { AckFn, RespondArguments } from "@slack/bolt";
import { helpMessage } from "../views/help.js";

/** `/vm help`, and the answer to anything the bot does not understand. */
export async function answerHelp(
  ack: AckFn<string | RespondArguments>,
  unknown?: string,
): Promise<void> {
  await ack({ response_type: "ephemeral", ...helpMessage(unknown) });
}
