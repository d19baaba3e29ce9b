import type { App, BlockButtonAction } from "@slack/bolt";
import { z } from "zod";
import {
  checkDestroy,
  inFlight,
  openDestroyRequest,
  type DestroyDeps,
} from "../commands/destroy.js";
import { LEASE_DESTROY, LEASE_EXTEND } from "../ids.js";
import { destroyAskedReply, inFlightReply } from "../views/destroy.js";
import {
  DESTROY_NOT_RECORDED,
  LEASE_VM_GONE,
  leaseAtMaximumWords,
  leaseDestroyUnderWayWords,
  leaseVmMarkedGoneWords,
  leaseExtendedWords,
  NO_CHANNEL_TO_ASK,
  notLeaseOwnerWords,
} from "../views/lease.js";
import { extendedEnd } from "../vm/lease.js";
import { longerLeaseMs, mayAskLonger } from "../extend/ask.js";
import { atMaximumAskWords } from "../views/extend.js";

/**
 * A lease reminder's buttons, in the owner's direct messages: Extend (the default length again
 * from now, never past the maximum from now) and Destroy now (a destroy request, reviewed as any).
 */

const VmNameSchema = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);

const text = (words: string) => ({
  replace_original: false,
  response_type: "ephemeral" as const,
  text: words,
});

/**
 * Extends the lease of the VM named `value` for `user` (its owner only): the default length again
 * from now, never past the maximum from now. The words that tell them what came of it.
 */
export async function extendLease(
  deps: DestroyDeps,
  user: string,
  value: unknown,
): Promise<string> {
  const now = deps.now ?? (() => new Date());
  const name = VmNameSchema.safeParse(value);
  const vm = name.success ? await deps.store.inventory.get(name.data) : undefined;
  if (vm === undefined) return LEASE_VM_GONE;
  if (vm.owner !== user) return notLeaseOwnerWords(vm.name, vm.owner);
  if (vm.status !== "live") return leaseVmMarkedGoneWords(vm.name);
  // A destroy under way (one the lease's end opened, say) goes on whatever the lease says.
  const busy = await inFlight(deps.store, vm.name);
  if (busy?.kind === "destroy") return leaseDestroyUnderWayWords(vm.name, busy);
  const until = extendedEnd(deps.config.lease, now());
  if (until === null || (vm.leaseUntil !== null && until <= vm.leaseUntil)) {
    // Where the policy lets the owner ask for more, the answer says how.
    const longer = longerLeaseMs(deps.config.lease);
    const ask =
      longer !== null && mayAskLonger(deps.access.policy(), deps.config.lease, vm)
        ? atMaximumAskWords(longer)
        : "";
    return `${leaseAtMaximumWords(vm.name, vm.leaseUntil ?? "")}${ask}`;
  }
  // Checked again in the same write as the move: the lease's end may have opened a destroy since.
  const extended = await deps.store.inventory.extendLease(vm.name, until);
  if (extended === "gone") return leaseVmMarkedGoneWords(vm.name);
  if (extended === "destroying") {
    // Ended since, the destroy either took the VM away or left it live: ask again from the start.
    const destroy = await inFlight(deps.store, vm.name);
    return destroy === undefined
      ? await extendLease(deps, user, value)
      : leaseDestroyUnderWayWords(vm.name, destroy);
  }
  await deps.store.audit({
    requestId: null,
    actor: user,
    action: "lease_extended",
    detail: { name: vm.name, from: vm.leaseUntil, to: until },
  });
  return leaseExtendedWords(vm.name, until);
}

export function registerLeaseActions(app: App, deps: DestroyDeps): void {
  app.action<BlockButtonAction>(LEASE_EXTEND, async ({ ack, action, body, respond }) => {
    await ack();
    await respond(text(await extendLease(deps, body.user.id, action.value)));
  });

  app.action<BlockButtonAction>(LEASE_DESTROY, async ({ ack, action, body, respond }) => {
    await ack();
    const user = body.user.id;
    const name = VmNameSchema.safeParse(action.value);
    const log = deps.log.child({ user, command: "lease_destroy" });
    const checked = await checkDestroy(deps, user, name.success ? name.data : "");
    if ("refusal" in checked) {
      await respond(text(checked.refusal.text));
      return;
    }
    const { vm } = checked;
    // Asked from a direct message: the request goes where the VM was asked for.
    const channel =
      deps.config.slack.channel ?? (await deps.store.getRequest(vm.requestId))?.channel;
    if (channel === undefined) {
      await respond(text(NO_CHANNEL_TO_ASK));
      return;
    }
    const opened = await openDestroyRequest(deps, { vm, requester: user, channel, log });
    if (opened === "not_recorded") {
      await respond(text(DESTROY_NOT_RECORDED));
      return;
    }
    if ("refusal" in opened) {
      await respond(text(opened.refusal.text));
      return;
    }
    if (!opened.created) {
      await respond(text(inFlightReply(vm.name, opened.request).text));
      return;
    }
    await respond(text(destroyAskedReply(vm.name, channel).text));
    await deps.starter.start(opened.request);
  });
}
