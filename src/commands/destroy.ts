import type {
  AllMiddlewareArgs,
  App,
  BlockButtonAction,
  SlackActionMiddlewareArgs,
  SlackCommandMiddlewareArgs,
} from "@slack/bolt";
import { z } from "zod";
import type { Access } from "../access.js";
import type { Config } from "../config.js";
import { DESTROY_CANCEL, DESTROY_CONFIRM } from "../ids.js";
import type { Logger } from "../logger.js";
import type { VmRecord } from "../store/inventory.js";
import { FINAL_STATUSES, type NewRequest, type RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import type { RequestStarter } from "../tracker/starter.js";
import { storeWriteFailure } from "../actions/store-failure.js";
import { closestNames } from "../destroy/closest.js";
import {
  destroyAskedReply,
  destroyCanceledReply,
  destroyConfirmation,
  destroyRefusedReply,
  destroyUsageReply,
  goneVmReply,
  inFlightReply,
  unknownVmReply,
  type DestroyReply,
} from "../views/destroy.js";
import { notConfirmedWords } from "../views/refusals.js";

/**
 * `/vm destroy <name>`: for the VM's owner and for admins. Shows what would be destroyed and
 * asks for confirmation; the confirmation opens a destroy request, reviewed like a create: its
 * message in the channel, an `action=destroy` pipeline with the VM's recorded inputs and state,
 * and an approver's Approve to play the destroy job.
 */

export interface DestroyDeps {
  config: Config;
  access: Access;
  store: AsyncStore;
  log: Logger;
  starter: RequestStarter;
  now?: () => Date;
}

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;
type ButtonArgs = SlackActionMiddlewareArgs<BlockButtonAction> & AllMiddlewareArgs;

/** A VM name as the form accepts it (DNS label), folded to lower case. */
const VmNameSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);

/** How long a check of who may destroy waits for Slack's user groups. */
const ACCESS_BUDGET_MS = 1_500;

const ephemeral = (reply: DestroyReply) => ({ response_type: "ephemeral" as const, ...reply });
const replace = (reply: DestroyReply) => ({ replace_original: true, ...reply });

/** The request in flight for this VM (create, configure or destroy), if one is. */
export async function inFlight(
  store: AsyncStore,
  name: string,
): Promise<RequestRecord | undefined> {
  return (await store.requestsForVm(name)).find(
    (request) => !FINAL_STATUSES.includes(request.status),
  );
}

/**
 * Why `user` may not ask to destroy `name` now, as a reply; the VM when they may. Asked when
 * the command runs and again when its confirmation is clicked.
 */
export async function checkDestroy(
  deps: DestroyDeps,
  user: string,
  name: string,
): Promise<{ vm: VmRecord } | { refusal: DestroyReply }> {
  const vm = await deps.store.inventory.get(name);
  if (vm === undefined) {
    const known = (await deps.store.inventory.list()).map((each) => each.name);
    return { refusal: unknownVmReply(name, closestNames(name, known)) };
  }
  if (vm.owner !== user) {
    const decision = await deps.access.mayWithin("destroy", user, ACCESS_BUDGET_MS);
    if (decision === "unknown") {
      return {
        refusal: {
          text: notConfirmedWords("destroy"),
          blocks: [],
        },
      };
    }
    if (decision === "denied")
      return { refusal: destroyRefusedReply(vm, deps.access.who("destroy")) };
  }
  if (vm.status === "gone") return { refusal: goneVmReply(vm) };
  const busy = await inFlight(deps.store, name);
  if (busy !== undefined) return { refusal: inFlightReply(name, busy) };
  return { vm };
}

export function createDestroyCommand(deps: DestroyDeps) {
  const now = deps.now ?? (() => new Date());
  return async ({ command, ack }: CommandArgs, arg: string | undefined) => {
    const name = VmNameSchema.safeParse(arg ?? "");
    if (!name.success) {
      await ack(ephemeral(destroyUsageReply()));
      return;
    }
    const log = deps.log.child({ user: command.user_id, command: "destroy", name: name.data });
    const checked = await checkDestroy(deps, command.user_id, name.data);
    if ("refusal" in checked) {
      log.info("refused /vm destroy");
      await ack(ephemeral(withBlocks(checked.refusal)));
      return;
    }
    await ack(ephemeral(destroyConfirmation(checked.vm, now())));
  };
}

const withBlocks = (reply: DestroyReply): DestroyReply =>
  reply.blocks.length > 0
    ? reply
    : { ...reply, blocks: [{ type: "section", text: { type: "mrkdwn", text: reply.text } }] };

/** Opens the destroy request once the asker confirmed; checks everything again first. */
async function confirmDestroy(deps: DestroyDeps, args: ButtonArgs): Promise<void> {
  const { body, action, respond } = args;
  const user = body.user.id;
  const name = VmNameSchema.safeParse(action.value);
  if (!name.success) {
    await respond(replace(destroyUsageReply()));
    return;
  }
  const log = deps.log.child({ user, command: "destroy", name: name.data });
  const checked = await checkDestroy(deps, user, name.data);
  if ("refusal" in checked) {
    log.info("refused a destroy confirmation");
    await respond(replace(withBlocks(checked.refusal)));
    return;
  }
  const { vm } = checked;
  const channel = deps.config.slack.channel ?? body.channel?.id;
  if (channel === undefined) {
    await respond(
      replace(
        withBlocks({
          text: "vmbot could not tell which channel to post in: run `/vm destroy` in a channel.",
          blocks: [],
        }),
      ),
    );
    return;
  }
  const opened = await openDestroyRequest(deps, { vm, requester: user, channel, log });
  if (opened === "not_recorded") {
    await respond(
      replace(
        withBlocks({
          text: "vmbot could not record your request (its store refused the write), so nothing was started. Please try again.",
          blocks: [],
        }),
      ),
    );
    return;
  }
  if ("refusal" in opened) {
    await respond(replace(withBlocks(opened.refusal)));
    return;
  }
  if (!opened.created) {
    await respond(replace(inFlightReply(vm.name, opened.request)));
    return;
  }
  await respond(replace(destroyAskedReply(vm.name, channel)));
  await deps.starter.start(opened.request);
}

export interface DestroyAsk {
  vm: VmRecord;
  requester: string;
  channel: string;
  log: Logger;
  key?: string;
  actor?: string;
  notes?: string[];
  /** Decided already: a destroy vmbot plays without approval at a lease's end. */
  decision?: NonNullable<RequestRecord["decision"]>;
  /**
   * When a lease's end opens it, the end: the request is made only while the VM's lease still
   * ends then ("not_due" when not).
   */
  leaseUntil?: string;
}

export interface OpenedDestroy {
  request: RequestRecord;
  created: boolean;
}

/**
 * Records a destroy request for `vm` (its recorded inputs and state), once: two at once make
 * the same key, and only one request. `key` names what asked (a lease's end); by default, the
 * VM's latest request, so that a destroy can be asked again once the last one has ended. It is
 * written only while the VM is live and nothing else is in flight for it, checked in the same
 * write: of a confirmation and a lease's end at once (different keys), one request is made, and
 * the other is told of it (`created: false`), or why the VM can no longer be destroyed.
 */
export async function openDestroyRequest(
  deps: Pick<DestroyDeps, "store" | "config">,
  ask: DestroyAsk & { leaseUntil: string },
): Promise<OpenedDestroy | "not_recorded" | "not_due">;
export async function openDestroyRequest(
  deps: Pick<DestroyDeps, "store" | "config">,
  ask: DestroyAsk,
): Promise<OpenedDestroy | "not_recorded" | { refusal: DestroyReply }>;
export async function openDestroyRequest(
  deps: Pick<DestroyDeps, "store" | "config">,
  ask: DestroyAsk,
): Promise<OpenedDestroy | "not_recorded" | "not_due" | { refusal: DestroyReply }> {
  const { vm, log, leaseUntil } = ask;
  const latest = (await deps.store.requestsForVm(vm.name))[0]?.id ?? vm.requestId;
  const asked: NewRequest = {
    kind: "destroy",
    requester: ask.requester,
    spec: vm.spec,
    notes: ask.notes ?? [],
    channel: ask.channel,
    submissionKey: ask.key ?? `destroy:${vm.name}:${latest}`,
    stateName: vm.stateName ?? deps.config.tfStateName,
    ...(ask.decision === undefined ? {} : { decision: ask.decision }),
  };
  const guard = { name: vm.name, ...(leaseUntil === undefined ? {} : { leaseUntil }) };
  let stored: Awaited<ReturnType<AsyncStore["createDestroyRequest"]>>;
  try {
    stored = await deps.store.createDestroyRequest(asked, guard);
  } catch (error) {
    if (storeWriteFailure(error) === undefined) throw error;
    log.error({ err: error }, "could not record the destroy request");
    return "not_recorded";
  }
  if (stored === undefined) {
    return leaseUntil === undefined ? await refusedNow(deps.store, vm.name) : "not_due";
  }
  if (!stored.created) return stored;
  let request = stored.request;
  if (vm.address !== null)
    request = await deps.store.updateRequest(request.id, { address: vm.address });
  await deps.store.audit({
    requestId: request.id,
    actor: ask.actor ?? ask.requester,
    action: "requested",
    detail: { kind: "destroy", name: vm.name, owner: vm.owner, stateName: request.stateName },
  });
  log.info({ requestId: request.id }, "destroy requested");
  return { request, created: true };
}

/**
 * Why a destroy checked a moment ago was not written after all: the request that got there first
 * (another person's destroy, the lease's end), or the VM gone meanwhile.
 */
async function refusedNow(
  store: AsyncStore,
  name: string,
): Promise<OpenedDestroy | { refusal: DestroyReply }> {
  const busy = await inFlight(store, name);
  if (busy !== undefined) return { request: busy, created: false };
  const vm = await store.inventory.get(name);
  return { refusal: vm === undefined ? unknownVmReply(name, []) : goneVmReply(vm) };
}

/** The confirmation's buttons: Ask to destroy, and Cancel. */
export function registerDestroyActions(app: App, deps: DestroyDeps): void {
  app.action<BlockButtonAction>(DESTROY_CANCEL, async ({ ack, action, respond }) => {
    await ack();
    const name = VmNameSchema.safeParse(action.value);
    await respond(replace(destroyCanceledReply(name.success ? name.data : "the VM")));
  });
  app.action<BlockButtonAction>(DESTROY_CONFIRM, async (args: ButtonArgs) => {
    await args.ack();
    await confirmDestroy(deps, args);
  });
}
