import type { Access } from "../access.js";
import { UnlockedResultSchema, UnlockFailedSchema } from "../effect-results.js";
import type { Effects } from "../effects.js";
import { userMessage } from "../views/errors.js";
import type { Logger } from "../logger.js";
import { notAdminWords } from "../views/refusals.js";
import {
  alreadyUnlocked,
  DAMAGED_UNLOCK_BUTTON,
  failure,
  leftLocked,
  lockChanged,
  lockedStates,
  notLocked,
  stateGoneWords,
  stateMissing,
  unlockUnderWayWords,
  unlockUnknown,
  unlockedNotice,
  unlockPrompt,
  unlockWaiting,
  type Reply,
  type UnlockTarget,
} from "../views/unlock.js";
import {
  confirmUnlock,
  findState,
  lockedState,
  removalResult,
  removeLock,
  unlockFailure,
  UnlockOutcomeUnknown,
  unlockStep,
  type StatesPort,
  type UnlockStore,
} from "./lock.js";
import { resumeUnlocks } from "./recovery.js";
import { approveUnlock, type UnlockApprovalDeps } from "./approval.js";

/**
 * Unlocking Terraform state: lists the locked states, or shows one lock; force-unlocks the lock
 * an admin confirmed through GitLab's state API, checks that it is gone, writes the audit log
 * and says what to tell the channel; and finishes an unlock a crash interrupted. Admins only,
 * checked when the command runs and again when the button is clicked.
 */

export interface UnlockDeps {
  gitlab: StatesPort;
  store: UnlockStore;
  effects: Effects;
  access: Pick<Access, "may" | "who">;
  log: Logger;
  /** The state of VMs made before each VM had its own (TF_STATE_NAME). */
  sharedState: string;
  /** The GitLab project the states belong to, named when a state is not found. */
  project: string;
  /** Posts a message in a channel (the record of an unlock resumed after a restart). */
  announce: (channel: string, message: Reply) => Promise<void>;
  /**
   * The store and effects that finishing the unlocks a crash interrupted writes through: the
   * leader's (on PostgreSQL, fenced by its epoch); `store` and `effects` unless said.
   */
  led?: Pick<UnlockDeps, "store" | "effects" | "announce">;
  /** The policy's unlock rule and where its approvals are kept; without it, an admin unlocks alone. */
  approvals?: UnlockApprovalDeps;
  now?: () => Date;
}

/** What to answer the admin who clicked: in place of the prompt, or to them alone beside it. */
export interface UnlockAnswer {
  reply: Reply;
  inPlace: boolean;
  /** The channel's record of the unlock, when there is one to post. */
  notice?: Reply;
}

export interface UnlockService {
  /** `/vm unlock [VM or state]`: the locked states, or one state's lock with Force-unlock. */
  show(user: string, name: string | undefined): Promise<Reply>;
  /**
   * Force-unlock, once the admin confirmed `target` (undefined: the button could not be read);
   * `channel` is where the unlock is recorded.
   */
  unlock(
    user: string,
    target: UnlockTarget | undefined,
    channel: string | undefined,
  ): Promise<UnlockAnswer>;
  /** Cancel: the state stays locked (`state` is the button's, when it could be read). */
  cancel(state: string | undefined): Reply;
  /** Finishes the unlocks a crash interrupted. */
  resume(): Promise<void>;
}

type Deps = UnlockDeps & { now: () => Date };

/**
 * What `/vm unlock <name>` names: a VM vmbot made (its recorded state; a VM from before states
 * were named used the shared TF_STATE_NAME), or else a state by its own name.
 */
async function targetOf(deps: Deps, name: string): Promise<{ state: string; vm?: string }> {
  const request = (await deps.store.requestsForVm(name))[0];
  if (request === undefined) return { state: name };
  return { state: request.stateName ?? deps.sharedState, vm: name };
}

/** The locked states (one: its prompt), or the named state's lock. */
async function describe(deps: Deps, name: string | undefined): Promise<Reply> {
  const states = await deps.gitlab.terraformStates();
  if (name === undefined) {
    const locked = states.flatMap((state) => lockedState(state) ?? []);
    return locked.length === 1 && locked[0] !== undefined
      ? unlockPrompt(locked[0], deps.now())
      : lockedStates(locked, deps.project, deps.now());
  }
  const target = await targetOf(deps, name);
  const state = states.find((known) => known.name === target.state);
  const locked = lockedState(state);
  if (state === undefined) {
    return stateMissing(
      target.state,
      deps.project,
      states.map((known) => known.name),
    );
  }
  return locked === undefined
    ? notLocked(target.state)
    : unlockPrompt(locked, deps.now(), target.vm);
}

/** Removes the lock the admin saw, once (a crash in between is finished by `resume`). */
async function forceUnlock(
  deps: Deps,
  clicker: { user: string; channel: string | undefined; log: Logger },
  target: UnlockTarget,
): Promise<UnlockAnswer> {
  const { user, channel, log } = clicker;
  const name = target.state;
  // The lock may have moved on since the prompt: unlock only the one the admin saw.
  const { state } = await findState(deps.gitlab, name);
  const locked = lockedState(state);
  if (locked === undefined) {
    const reply = state === undefined ? failure(stateGoneWords(name)) : alreadyUnlocked(name);
    return { reply, inPlace: true };
  }
  if (locked.lockedAt !== target.lockedAt) return { reply: lockChanged(name), inPlace: true };
  if (deps.approvals !== undefined) {
    // The policy's unlock rule may want more than this admin's confirmation.
    const approval = await approveUnlock(deps.approvals, user, name, locked.lockedAt, deps.now());
    if (approval.kind === "waiting")
      return { reply: unlockWaiting(approval.words), inPlace: false };
  }
  const detail = { state: name, holder: locked.lockedBy, lockedAt: locked.lockedAt };
  await deps.store.audit({ requestId: null, actor: user, action: "unlock_requested", detail });
  const subject = `unlock:${name}`;
  const step = await unlockStep(deps.store, subject, locked.lockedAt);
  const removal = await deps.effects.once(subject, step, {
    result: UnlockedResultSchema,
    detail: { ...detail, user, channel: channel ?? null },
    act: async () =>
      removalResult(await removeLock(deps.gitlab, { name, lockedAt: locked.lockedAt, step }, log)),
    // The admin is told it failed: no restart removes the lock later behind their back.
    settle: (error) => Promise.resolve(unlockFailure(error)),
    failure: UnlockFailedSchema,
  });
  if (removal.gone === true || removal.changed === true) {
    // Between the check and the unlock, the lock went, or another run locked the state.
    const action = removal.changed === true ? "unlock_lock_changed" : "unlock_not_needed";
    await deps.store.audit({ requestId: null, actor: user, action, detail });
    const reply = removal.changed === true ? lockChanged(name) : alreadyUnlocked(name);
    return { reply, inPlace: true };
  }
  const outcome = await confirmUnlock(deps, locked, user, log);
  return {
    reply: outcome.reply,
    inPlace: true,
    ...(outcome.tellChannel ? { notice: unlockedNotice(user, locked, deps.now()) } : {}),
  };
}

/** A force-unlock that failed: the audit log says how, the admin is told why. */
async function unlockFailed(
  deps: Deps,
  user: string,
  name: string,
  error: unknown,
): Promise<UnlockAnswer> {
  const unknown = error instanceof UnlockOutcomeUnknown;
  const cause = unknown ? error.cause : error;
  await deps.store.audit({
    requestId: null,
    actor: user,
    action: unknown ? "unlock_unknown" : "unlock_failed",
    detail: { state: name, code: (cause as { code?: unknown }).code ?? "internal" },
  });
  const words = unknown ? unlockUnknown(name, userMessage(cause)) : userMessage(error);
  return { reply: failure(words), inPlace: true };
}

export function createUnlockService(options: UnlockDeps): UnlockService {
  const deps: Deps = { ...options, now: options.now ?? (() => new Date()) };
  /** States being unlocked by this service: a second confirmation waits its turn politely. */
  const unlocking = new Set<string>();
  const notAdmin = () => failure(notAdminWords(deps.access.who("unlock")));
  return {
    async show(user, name) {
      const log = deps.log.child({ user, command: "unlock", name });
      if (!(await deps.access.may("unlock", user))) {
        log.info("refused /vm unlock: not an admin");
        return notAdmin();
      }
      try {
        return await describe(deps, name);
      } catch (error) {
        log.warn({ err: error }, "could not read the Terraform states' locks");
        return failure(userMessage(error));
      }
    },

    async unlock(user, target, channel) {
      const log = deps.log.child({ user, command: "unlock" });
      if (!(await deps.access.may("unlock", user))) {
        log.info("refused a force-unlock: not an admin");
        return { reply: notAdmin(), inPlace: false };
      }
      if (target === undefined) {
        return { reply: failure(DAMAGED_UNLOCK_BUTTON), inPlace: true };
      }
      const name = target.state;
      if (unlocking.has(name)) {
        return { reply: failure(unlockUnderWayWords(name)), inPlace: false };
      }
      unlocking.add(name);
      try {
        return await forceUnlock(deps, { user, channel, log }, target);
      } catch (error) {
        log.warn({ err: error, state: name }, "could not force-unlock a Terraform state");
        return await unlockFailed(deps, user, name, error);
      } finally {
        unlocking.delete(name);
      }
    },

    cancel: (state) => leftLocked(state ?? deps.sharedState),

    resume: () => resumeUnlocks({ ...deps, ...deps.led }),
  };
}
