import { escapeMrkdwn } from "../slack/mrkdwn.js";

/**
 * A failed job's cause in one sentence, when its log shows one vmbot knows, read from the whole
 * log (the tail a failure message shows may not reach it).
 */
export function failureCause(log: string): string | undefined {
  if (/HTTP remote state endpoint (invalid|requires) auth/.test(log)) {
    return "GitLab refused the Terraform state lock to the job: the user whose token started the pipeline (the bot's) must be a Maintainer of the project.";
  }
  const held = /HTTP remote state already locked[^\n]*[\s\S]*?Who:\s*([^\n]+)/.exec(log);
  if (held !== null) {
    const who = held[1]?.trim() ?? "";
    return `The Terraform state is locked${who === "" ? "" : ` by ${escapeMrkdwn(who)}`}: an admin can clear a stuck lock with \`/vm unlock\`, then run the request again.`;
  }
  return undefined;
}
