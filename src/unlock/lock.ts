import { UnlockFailedSchema, type UnlockedResult } from "../effect-results.js";
import type { Effects } from "../effects.js";
import { userMessage } from "../views/errors.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { GitlabPort, StateLock, TerraformState } from "../gitlab/gitlab.js";
import type { Logger } from "../logger.js";
import type { AsyncStore } from "../store/async.js";
import {
  failure,
  sameHolderWords,
  stillLocked,
  unlockUnconfirmedWords,
  unlocked,
  type Reply,
} from "../views/unlock.js";

/** What the unlock needs of GitLab: the states with their locks, a lock's ID, and removing one. */
export type StatesPort = Pick<
  GitlabPort,
  "terraformStates" | "readTerraformStateLock" | "unlockTerraformState"
>;
/**
 * What the unlock needs of the store: the audit log, the requests' states, its effects in the
 * journal.
 */
export type UnlockStore = Pick<
  AsyncStore,
  "audit" | "requestsForVm" | "pendingEffects" | "complete" | "effect"
>;
export type { Effects };

export type Lock = TerraformState & { lockedAt: string };

export function lockedState(state: TerraformState | undefined): Lock | undefined {
  return state?.lockedAt === null || state === undefined
    ? undefined
    : { ...state, lockedAt: state.lockedAt };
}

export async function findState(gitlab: StatesPort, name: string) {
  const states = await gitlab.terraformStates();
  return { states, state: states.find((state) => state.name === name) };
}

/** GitLab did not answer the unlock, and the lock could not be read again either. */
export class UnlockOutcomeUnknown extends Error {
  constructor(cause: unknown) {
    super("the unlock's outcome is unknown", { cause });
  }
}

/** What an unlock that failed records: see `UnlockFailedSchema`. */
export function unlockFailure(error: unknown): { failed: string } {
  if (error instanceof UnlockOutcomeUnknown) return { failed: "unknown" };
  const code = (error as { code?: unknown } | undefined)?.code;
  return { failed: typeof code === "string" ? code : "internal" };
}

/**
 * The journal's step for an unlock of the lock taken at `lockedAt`: the lock's own, or after
 * unlocks of it that failed (each recorded, and told), the next attempt's, so that an admin who
 * confirms again is not answered with the failure before.
 */
export async function unlockStep(
  store: Pick<UnlockStore, "effect">,
  subject: string,
  lockedAt: string,
): Promise<string> {
  for (let attempt = 1; ; attempt += 1) {
    const step = attempt === 1 ? `unlock:${lockedAt}` : `unlock:${lockedAt}:${attempt}`;
    const recorded = await store.effect(subject, step);
    const failed =
      recorded?.state === "done" && UnlockFailedSchema.safeParse(recorded.result).success;
    if (!failed) return step;
  }
}

/**
 * The ID the unlock's step reads a lock's ID under (`readTerraformStateLock`), and holds the
 * state by for that moment when it was free: its own, so that a restart can release what a crash
 * left held.
 */
export const probeId = (step: string) => `vmbot-${step}`;

/** How removing the lock an admin confirmed ended. */
export type LockRemoval =
  /** GitLab removed it. */
  | "removed"
  /** It was gone when vmbot came to remove it: nothing removed. */
  | "gone"
  /** Another lock holds the state now: it is left, as it is not the one the admin saw. */
  | "changed";

/** What the unlock's step records of a removal. */
export function removalResult(removal: LockRemoval): UnlockedResult {
  if (removal === "gone") return { gone: true };
  return removal === "changed" ? { changed: true } : {};
}

/**
 * Whether the lock endpoint's `Created` and GraphQL's `lockedAt` name one moment: to the second,
 * as GraphQL writes it (`2026-01-05T12:00:00Z`), where the endpoint gives milliseconds.
 */
function sameInstant(created: string | null, lockedAt: string): boolean {
  if (created === null) return false;
  return Math.floor(Date.parse(created) / 1000) === Math.floor(Date.parse(lockedAt) / 1000);
}

/**
 * Releases a lock the step's own reading took (a free state), if it holds the state still; a
 * lock of another ID is left, and a failure only logged: the reading's lock then stays until a
 * restart's recovery or an admin's unlock. `locked`: the caller has just read the state locked.
 */
export async function releaseProbe(
  gitlab: StatesPort,
  name: string,
  step: string,
  log: Logger,
  locked = false,
): Promise<void> {
  try {
    // A state gone, or free, holds no lock of the reading's; and GitLab's unlock makes a missing
    // state (`find_or_create`): releasing there would leave an empty state behind.
    if (!locked && lockedState((await findState(gitlab, name)).state) === undefined) return;
    await gitlab.unlockTerraformState(name, probeId(step));
  } catch (error) {
    log.warn({ err: error, state: name }, "could not release the lock taken to read the lock");
  }
}

/**
 * Removes the lock taken at `lockedAt`, and no other: its ID is read first (GraphQL does not
 * show it), and the unlock names it, so that a lock taken by a new run since the admin's check
 * is left to that run. When the state was free at the reading, the reading's own lock is released
 * at once. When GitLab's answer to the unlock is lost (a timeout, a dropped connection, a 5xx),
 * the lock is read again: gone (or another one) means GitLab did remove it; still there, the
 * original failure stands; unreadable, the outcome is unknown.
 */
export async function removeLock(
  gitlab: StatesPort,
  target: { name: string; lockedAt: string; step: string },
  log: Logger,
): Promise<LockRemoval> {
  const { name, lockedAt, step } = target;
  // Read first: GitLab's lock endpoint makes a state that is missing (deleted since the admin's
  // check), and the reading of the ID would leave it behind, empty.
  const seen = lockedState((await findState(gitlab, name)).state);
  if (seen === undefined) return "gone";
  if (seen.lockedAt !== lockedAt) return "changed";
  let lock: StateLock;
  try {
    lock = await gitlab.readTerraformStateLock(name, probeId(step));
  } catch (error) {
    // The reading may have taken the lock with its answer lost.
    await releaseProbe(gitlab, name, step, log);
    throw error;
  }
  if (lock.taken) {
    await gitlab.unlockTerraformState(name, probeId(step));
    return "gone";
  }
  if (!sameInstant(lock.created, lockedAt)) return "changed";
  try {
    if (await gitlab.unlockTerraformState(name, lock.id)) return "removed";
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
    return "removed";
  }
  // GitLab refused: the state holds no lock of that ID now.
  const current = lockedState((await findState(gitlab, name)).state);
  return current === undefined ? "gone" : "changed";
}

/**
 * After GitLab accepted the unlock: reads the lock again, writes the audit log, and says what
 * to tell the admin and whether to tell the channel. A failed read does not hide the unlock.
 */
export async function confirmUnlock(
  deps: { store: UnlockStore; gitlab: StatesPort },
  locked: Lock,
  actor: string,
  log: Logger,
): Promise<{ reply: Reply; tellChannel: boolean }> {
  const name = locked.name;
  const detail = { state: name, holder: locked.lockedBy, lockedAt: locked.lockedAt };
  let after: Lock | undefined;
  try {
    after = lockedState((await findState(deps.gitlab, name)).state);
  } catch (error) {
    log.warn({ err: error, state: name }, "unlocked, but could not read the lock again");
    await deps.store.audit({
      requestId: null,
      actor,
      action: "unlocked",
      detail: { ...detail, verified: false },
    });
    return {
      reply: failure(unlockUnconfirmedWords(name, userMessage(error))),
      tellChannel: true,
    };
  }
  if (after !== undefined && after.lockedAt !== locked.lockedAt) {
    await deps.store.audit({
      requestId: null,
      actor,
      action: "unlocked",
      detail: { ...detail, relockedAt: after.lockedAt },
    });
    log.warn({ state: name }, "state unlocked, and locked again at once");
    return { reply: stillLocked(name), tellChannel: true };
  }
  if (after !== undefined) {
    await deps.store.audit({ requestId: null, actor, action: "unlock_failed", detail });
    log.warn({ state: name }, "GitLab accepted the unlock, but the same lock is still there");
    return {
      reply: failure(sameHolderWords(name)),
      tellChannel: false,
    };
  }
  await deps.store.audit({ requestId: null, actor, action: "unlocked", detail });
  log.info({ state: name, holder: locked.lockedBy }, "force-unlocked a Terraform state");
  return { reply: unlocked(name), tellChannel: true };
}
