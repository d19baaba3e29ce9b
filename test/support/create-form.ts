import type { FakeView } from "../../sandbox/simulators/slack/index.js";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import { CHANNEL, REQUESTER, type Harness } from "./harness.js";

/** `/vm create <name>` typed by `userId`: the form Slack opened for that very command. */
export async function openCreateForm(
  h: Harness,
  name: string,
  userId = REQUESTER,
): Promise<FakeView> {
  const delivery = await h.signer.slashCommand({
    text: `create ${name}`,
    userId,
    channelId: CHANNEL,
  });
  await h.slack.waitFor("views.open", (call) => call.args.trigger_id === delivery.triggerId);
  return h.slack.views.at(-1)!;
}

/** The form sent by `userId` with `entries` over what it shows: Slack's delivery and the answer. */
export function sendCreateForm(
  h: Harness,
  view: FakeView,
  entries: Record<string, string | null>,
  userId = REQUESTER,
) {
  return h.signer.viewSubmission({ view, values: stateValuesFor(view, entries), userId });
}
