import type { types } from "@slack/bolt";
import { escapeMrkdwn, unescapeSlack } from "../slack/mrkdwn.js";

const USAGE = [
  "*`/vm create [name]`* — open the form for a new VM; the plan is posted here for approval.",
  "*`/vm list [all]`* — your VMs (or everyone's with `all`): address, node, size, age, lease.",
  "*`/vm destroy &lt;name&gt;`* — ask to destroy a VM of yours (admins: any VM); you confirm, an approver approves.",
  "*`/vm policy`* — what you may ask for, your quota use, and the approvals your requests need.",
  "*`/vm capacity [public]`* — every Proxmox node's CPU, memory and disk; `public` posts it in the channel.",
  "*`/vm unlock [VM or state]`* — list the locked Terraform states, or show who holds a VM's or a state's lock and, after you confirm, force-unlock it (admins only).",
  "*`/vm help`* — this message.",
].join("\n");

/** Command text (which Slack sends entity-encoded) shown safely inside a code span. */
function quoted(text: string): string {
  return escapeMrkdwn(unescapeSlack(text).slice(0, 100));
}

/** Usage, optionally headed by what was not understood. */
export function helpMessage(unknown?: string): { text: string; blocks: types.KnownBlock[] } {
  const intro =
    unknown === undefined
      ? "vmbot asks GitLab to build VMs on Proxmox, and shows you the plan before anything changes."
      : `\`${quoted(unknown)}\` is not a vmbot command. Here is what it knows:`;
  return {
    text: `${intro}\n${USAGE}`,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: intro } },
      { type: "section", text: { type: "mrkdwn", text: USAGE } },
    ],
  };
}
