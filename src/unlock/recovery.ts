import { z } from "zod";
import {
  UnlockedResultSchema,
  UnlockFailedSchema,
  type UnlockedResult,
} from "../effect-results.js";
import type { Effects } from "../effects.js";
import type { Logger } from "../logger.js";
import { FencedError } from "../store/postgres/leader.js";
import { STATE_NAME } from "../vm/state-name.js";
import { userMessage } from "../views/errors.js";
import { resumedUnlockFailed, unlockedNotice, type Reply } from "../views/unlock.js";
import {
  confirmUnlock,
  findState,
  lockedState,
  releaseProbe,
  removalResult,
  removeLock,
  unlockFailure,
  type StatesPort,
  type UnlockStore,
} from "./lock.js";

/** What an unlock's effect records as its intent: the lock confirmed, by whom, where to say so. */
export const PendingUnlockSchema = z.object({
  state: z.string().regex(STATE_NAME),
  lockedAt: z.string().min(1),
  holder: z.string().nullable(),
  user: z.string(),
  channel: z.string().nullable(),
});

export interface RecoveryDeps {
  store: UnlockStore;
  gitlab: StatesPort;
  effects: Effects;
  log: Logger;
  now: () => Date;
  /** Posts a message in a channel. */
  announce: (channel: string, message: Reply) => Promise<void>;
}

/**
 * Unlocks a crash interrupted: the admin confirmed one particular lock. If that lock is still
 * there, it is removed as confirmed; if it is gone, the unlock happened (or someone else did
 * it). Either way the audit log and the channel are told once.
 */
export async function resumeUnlocks(deps: RecoveryDeps): Promise<void> {
  for (const effect of await deps.store.pendingEffects()) {
    if (!effect.subject.startsWith("unlock:")) continue;
    const pending = PendingUnlockSchema.safeParse(effect.intent);
    if (!pending.success) {
      await deps.store.complete(effect.subject, effect.step, { abandoned: "unreadable intent" });
      continue;
    }
    const log = deps.log.child({ command: "unlock", state: pending.data.state });
    try {
      await resumeOne(deps, effect, pending.data, log);
    } catch (error) {
      // Another replica leads now: it finishes what is left, and this one writes nothing more.
      if (error instanceof FencedError) throw error;
      log.warn({ err: error }, "could not finish an unlock interrupted by a restart");
    }
  }
}

/** An interrupted unlock that failed when finished: the audit log and the channel say so. */
async function resumeFailed(
  deps: RecoveryDeps,
  pending: z.infer<typeof PendingUnlockSchema>,
  error: unknown,
  log: Logger,
): Promise<void> {
  const { state, lockedAt, holder, user, channel } = pending;
  log.warn({ err: error }, "an unlock interrupted by a restart failed when finished");
  await deps.store.audit({
    requestId: null,
    actor: user,
    action: "unlock_failed",
    detail: { state, holder, lockedAt, foundAfterRestart: true, ...unlockFailure(error) },
  });
  if (channel === null) return;
  await deps
    .announce(channel, resumedUnlockFailed(user, state, userMessage(error)))
    .catch((announceError: unknown) => {
      log.warn({ err: announceError }, "could not tell the channel about a failed resumed unlock");
    });
}

async function resumeOne(
  deps: RecoveryDeps,
  effect: { subject: string; step: string },
  pending: z.infer<typeof PendingUnlockSchema>,
  log: Logger,
): Promise<void> {
  const { state: name, lockedAt, holder, user, channel } = pending;
  // The unlock's own failure, once recorded: anything else (the store) is left for the next start.
  let failed: { error: unknown } | undefined;
  const result = await deps.effects
    .once<UnlockedResult>(effect.subject, effect.step, {
      result: UnlockedResultSchema,
      reconcile: async () => {
        const current = lockedState((await findState(deps.gitlab, name)).state);
        if (current?.lockedAt === lockedAt) return undefined;
        // Gone, or another lock: perhaps the reading of the lock's ID held the state when the
        // crash came, which is given back (a lock of another ID is left).
        if (current !== undefined) await releaseProbe(deps.gitlab, name, effect.step, log, true);
        return { gone: true };
      },
      act: async () =>
        removalResult(await removeLock(deps.gitlab, { name, lockedAt, step: effect.step }, log)),
      // Tried once more after the restart, and told: not again at every restart after it.
      settle: (error) => {
        failed = { error };
        return Promise.resolve(unlockFailure(error));
      },
      failure: UnlockFailedSchema,
    })
    .catch((error: unknown) => {
      if (failed === undefined) throw error;
      return undefined;
    });
  if (failed !== undefined) {
    await resumeFailed(deps, pending, failed.error, log);
    return;
  }
  if (result === undefined) return;
  const locked = { name, lockedAt, lockedBy: holder };
  if (result.gone === true || result.changed === true) {
    await deps.store.audit({
      requestId: null,
      actor: user,
      action: result.changed === true ? "unlock_lock_changed" : "unlocked",
      detail: { state: name, holder, lockedAt, foundAfterRestart: true },
    });
    // Another run locked the state in between: its lock is left, and nobody is told of an unlock.
    if (result.changed === true) return;
  } else {
    await confirmUnlock(deps, locked, user, log);
  }
  if (channel !== null) {
    await deps
      .announce(channel, unlockedNotice(user, locked, deps.now()))
      .catch((error: unknown) => {
        log.warn({ err: error }, "could not tell the channel about a resumed unlock");
      });
  }
}
