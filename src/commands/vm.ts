import type { App } from "@slack/bolt";
import { VM_COMMAND } from "../ids.js";
import { answerHelp } from "./help.js";
import { createCapacityCommand, type CapacityDeps } from "./capacity.js";
import { createCreateCommand, type CreateCommandDeps } from "./create.js";
import { createUnlockCommand, type UnlockDeps } from "./unlock.js";

/** Splits `/vm` text into a subcommand and its argument: `create web-01` → ["create", "web-01"]. */
export function parseVmCommand(text: string): { sub: string; arg: string | undefined } {
  const [sub = "", ...rest] = text.trim().split(/\s+/);
  const arg = rest.join(" ").trim();
  return { sub: sub.toLowerCase(), arg: arg === "" ? undefined : arg };
}

/** Routes `/vm <subcommand>` to its module; anything unknown gets usage. */
export function registerVmCommand(
  app: App,
  deps: CreateCommandDeps & UnlockDeps & CapacityDeps,
): void {
  const create = createCreateCommand(deps);
  const unlock = createUnlockCommand(deps);
  const capacity = createCapacityCommand(deps);
  app.command(VM_COMMAND, async (args) => {
    const { sub, arg } = parseVmCommand(args.command.text);
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
      case "":
      case "help":
        await answerHelp(args.ack);
        return;
      default:
        await answerHelp(args.ack, args.command.text.trim());
    }
  });
}
