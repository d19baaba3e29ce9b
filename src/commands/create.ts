import type { AllMiddlewareArgs, SlackCommandMiddlewareArgs } from "@slack/bolt";
import type { Access } from "../access.js";
import { notRequesterWords } from "../views/refusals.js";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import { within, type NodeDirectory } from "../proxmox/directory.js";
import type { ProxmoxNode } from "../proxmox/proxmox.js";
import {
  createModal,
  FORM_DEFAULTS,
  NAME_INPUT_MAX,
  liveNodeOptions,
  type CreateModalOptions,
} from "../views/create-modal.js";
import { FORM_NOT_OPENED, NODE_HINTS, staleNodesHint } from "../views/create-words.js";
import { encodeCreateMetadata } from "../actions/create-submit.js";
import type { RequestTurns } from "../slack/after-ack.js";
import { createLane } from "../slack/lane.js";
import { leaseChoices } from "../vm/lease.js";

export interface CreateCommandDeps {
  config: Config;
  access: Access;
  log: Logger;
  /** Live nodes from Proxmox, when PROXMOX_URL is set. */
  nodes?: NodeDirectory | undefined;
  /** Slack requests first: the form waits for their turn. */
  turns: RequestTurns;
}

/**
 * How long the form waits for Proxmox's node list. Slack gives the trigger_id three seconds;
 * the access check runs alongside, and views.open itself needs some of them.
 */
export const NODE_LIST_BUDGET_MS = 1_200;
/**
 * With an older list at hand the form does not wait for Proxmox at all: it opens with that list
 * and is updated in place a moment later, so a slow Proxmox never slows the form.
 */
const STALE_LIST_BUDGET_MS = 0;
/**
 * How many forms are updated with a late node list at once (see `createLane`): one. A Proxmox
 * answer completes every form that opened while it was awaited, and a command that comes meanwhile
 * waits behind the turns of as many updates as run at once; with 4 at once, forms opened with a
 * stale list every 100 ms saw a p99 1.58–2.24× a bare Bolt app's, with one 1.40–1.89× (four
 * alternating runs of `npm run bench`'s command section).
 */
const FORM_UPDATES_AT_ONCE = 1;

type NodeAnswer = ProxmoxNode[] | "late" | { failed: unknown } | { stale: ProxmoxNode[]; at: Date };

/** The form's node list and its hint, from what Proxmox answered (or did not). */
function nodeChoice(
  config: Config,
  answer: NodeAnswer | undefined,
): Pick<CreateModalOptions, "nodes" | "nodeHint"> {
  const configured = { nodes: config.vm.nodes };
  if (answer === undefined) return configured;
  if (answer === "late") {
    return {
      ...configured,
      nodeHint: NODE_HINTS.late,
    };
  }
  if ("stale" in answer) {
    const live = liveNodeOptions(answer.stale, config.vm.nodes);
    if (live.length > 0) {
      return {
        nodes: live,
        nodeHint: staleNodesHint(answer.at),
      };
    }
    return nodeChoice(config, "late");
  }
  if ("failed" in answer) {
    return {
      ...configured,
      nodeHint: NODE_HINTS.failed,
    };
  }
  const live = liveNodeOptions(answer, config.vm.nodes);
  if (live.length === 0) {
    return {
      ...configured,
      nodeHint: NODE_HINTS.noneOnline,
    };
  }
  return { nodes: live, nodeHint: NODE_HINTS.live };
}

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;

/**
 * `/vm create [name]`, acknowledged already (`commands/vm.ts`): opens the form with the command's
 * trigger_id before anything else can eat into its three seconds.
 */
export function createCreateCommand(deps: CreateCommandDeps) {
  const open = createFormOpener(deps);
  return async ({ command, client, respond }: CommandArgs, name: string | undefined) => {
    await deps.turns.afterPending();
    await open({ command, client, respond }, name);
  };
}

/** Who asks for the form, with what trigger, and where its request message goes. */
export interface FormAsk {
  command: Pick<CommandArgs["command"], "user_id" | "trigger_id" | "channel_id">;
  client: Pick<CommandArgs["client"], "views">;
  /** Tells the asker why no form opened. */
  respond: (reply: { response_type: "ephemeral"; text: string }) => Promise<unknown>;
}

/**
 * Opens the create form for `/vm create` and for the Home tab's Create VM button: the same form,
 * the same checks, within the trigger's three seconds.
 */
export function createFormOpener(deps: CreateCommandDeps) {
  const updates = createLane(FORM_UPDATES_AT_ONCE, deps.turns);
  return async ({ command, client, respond }: FormAsk, name: string | undefined) => {
    const log = deps.log.child({ user: command.user_id, command: "create" });
    const live = deps.nodes?.nodes().then(
      (nodes): NodeAnswer => nodes,
      (error: unknown): NodeAnswer => ({ failed: error }),
    );
    // Only a sure "no" stops the form: the trigger_id expires in three seconds, and the
    // submission checks again.
    // A form that opens at once with a list a few minutes old beats one that waits for Proxmox.
    const snapshot = deps.nodes?.snapshot();
    const [decision, answered] = await Promise.all([
      deps.access.mayWithin("create", command.user_id, 1_000),
      live === undefined
        ? undefined
        : within(live, snapshot === undefined ? NODE_LIST_BUDGET_MS : STALE_LIST_BUDGET_MS),
    ]);
    const early: NodeAnswer | undefined =
      answered === "late" && snapshot !== undefined
        ? { stale: snapshot.nodes, at: snapshot.at }
        : answered;
    if (early !== undefined && early !== "late" && "failed" in early) {
      log.warn(
        { err: early.failed },
        "Proxmox did not give the node list; the form offers VM_NODES",
      );
    }
    if (decision === "denied") {
      log.info("refused /vm create: not a requester");
      await respond({
        response_type: "ephemeral",
        text: notRequesterWords(deps.access.who("create")),
      });
      return;
    }
    const form = (answer: NodeAnswer | undefined) =>
      createModal({
        ...nodeChoice(deps.config, answer),
        templates: deps.config.vm.templates,
        defaults: {
          gateway: deps.config.vm.defaultGateway,
          dns: deps.config.vm.defaultDns,
          ...FORM_DEFAULTS,
        },
        ...leaseField(deps.config),
        // Not cut to a hostname's 63: a longer name is refused on the field with the limit.
        name: name?.slice(0, NAME_INPUT_MAX),
        privateMetadata: encodeCreateMetadata({
          channel: deps.config.slack.channel ?? command.channel_id,
        }),
      });
    let opened: { id: string; hash: string } | undefined;
    try {
      const result = await client.views.open({ trigger_id: command.trigger_id, view: form(early) });
      if (result.view?.id !== undefined && result.view.hash !== undefined) {
        opened = { id: result.view.id, hash: result.view.hash };
      }
    } catch (error) {
      log.error({ err: error }, "could not open the create form");
      await respond({
        response_type: "ephemeral",
        text: FORM_NOT_OPENED,
      });
      return;
    }
    const waiting = early === "late" || (early !== undefined && "stale" in early);
    if (!waiting || live === undefined || opened === undefined) return;
    // Proxmox answered after the form opened: show its list now. Slack keeps what was typed,
    // since no block changes its ID; the hash makes Slack refuse if the form moved on meanwhile.
    const answer = await live;
    try {
      await updates(() =>
        client.views.update({ view_id: opened.id, hash: opened.hash, view: form(answer) }),
      );
      log.debug("updated the create form with Proxmox's node list");
    } catch (error) {
      // Submitted or closed meanwhile: nothing to update.
      log.debug({ err: error }, "could not update the create form's node list");
    }
  };
}

/** The form's lease field: lengths up to VM_LEASE_MAX, VM_LEASE_DEFAULT chosen; none when off. */
function leaseField(config: Config) {
  const choices = leaseChoices(config.lease);
  return choices.length === 0 ? {} : { lease: { choices, initial: config.lease.defaultMs } };
}
