import type { AllMiddlewareArgs, SlackCommandMiddlewareArgs } from "@slack/bolt";
import type { Access } from "../access.js";
import type { Logger } from "../logger.js";
import type { AsyncStore } from "../store/async.js";
import { listRefusedWords, notConfirmedWords } from "../views/refusals.js";
import { LIST_USAGE, vmList, type VmInFlight } from "../views/vm-list.js";

export interface ListDeps {
  access: Access;
  store: AsyncStore;
  log: Logger;
  now?: () => Date;
}

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;

/** `/vm list [all]`: the asker's VMs, or everyone's, to the asker only. */
export function createListCommand(deps: ListDeps) {
  const now = deps.now ?? (() => new Date());
  return async ({ command, ack }: CommandArgs, arg: string | undefined) => {
    const scope = arg?.toLowerCase();
    if (scope !== undefined && scope !== "all") {
      await ack({ response_type: "ephemeral", text: `:warning: ${LIST_USAGE}` });
      return;
    }
    const decision = await deps.access.mayWithin("list", command.user_id, 1_500);
    if (decision !== "allowed") {
      deps.log.info({ user: command.user_id, decision }, "refused /vm list");
      await ack({
        response_type: "ephemeral",
        text: `:warning: ${
          decision === "denied"
            ? listRefusedWords(deps.access.who("list"))
            : notConfirmedWords("list")
        }`,
      });
      return;
    }
    const all = scope === "all";
    const vms = await deps.store.inventory.list(all ? {} : { owner: command.user_id });
    // Admins also see the states vmbot did not make; the answer must not wait long for that.
    const admin = all && (await deps.access.decide("admin", command.user_id, 500)) === "allowed";
    const unmanaged = admin ? await deps.store.inventory.unmanagedStates() : [];
    const inFlight = await requestsInFlight(deps.store);
    await ack({
      response_type: "ephemeral",
      ...vmList(vms, { all, now: now(), unmanaged, inFlight }),
    });
  };
}

/** Each VM name's request in flight (a destroy waiting or running), the newest when several. */
async function requestsInFlight(store: AsyncStore): Promise<Map<string, VmInFlight>> {
  const busy = new Map<string, VmInFlight>();
  for (const request of await store.listActive()) {
    busy.set(request.spec.name, { kind: request.kind, status: request.status });
  }
  return busy;
}
