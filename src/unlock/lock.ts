import { UnlockFailedSchema } from "../effect-results.js";
import type { Effects } from "../effects.js";
import { userMessage } from "../views/errors.js";
import { gitlabRefused } from "../gitlab/errors.js";
import type { GitlabPort, TerraformState } from "../gitlab/gitlab.js";
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

/** What the unlock needs of GitLab: the states with their locks, and removing one. */
export type StatesPort = Pick<GitlabPort, "terraformStates" | "unlockTerraformState">;
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
 * Removes the lock taken at `lockedAt`. When GitLab's answer is lost (a timeout, a dropped
 * connection, a 5xx), the lock is read again: gone (or another one) means GitLab did remove it;
 * still there, the original failure stands; unreadable, the outcome is unknown.
 */
export async function removeLock(
  gitlab: StatesPort,
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
