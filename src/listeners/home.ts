import type {
  AllMiddlewareArgs,
  App,
  BlockButtonAction,
  SlackActionMiddlewareArgs,
  SlackViewMiddlewareArgs,
  ViewSubmitAction,
} from "@slack/bolt";
import { z } from "zod";
import { extendLease } from "../actions/lease.js";
import { storeWriteFailure } from "../actions/store-failure.js";
import { checkDestroy, openDestroyRequest, type DestroyDeps } from "../commands/destroy.js";
import { createFormOpener, type CreateCommandDeps } from "../commands/create.js";
import type { HomePublisher } from "../home/publisher.js";
import { HOME_CREATE, HOME_DESTROY_MODAL, HOME_VM_DESTROY, HOME_VM_EXTEND } from "../ids.js";
import type { AsyncStore } from "../store/async.js";
import { destroyAskedReply, inFlightReply, type DestroyReply } from "../views/destroy.js";
import { homeDestroyModal, homeNotice } from "../views/home.js";

/**
 * The Home tab: published when someone opens it, and its buttons. Create VM opens the same form
 * as `/vm create`; a VM's Extend lease and Destroy go through the same checks and effects as the
 * lease reminder's Extend and `/vm destroy` (the owner or an admin, a confirmation naming what
 * will be destroyed, then a destroy request reviewed in the channel). A Home has no message to
 * answer in: what came of a click is shown in a small modal.
 */

export type HomeDeps = DestroyDeps & CreateCommandDeps & { home: HomePublisher };

type ButtonArgs = SlackActionMiddlewareArgs<BlockButtonAction> & AllMiddlewareArgs;
type SubmitArgs = SlackViewMiddlewareArgs<ViewSubmitAction> & AllMiddlewareArgs;

const HomeOpenedSchema = z.object({
  type: z.literal("app_home_opened"),
  user: z.string().regex(/^[UW][A-Z0-9]+$/),
  tab: z.string().optional(),
});

const VmNameSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);

/** Where a request asked from the Home goes: the configured channel, else where the person last asked. */
async function channelFor(
  deps: { config: DestroyDeps["config"]; store: AsyncStore },
  user: string,
): Promise<string | undefined> {
  if (deps.config.slack.channel !== undefined) return deps.config.slack.channel;
  const vm = (await deps.store.inventory.list({ owner: user }))[0];
  const fromVm =
    vm === undefined ? undefined : (await deps.store.getRequest(vm.requestId))?.channel;
  return fromVm ?? (await deps.store.listActive()).findLast((r) => r.requester === user)?.channel;
}

const NO_CHANNEL =
  "vmbot knows no channel to post your request in: run the `/vm` command in a channel instead.";

/** Shows `reply` in a small modal over the Home; a refused modal is only logged. */
async function tell(deps: HomeDeps, args: ButtonArgs, reply: DestroyReply | string) {
  try {
    await args.client.views.open({ trigger_id: args.body.trigger_id, view: homeNotice(reply) });
  } catch (error) {
    deps.log.warn({ err: error, user: args.body.user.id }, "could not answer a Home click");
  }
}

async function extendFromHome(deps: HomeDeps, args: ButtonArgs): Promise<void> {
  await args.ack();
  await tell(deps, args, await extendLease(deps, args.body.user.id, args.action.value));
}

async function destroyFromHome(deps: HomeDeps, args: ButtonArgs): Promise<void> {
  await args.ack();
  const user = args.body.user.id;
  const name = VmNameSchema.safeParse(args.action.value);
  const checked = await checkDestroy(deps, user, name.success ? name.data : "");
  if ("refusal" in checked) {
    deps.log.info({ user, command: "home_destroy" }, "refused a destroy from the Home tab");
    await tell(deps, args, checked.refusal);
    return;
  }
  const now = deps.now ?? (() => new Date());
  try {
    await args.client.views.open({
      trigger_id: args.body.trigger_id,
      view: homeDestroyModal(checked.vm, now()),
    });
  } catch (error) {
    deps.log.warn({ err: error, user }, "could not open the Home's destroy confirmation");
  }
}

/** The Home's destroy confirmation, submitted: checked again, then the request opened. */
async function confirmFromHome(deps: HomeDeps, args: SubmitArgs): Promise<void> {
  const user = args.body.user.id;
  const answer = (reply: DestroyReply | string) =>
    args.ack({ response_action: "update", view: homeNotice(reply) });
  const name = VmNameSchema.safeParse(args.view.private_metadata);
  const log = deps.log.child({ user, command: "home_destroy" });
  const checked = await checkDestroy(deps, user, name.success ? name.data : "");
  if ("refusal" in checked) {
    log.info("refused a destroy confirmation from the Home tab");
    await answer(checked.refusal);
    return;
  }
  const { vm } = checked;
  // As the lease reminder's Destroy now: where the VM was asked for, unless a channel is set.
  const channel =
    deps.config.slack.channel ??
    (await deps.store.getRequest(vm.requestId))?.channel ??
    (await channelFor(deps, user));
  if (channel === undefined) {
    await answer(NO_CHANNEL);
    return;
  }
  const opened = await openDestroyRequest(deps, { vm, requester: user, channel, log });
  if (opened === "not_recorded") {
    await answer("vmbot could not record your request, so nothing was started. Please try again.");
    return;
  }
  if ("refusal" in opened) {
    await answer(opened.refusal);
    return;
  }
  if (!opened.created) {
    await answer(inFlightReply(vm.name, opened.request));
    return;
  }
  await answer(destroyAskedReply(vm.name, channel));
  await deps.starter.start(opened.request);
}

async function createFromHome(
  deps: HomeDeps,
  open: ReturnType<typeof createFormOpener>,
  args: ButtonArgs,
): Promise<void> {
  await args.ack();
  const user = args.body.user.id;
  const channel = await channelFor(deps, user);
  if (channel === undefined) {
    await tell(deps, args, NO_CHANNEL);
    return;
  }
  await open(
    {
      command: { user_id: user, trigger_id: args.body.trigger_id, channel_id: channel },
      client: args.client,
      // No form opened: the trigger is unused when the asker may not create, so say why there.
      respond: (reply) => tell(deps, args, reply.text),
    },
    undefined,
  );
}

export function registerHome(app: App, deps: HomeDeps): void {
  app.event("app_home_opened", async ({ event }) => {
    const opened = HomeOpenedSchema.safeParse(event);
    if (!opened.success || (opened.data.tab ?? "home") !== "home") return;
    try {
      await deps.home.opened(opened.data.user);
    } catch (error) {
      if (storeWriteFailure(error) === undefined) throw error;
      deps.log.error({ err: error }, "could not remember who opened the Home tab");
    }
  });
  const open = createFormOpener(deps);
  app.action<BlockButtonAction>(HOME_CREATE, (args) => createFromHome(deps, open, args));
  app.action<BlockButtonAction>(HOME_VM_EXTEND, (args) => extendFromHome(deps, args));
  app.action<BlockButtonAction>(HOME_VM_DESTROY, (args) => destroyFromHome(deps, args));
  app.view<ViewSubmitAction>(HOME_DESTROY_MODAL, (args) => confirmFromHome(deps, args));
}
