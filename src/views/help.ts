import type { types } from "@slack/bolt";
import { escapeMrkdwn } from "../slack/mrkdwn.js";

const USAGE = [
  "*`/vm create [name]`* — open the form for a new VM; the plan is posted here for approval.",
  "*`/vm help`* — this message.",
].join("\n");

/** Usage, optionally headed by what was not understood. */
export function helpMessage(unknown?: string): { text: string; blocks: types.KnownBlock[] } {
  const intro =
    unknown === undefined
      ? "vmbot asks GitLab to build VMs on Proxmox, and shows you the plan before anything changes."
      : `\`${escapeMrkdwn(unknown.slice(0, 100))}\` is not a vmbot command. Here is what it knows:`;
  return {
    text: `${intro}\n${USAGE}`,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: intro } },
      { type: "section", text: { type: "mrkdwn", text: USAGE } },
    ],
  };
}
