import type { AllMiddlewareArgs, SlackCommandMiddlewareArgs } from "@slack/bolt";
import type { Access } from "../access.js";
import { capacityRefusedWords } from "../views/refusals.js";
import { userMessage } from "../views/errors.js";
import type { Logger } from "../logger.js";
import type { NodeDirectory } from "../proxmox/directory.js";
import {
  capacityFailure,
  capacityMessage,
  capacityUsage,
  PROXMOX_NOT_CONFIGURED,
} from "../views/capacity.js";

export interface CapacityDeps {
  access: Access;
  log: Logger;
  /** Live nodes from Proxmox; undefined when PROXMOX_URL is not set. */
  nodes?: NodeDirectory | undefined;
  now?: () => Date;
}

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;

/**
 * `/vm capacity [public]`: every Proxmox node with its load, to the asker only, or to the
 * channel with `public`. Open to whoever may ask for VMs.
 */
export function createCapacityCommand(deps: CapacityDeps) {
  const now = deps.now ?? (() => new Date());
  return async ({ command, ack, respond }: CommandArgs, arg: string | undefined) => {
    const visibility = arg?.toLowerCase();
    if (visibility !== undefined && visibility !== "public") {
      await ack({ response_type: "ephemeral", ...capacityUsage(arg ?? "") });
      return;
    }
    if (deps.nodes === undefined) {
      await ack({
        response_type: "ephemeral",
        ...capacityFailure(PROXMOX_NOT_CONFIGURED),
      });
      return;
    }
    await ack();
    const log = deps.log.child({ user: command.user_id, command: "capacity" });
    if (!(await deps.access.may("capacity", command.user_id))) {
      await respond({
        response_type: "ephemeral",
        ...capacityFailure(capacityRefusedWords(deps.access.who("capacity"))),
      });
      return;
    }
    try {
      // Asked for explicitly: live figures, not the form's cached list.
      const nodes = await deps.nodes.refresh();
      const shared = visibility === "public";
      await respond({
        response_type: shared ? "in_channel" : "ephemeral",
        ...capacityMessage({
          nodes,
          source: deps.nodes.proxmox.url,
          at: now(),
          ...(shared ? { askedBy: command.user_id } : {}),
        }),
      });
    } catch (error) {
      log.warn({ err: error }, "could not read the nodes' capacity");
      await respond({ response_type: "ephemeral", ...capacityFailure(userMessage(error)) });
    }
  };
}
