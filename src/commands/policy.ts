import type { AllMiddlewareArgs, SlackCommandMiddlewareArgs } from "@slack/bolt";
import type { Access } from "../access.js";
import type { Logger } from "../logger.js";
import { within } from "../proxmox/directory.js";
import { quotaInputs, quotaStateOf } from "../policy/usage.js";
import type { AsyncStore } from "../store/async.js";
import { policyText } from "../views/policy.js";

export interface PolicyCommandDeps {
  access: Access;
  store: AsyncStore;
  log: Logger;
}

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;

/** `/vm policy`: what the asker may request, their quota use, the approvals needed; to them only. */
export function createPolicyCommand(deps: PolicyCommandDeps) {
  return async ({ command, ack }: CommandArgs) => {
    const person = command.user_id;
    const answer = await within(
      (async () => {
        const policy = deps.access.policy();
        // The asker's groups come with what their quotas count: looked up once.
        const {
          held,
          own: groups,
          members,
        } = await quotaInputs(deps.store, policy, person, deps.access);
        const quota = quotaStateOf(held, policy, person, members);
        const [mayRequest, admin] = await Promise.all([
          deps.access.may("create", person),
          deps.access.allows("admin", person),
        ]);
        return policyText({
          policy,
          groups,
          mayRequest,
          admin,
          person: quota.person,
          groupUse: quota.groups,
        });
      })(),
      2_000,
    );
    if (answer === "late") deps.log.warn({ user: person }, "/vm policy did not finish in time");
    await ack({
      response_type: "ephemeral",
      text:
        answer === "late"
          ? ":warning: Slack did not confirm your groups in time. Please try again."
          : answer,
    });
  };
}
