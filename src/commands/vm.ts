import { createHash } from "node:crypto";
import type { AllMiddlewareArgs, SlackCommandMiddlewareArgs, SlashCommand } from "@slack/bolt";
import { answerHelp } from "./help.js";
import { createCapacityCommand, type CapacityDeps } from "./capacity.js";
import { createCreateCommand, type CreateCommandDeps } from "./create.js";
import { createDestroyCommand, type DestroyDeps } from "./destroy.js";
import { createListCommand, type ListDeps } from "./list.js";
import { createPolicyCommand, type PolicyCommandDeps } from "./policy.js";

/** Splits `/vm` text into a subcommand and its argument: `create web-01` → ["create", "web-01"]. */
export function parseVmCommand(text: string): { sub: string; arg: string | undefined } {
  const [sub = "", ...rest] = text.trim().split(/\s+/);
  const arg = rest.join(" ").trim();
  return { sub: sub.toLowerCase(), arg: arg === "" ? undefined : arg };
}

/**
 * How long a command is remembered, so that the same one delivered again acts once. Slack's
 * signature holds for five minutes either way, so a replay of a signed body comes within ten;
 * an hour leaves room for clocks that disagree.
 */
export const COMMAND_MEMORY_MS = 60 * 60 * 1000;

/** What identifies one typed command: its trigger_id, unique to it, else its whole body. */
export function commandKey(command: SlashCommand): string {
  const id =
    typeof command.trigger_id === "string" && command.trigger_id !== ""
      ? command.trigger_id
      : createHash("sha256").update(JSON.stringify(command)).digest("hex");
  return `command:${id}`;
}

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;

/** A subcommand's handler: the command's arguments, and the text after the subcommand. */
export type Subcommand = (args: CommandArgs, arg: string | undefined) => Promise<void>;

/**
 * `/vm`: routes `/vm <subcommand>` to its module; anything unknown gets usage. A command delivered
 * twice (a replayed request, or Slack trying again) is acknowledged and acts only once.
 */
export function createVmCommand(
  deps: CreateCommandDeps & CapacityDeps & ListDeps & PolicyCommandDeps & DestroyDeps,
  features: { unlock: Subcommand },
) {
  const create = createCreateCommand(deps);
  const capacity = createCapacityCommand(deps);
  const list = createListCommand(deps);
  const policy = createPolicyCommand(deps);
  const destroy = createDestroyCommand(deps);
  const { unlock } = features;
  return async (args: CommandArgs): Promise<void> => {
    const { sub, arg } = parseVmCommand(args.command.text);
    // `/vm create` answers Slack with nothing, so it does so before anything else: a busy store
    // never holds the acknowledgement past Slack's three seconds, after which the late answer
    // would fail and the command be lost while its delivery stood recorded.
    if (sub === "create") await args.ack();
    if (!(await deps.store.firstDelivery(commandKey(args.command), COMMAND_MEMORY_MS))) {
      deps.log.info(
        { user: args.command.user_id, retry: args.context.retryNum },
        "a command delivered again: acknowledged, not repeated",
      );
      if (sub !== "create") await args.ack();
      return;
    }
    switch (sub) {
      case "create":
        await create(args, arg);
        return;
      case "unlock":
        await unlock(args, arg);
        return;
      case "capacity":
        await capacity(args, arg);
        return;
      case "list":
        await list(args, arg);
        return;
      case "policy":
        await policy(args);
        return;
      case "destroy":
        await destroy(args, arg);
        return;
      case "":
      case "help":
        await answerHelp(args.ack);
        return;
      default:
        await answerHelp(args.ack, args.command.text.trim());
    }
  };
}
