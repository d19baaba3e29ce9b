import type { AllMiddlewareArgs, SlackCommandMiddlewareArgs } from "@slack/bolt";
import type { Access } from "../access.js";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import { createModal, FORM_DEFAULTS } from "../views/create-modal.js";
import { encodeCreateMetadata } from "../actions/create-submit.js";

export interface CreateCommandDeps {
  config: Config;
  access: Access;
  log: Logger;
}

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;

/**
 * `/vm create [name]`: acknowledges at once, then opens the form with the command's trigger_id
 * before anything else can eat into its three seconds.
 */
export function createCreateCommand(deps: CreateCommandDeps) {
  return async ({ command, ack, client, respond }: CommandArgs, name: string | undefined) => {
    await ack();
    const log = deps.log.child({ user: command.user_id, command: "create" });
    // Only a sure "no" stops the form: the trigger_id expires in three seconds, and the
    // submission checks again.
    if ((await deps.access.decide("requester", command.user_id, 1_000)) === "denied") {
      log.info("refused /vm create: not a requester");
      await respond({
        response_type: "ephemeral",
        text: "You are not on the list of people who may ask for VMs (REQUESTERS). Ask the team that runs vmbot to add you.",
      });
      return;
    }
    const view = createModal({
      nodes: deps.config.vm.nodes,
      templates: deps.config.vm.templates,
      defaults: {
        gateway: deps.config.vm.defaultGateway,
        dns: deps.config.vm.defaultDns,
        ...FORM_DEFAULTS,
      },
      name: name?.slice(0, 63),
      privateMetadata: encodeCreateMetadata({
        channel: deps.config.slack.channel ?? command.channel_id,
      }),
    });
    try {
      await client.views.open({ trigger_id: command.trigger_id, view });
    } catch (error) {
      log.error({ err: error }, "could not open the create form");
      await respond({
        response_type: "ephemeral",
        text: "Slack did not let vmbot open the form in time (the command's trigger expires after 3 seconds). Please run `/vm create` again.",
      });
    }
  };
}
