import type {
  AllMiddlewareArgs,
  App,
  BlockButtonAction,
  RespondFn,
  SlackActionMiddlewareArgs,
  SlackCommandMiddlewareArgs,
} from "@slack/bolt";
import { z } from "zod";
import type { Access } from "../access.js";
import type { Config } from "../config.js";
import { userMessage } from "../errors.js";
import type { GitlabPort, TerraformState } from "../gitlab/gitlab.js";
import { UNLOCK_CANCEL, UNLOCK_CONFIRM } from "../ids.js";
import type { Logger } from "../logger.js";
import type { Store } from "../store/store.js";
import {
  alreadyUnlocked,
  failure,
  leftLocked,
  lockChanged,
  notLocked,
  stateMissing,
  stillLocked,
  unlocked,
  unlockedNotice,
  unlockPrompt,
  type Reply,
  type UnlockTarget,
} from "../views/unlock.js";

/**
 * `/vm unlock [state]`: shows the lock, asks for confirmation, force-unlocks through GitLab's
 * state API, checks that the lock is gone, tells the channel and writes the audit log.
 * Admins only, checked when the command runs and again when the button is clicked.
 */

export interface UnlockDeps {
  config: Config;
  access: Access;
  store: Store;
  gitlab: GitlabPort;
  log: Logger;
  now?: () => Date;
}

/** GitLab's state names: letters, digits, '.', '_' and '-' (as TF_STATE_NAME). */
const STATE_NAME = /^[\w.-]{1,255}$/;

const UnlockTargetSchema = z.object({
  state: z.string().regex(STATE_NAME),
  lockedAt: z.string().min(1),
});

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;
type ButtonArgs = SlackActionMiddlewareArgs<BlockButtonAction> & AllMiddlewareArgs;

const NOT_ADMIN =
  "Only vmbot's admins (ADMINS) may unlock Terraform state. Ask one of them if the state is stuck.";

const ephemeral = (reply: Reply) => ({ response_type: "ephemeral" as const, ...reply });
const replace = (reply: Reply) => ({ replace_original: true, ...reply });

function lockedState(
  state: TerraformState | undefined,
): (TerraformState & { lockedAt: string }) | undefined {
  return state?.lockedAt === null || state === undefined
    ? undefined
    : { ...state, lockedAt: state.lockedAt };
}

async function findState(gitlab: GitlabPort, name: string) {
  const states = await gitlab.terraformStates();
  return { states, state: states.find((state) => state.name === name) };
}

export function createUnlockCommand(deps: UnlockDeps) {
  const now = deps.now ?? (() => new Date());
  return async ({ command, ack, respond }: CommandArgs, arg: string | undefined) => {
    const name = arg ?? deps.config.tfStateName;
    if (!STATE_NAME.test(name)) {
      await ack(
        ephemeral(
          failure(
            "Usage: `/vm unlock [state]`. A state name has letters, digits, '.', '_' or '-'; without one, vmbot uses TF_STATE_NAME.",
          ),
        ),
      );
      return;
    }
    await ack();
    const log = deps.log.child({ user: command.user_id, command: "unlock", state: name });
    if (!(await deps.access.allows("admin", command.user_id))) {
      log.info("refused /vm unlock: not an admin");
      await respond(ephemeral(failure(NOT_ADMIN)));
      return;
    }
    let reply: Reply;
    try {
      const { states, state } = await findState(deps.gitlab, name);
      const locked = lockedState(state);
      reply =
        state === undefined
          ? stateMissing(
              name,
              deps.config.gitlab.project,
              states.map((known) => known.name),
            )
          : locked === undefined
            ? notLocked(name)
            : unlockPrompt(locked, now());
    } catch (error) {
      log.warn({ err: error }, "could not read the Terraform state's lock");
      reply = failure(userMessage(error));
    }
    await respond(ephemeral(reply));
  };
}

/** Force-unlock (after Slack's confirmation dialog) and Cancel. */
export function registerUnlockActions(app: App, deps: UnlockDeps): void {
  const now = deps.now ?? (() => new Date());

  app.action<BlockButtonAction>(UNLOCK_CANCEL, async ({ ack, action, respond }) => {
    await ack();
    const target = UnlockTargetSchema.safeParse(safeJson(action.value));
    await respond(
      replace(leftLocked(target.success ? target.data.state : deps.config.tfStateName)),
    );
  });

  app.action<BlockButtonAction>(UNLOCK_CONFIRM, async (args: ButtonArgs) => {
    const { ack, action, body, respond, client } = args;
    await ack();
    const user = body.user.id;
    const log = deps.log.child({ user, command: "unlock" });
    if (!(await deps.access.allows("admin", user))) {
      log.info("refused a force-unlock: not an admin");
      await respond({ replace_original: false, response_type: "ephemeral", ...failure(NOT_ADMIN) });
      return;
    }
    const target = UnlockTargetSchema.safeParse(safeJson(action.value));
    if (!target.success) {
      await respond(replace(failure("This button is damaged. Run `/vm unlock` again.")));
      return;
    }
    const channel = deps.config.slack.channel ?? body.channel?.id;
    await forceUnlock({ ...deps, now }, target.data, { user, channel, respond, client, log });
  });
}

interface Clicker {
  user: string;
  channel: string | undefined;
  respond: RespondFn;
  client: ButtonArgs["client"];
  log: Logger;
}

async function forceUnlock(
  deps: UnlockDeps & { now: () => Date },
  target: UnlockTarget,
  clicker: Clicker,
): Promise<void> {
  const { respond, log } = clicker;
  const name = target.state;
  try {
    // The lock may have moved on since the prompt: unlock only the one the admin saw.
    const { state } = await findState(deps.gitlab, name);
    const locked = lockedState(state);
    if (locked === undefined) {
      await respond(
        replace(
          state === undefined
            ? failure(`GitLab no longer has a Terraform state \`${name}\`.`)
            : alreadyUnlocked(name),
        ),
      );
      return;
    }
    if (locked.lockedAt !== target.lockedAt) {
      await respond(replace(lockChanged(name)));
      return;
    }
    const detail = { state: name, holder: locked.lockedBy, lockedAt: locked.lockedAt };
    deps.store.audit({ requestId: null, actor: clicker.user, action: "unlock_requested", detail });
    await deps.gitlab.unlockTerraformState(name);
    const after = lockedState((await findState(deps.gitlab, name)).state);
    if (after !== undefined && after.lockedAt !== locked.lockedAt) {
      deps.store.audit({
        requestId: null,
        actor: clicker.user,
        action: "unlocked",
        detail: { ...detail, relockedAt: after.lockedAt },
      });
      log.warn({ state: name }, "state unlocked, and locked again at once");
      await respond(replace(stillLocked(name)));
      return;
    }
    if (after !== undefined) {
      deps.store.audit({ requestId: null, actor: clicker.user, action: "unlock_failed", detail });
      log.warn({ state: name }, "GitLab accepted the unlock, but the same lock is still there");
      await respond(
        replace(
          failure(
            `GitLab accepted the unlock, but \`${name}\` is still locked by the same holder. Try again, or remove the lock in GitLab (Operate → Terraform states).`,
          ),
        ),
      );
      return;
    }
    deps.store.audit({ requestId: null, actor: clicker.user, action: "unlocked", detail });
    log.info({ state: name, holder: locked.lockedBy }, "force-unlocked a Terraform state");
    await respond(replace(unlocked(name)));
    await tellChannel(clicker, unlockedNotice(clicker.user, locked, deps.now()));
  } catch (error) {
    log.warn({ err: error, state: name }, "could not force-unlock a Terraform state");
    await respond(replace(failure(userMessage(error))));
  }
}

/** The channel's record of the unlock; through the response URL when the bot is not a member. */
async function tellChannel(clicker: Clicker, notice: Reply): Promise<void> {
  if (clicker.channel !== undefined) {
    try {
      await clicker.client.chat.postMessage({ channel: clicker.channel, ...notice });
      return;
    } catch (error) {
      clicker.log.warn(
        { err: error },
        "could not post the unlock in the channel; answering in place",
      );
    }
  }
  await clicker.respond({ response_type: "in_channel", replace_original: false, ...notice });
}

function safeJson(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? "");
  } catch {
    return undefined;
  }
}
