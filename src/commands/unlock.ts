import type {
  AllMiddlewareArgs,
  App,
  BlockButtonAction,
  RespondFn,
  SlackActionMiddlewareArgs,
  SlackCommandMiddlewareArgs,
} from "@slack/bolt";
import { z } from "zod";
import { notAdminWords } from "../views/refusals.js";
import type { Access } from "../access.js";
import type { Config } from "../config.js";
import type { Effects } from "../effects.js";
import { userMessage } from "../views/errors.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { GitlabPort, TerraformState } from "../gitlab/gitlab.js";
import { UNLOCK_CANCEL, UNLOCK_CONFIRM } from "../ids.js";
import type { Logger } from "../logger.js";
import type { Store } from "../store/store.js";
import { STATE_NAME } from "../vm/state-name.js";
import {
  alreadyUnlocked,
  failure,
  leftLocked,
  lockChanged,
  lockedStates,
  notLocked,
  stateMissing,
  stillLocked,
  unlocked,
  unlockUnknown,
  unlockedNotice,
  unlockPrompt,
  type Reply,
  type UnlockTarget,
} from "../views/unlock.js";
import { UnlockedResultSchema, type UnlockedResult } from "../effect-results.js";

/**
 * `/vm unlock [VM or state]`: lists the locked states, or shows one lock, asks for confirmation, force-unlocks through GitLab's
 * state API, checks that the lock is gone, tells the channel and writes the audit log.
 * Admins only, checked when the command runs and again when the button is clicked.
 */

export interface UnlockDeps {
  config: Config;
  access: Access;
  store: Store;
  gitlab: GitlabPort;
  effects: Effects;
  log: Logger;
  now?: () => Date;
}

const UnlockTargetSchema = z.object({
  state: z.string().regex(STATE_NAME),
  lockedAt: z.string().min(1),
});

type CommandArgs = SlackCommandMiddlewareArgs & AllMiddlewareArgs;
type ButtonArgs = SlackActionMiddlewareArgs<BlockButtonAction> & AllMiddlewareArgs;

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

/**
 * What `/vm unlock <name>` names: a VM vmbot made (its recorded state; a VM from before states
 * were named used the shared TF_STATE_NAME), or else a state by its own name.
 */
function targetOf(deps: UnlockDeps, name: string): { state: string; vm?: string } {
  const request = deps.store.requestsForVm(name)[0];
  if (request === undefined) return { state: name };
  return { state: request.stateName ?? deps.config.tfStateName, vm: name };
}

export function createUnlockCommand(deps: UnlockDeps) {
  const now = deps.now ?? (() => new Date());
  return async ({ command, ack, respond }: CommandArgs, arg: string | undefined) => {
    if (arg !== undefined && !STATE_NAME.test(arg)) {
      await ack(
        ephemeral(
          failure(
            "Usage: `/vm unlock [VM or state]`. A VM or state name has letters, digits, '.', '_' or '-'; without one, vmbot lists the locked states.",
          ),
        ),
      );
      return;
    }
    await ack();
    const log = deps.log.child({ user: command.user_id, command: "unlock", name: arg });
    if (!(await deps.access.may("unlock", command.user_id))) {
      log.info("refused /vm unlock: not an admin");
      await respond(ephemeral(failure(notAdminWords(deps.access.who("unlock")))));
      return;
    }
    let reply: Reply;
    try {
      const states = await deps.gitlab.terraformStates();
      if (arg === undefined) {
        const locked = states.flatMap((state) => lockedState(state) ?? []);
        reply =
          locked.length === 1 && locked[0] !== undefined
            ? unlockPrompt(locked[0], now())
            : lockedStates(locked, deps.config.gitlab.project, now());
      } else {
        const target = targetOf(deps, arg);
        const state = states.find((known) => known.name === target.state);
        const locked = lockedState(state);
        reply =
          state === undefined
            ? stateMissing(
                target.state,
                deps.config.gitlab.project,
                states.map((known) => known.name),
              )
            : locked === undefined
              ? notLocked(target.state)
              : unlockPrompt(locked, now(), target.vm);
      }
    } catch (error) {
      log.warn({ err: error }, "could not read the Terraform states' locks");
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
    if (!(await deps.access.may("unlock", user))) {
      log.info("refused a force-unlock: not an admin");
      await respond({
        replace_original: false,
        response_type: "ephemeral",
        ...failure(notAdminWords(deps.access.who("unlock"))),
      });
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

/** States being unlocked by this process: a second confirmation waits its turn politely. */
const unlocking = new Set<string>();

async function forceUnlock(
  deps: UnlockDeps & { now: () => Date },
  target: UnlockTarget,
  clicker: Clicker,
): Promise<void> {
  const { respond, log } = clicker;
  const name = target.state;
  if (unlocking.has(name)) {
    await respond({
      replace_original: false,
      response_type: "ephemeral",
      ...failure(`An unlock of \`${name}\` is already under way.`),
    });
    return;
  }
  unlocking.add(name);
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
    await deps.effects.once(`unlock:${name}`, `unlock:${locked.lockedAt}`, {
      result: UnlockedResultSchema,
      detail: { ...detail, user: clicker.user, channel: clicker.channel ?? null },
      act: async () => {
        await removeLock(deps.gitlab, name, locked.lockedAt, log);
        return {};
      },
    });
    const outcome = await confirmUnlock(deps, locked, clicker.user, log);
    await respond(replace(outcome.reply));
    if (outcome.tellChannel) {
      await tellChannel(clicker, unlockedNotice(clicker.user, locked, deps.now()));
    }
  } catch (error) {
    log.warn({ err: error, state: name }, "could not force-unlock a Terraform state");
    const unknown = error instanceof UnlockOutcomeUnknown;
    const cause = unknown ? error.cause : error;
    deps.store.audit({
      requestId: null,
      actor: clicker.user,
      action: unknown ? "unlock_unknown" : "unlock_failed",
      detail: { state: name, code: (cause as { code?: unknown }).code ?? "internal" },
    });
    await respond(
      replace(failure(unknown ? unlockUnknown(name, userMessage(cause)) : userMessage(error))),
    );
  } finally {
    unlocking.delete(name);
  }
}

/** GitLab did not answer the unlock, and the lock could not be read again either. */
class UnlockOutcomeUnknown extends Error {
  constructor(cause: unknown) {
    super("the unlock's outcome is unknown", { cause });
  }
}

/**
 * Removes the lock taken at `lockedAt`. When GitLab's answer is lost (a timeout, a dropped
 * connection, a 5xx), the lock is read again: gone (or another one) means GitLab did remove it;
 * still there, the original failure stands; unreadable, the outcome is unknown.
 */
async function removeLock(
  gitlab: GitlabPort,
  name: string,
  lockedAt: string,
  log: Logger,
): Promise<void> {
  try {
    await gitlab.unlockTerraformState(name);
  } catch (error) {
    if (gitlabRefused(error)) throw error;
    log.warn({ err: error, state: name }, "no answer to the unlock; reading the lock again");
    const current = await findState(gitlab, name).then(
      ({ state }) => lockedState(state),
      (readError: unknown) => {
        log.warn({ err: readError, state: name }, "could not read the lock again either");
        throw new UnlockOutcomeUnknown(error);
      },
    );
    if (current?.lockedAt === lockedAt) throw error;
  }
}

/**
 * After GitLab accepted the unlock: reads the lock again, writes the audit log, and says what
 * to tell the admin and whether to tell the channel. A failed read does not hide the unlock.
 */
async function confirmUnlock(
  deps: Pick<UnlockDeps, "store" | "gitlab">,
  locked: TerraformState & { lockedAt: string },
  actor: string,
  log: Logger,
): Promise<{ reply: Reply; tellChannel: boolean }> {
  const name = locked.name;
  const detail = { state: name, holder: locked.lockedBy, lockedAt: locked.lockedAt };
  let after: (TerraformState & { lockedAt: string }) | undefined;
  try {
    after = lockedState((await findState(deps.gitlab, name)).state);
  } catch (error) {
    log.warn({ err: error, state: name }, "unlocked, but could not read the lock again");
    deps.store.audit({
      requestId: null,
      actor,
      action: "unlocked",
      detail: { ...detail, verified: false },
    });
    return {
      reply: failure(
        `GitLab accepted the unlock of \`${name}\`, but vmbot could not read the state again to confirm it: ${userMessage(error)}`,
      ),
      tellChannel: true,
    };
  }
  if (after !== undefined && after.lockedAt !== locked.lockedAt) {
    deps.store.audit({
      requestId: null,
      actor,
      action: "unlocked",
      detail: { ...detail, relockedAt: after.lockedAt },
    });
    log.warn({ state: name }, "state unlocked, and locked again at once");
    return { reply: stillLocked(name), tellChannel: true };
  }
  if (after !== undefined) {
    deps.store.audit({ requestId: null, actor, action: "unlock_failed", detail });
    log.warn({ state: name }, "GitLab accepted the unlock, but the same lock is still there");
    return {
      reply: failure(
        `GitLab accepted the unlock, but \`${name}\` is still locked by the same holder. Try again, or remove the lock in GitLab (Operate → Terraform states).`,
      ),
      tellChannel: false,
    };
  }
  deps.store.audit({ requestId: null, actor, action: "unlocked", detail });
  log.info({ state: name, holder: locked.lockedBy }, "force-unlocked a Terraform state");
  return { reply: unlocked(name), tellChannel: true };
}

const PendingUnlockSchema = z.object({
  state: z.string().regex(STATE_NAME),
  lockedAt: z.string().min(1),
  holder: z.string().nullable(),
  user: z.string(),
  channel: z.string().nullable(),
});

/**
 * Unlocks a crash interrupted: the admin confirmed one particular lock. If that lock is still
 * there, it is removed as confirmed; if it is gone, the unlock happened (or someone else did
 * it). Either way the audit log and the channel are told once.
 */
export async function resumeUnlocks(
  deps: Pick<UnlockDeps, "store" | "gitlab" | "effects" | "log" | "now"> & {
    client: ButtonArgs["client"];
  },
): Promise<void> {
  for (const effect of deps.store.pendingEffects()) {
    if (!effect.subject.startsWith("unlock:")) continue;
    const pending = PendingUnlockSchema.safeParse(effect.intent);
    if (!pending.success) {
      deps.store.complete(effect.subject, effect.step, { abandoned: "unreadable intent" });
      continue;
    }
    const { state: name, lockedAt, holder, user, channel } = pending.data;
    const log = deps.log.child({ command: "unlock", state: name });
    try {
      const result = await deps.effects.once<UnlockedResult>(effect.subject, effect.step, {
        result: UnlockedResultSchema,
        reconcile: async () => {
          const current = lockedState((await findState(deps.gitlab, name)).state);
          return current?.lockedAt === lockedAt ? undefined : { gone: true };
        },
        act: async () => {
          await removeLock(deps.gitlab, name, lockedAt, log);
          return {};
        },
      });
      const locked = { name, lockedAt, lockedBy: holder };
      if (result.gone === true) {
        deps.store.audit({
          requestId: null,
          actor: user,
          action: "unlocked",
          detail: { state: name, holder, lockedAt, foundAfterRestart: true },
        });
      } else {
        await confirmUnlock(deps, locked, user, log);
      }
      if (channel !== null) {
        await deps.client.chat
          .postMessage({ channel, ...unlockedNotice(user, locked, deps.now?.() ?? new Date()) })
          .catch((error: unknown) => {
            log.warn({ err: error }, "could not tell the channel about a resumed unlock");
          });
      }
    } catch (error) {
      log.warn({ err: error }, "could not finish an unlock interrupted by a restart");
    }
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
