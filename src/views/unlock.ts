import type { types } from "@slack/bolt";
import type { TerraformState } from "../gitlab/gitlab.js";
import { UNLOCK_ACTIONS_BLOCK, UNLOCK_CANCEL, UNLOCK_CONFIRM } from "../ids.js";
import { escapeMrkdwn } from "../slack/mrkdwn.js";

type KnownBlock = types.KnownBlock;

export interface Reply {
  text: string;
  blocks: KnownBlock[];
}

/** What the Force-unlock button carries: the state, and the lock the admin was shown. */
export interface UnlockTarget {
  state: string;
  lockedAt: string;
}

/** `3 h 12 min`, `45 s`, `2 d 3 h`: a lock's age at a glance. */
export function age(fromIso: string, now: Date): string {
  const seconds = Math.max(0, Math.floor((now.getTime() - Date.parse(fromIso)) / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

const code = (name: string) => `\`${escapeMrkdwn(name)}\``;
const holderOf = (state: TerraformState) =>
  state.lockedBy === null ? "someone GitLab does not name" : escapeMrkdwn(state.lockedBy);
/** A time in the reader's time zone, GitLab's own text as the fallback (or alone, if unreadable). */
const when = (iso: string) => {
  const at = Date.parse(iso);
  return Number.isNaN(at)
    ? escapeMrkdwn(iso)
    : `<!date^${Math.floor(at / 1000)}^{date_short_pretty} {time}|${escapeMrkdwn(iso).replace(/\|/g, "¦")}>`;
};

const section = (text: string): KnownBlock => ({ type: "section", text: { type: "mrkdwn", text } });

export function notLocked(state: string): Reply {
  const text = `:unlock: The Terraform state ${code(state)} is not locked. Nothing to do.`;
  return { text, blocks: [section(text)] };
}

export function stateMissing(state: string, project: string, known: readonly string[]): Reply {
  const names = known.slice(0, 20).map(code).join(", ");
  const others =
    known.length === 0
      ? "It has no Terraform states yet."
      : `Its states: ${names}${known.length > 20 ? ` and ${known.length - 20} more` : ""}.`;
  const text = `GitLab has no Terraform state ${code(state)} in ${code(project)}. ${others}`;
  return { text, blocks: [section(text)] };
}

/**
 * The lock, and a Force-unlock button behind Slack's confirmation dialog that names the
 * state, the holder, the lock's age and what a force-unlock risks.
 */
export function unlockPrompt(
  state: TerraformState & { lockedAt: string },
  now: Date,
  vm?: string,
): Reply {
  const holder = holderOf(state);
  const held = age(state.lockedAt, now);
  const whose = vm === undefined ? "" : ` (the VM ${code(vm)}'s)`;
  const text = `:lock: The Terraform state ${code(state.name)}${whose} is locked by *${holder}* since ${when(state.lockedAt)} (${held} ago).`;
  const target: UnlockTarget = { state: state.name, lockedAt: state.lockedAt };
  return {
    text: `The Terraform state ${escapeMrkdwn(state.name)} is locked by ${escapeMrkdwn(state.lockedBy ?? "an unknown holder")} (${held}).`,
    blocks: [
      section(text),
      {
        type: "context",
        elements: [
          {
            type: "mrkdwn",
            text: "A lock means a Terraform run is writing the state, or one died without releasing it. Force-unlock only when no pipeline is running against this state.",
          },
        ],
      },
      {
        type: "actions",
        block_id: UNLOCK_ACTIONS_BLOCK,
        elements: [
          {
            type: "button",
            action_id: UNLOCK_CONFIRM,
            style: "danger",
            text: { type: "plain_text", text: "Force-unlock", emoji: true },
            value: JSON.stringify(target),
            confirm: {
              title: { type: "plain_text", text: `Force-unlock ${state.name}?`.slice(0, 100) },
              text: {
                type: "plain_text",
                text: `${state.lockedBy ?? "The holder"}'s lock is ${held} old. If a job still runs against ${state.name}, a second run can write over it and corrupt the state.`.slice(
                  0,
                  300,
                ),
              },
              confirm: { type: "plain_text", text: "Force-unlock" },
              deny: { type: "plain_text", text: "Keep the lock" },
              style: "danger",
            },
          },
          {
            type: "button",
            action_id: UNLOCK_CANCEL,
            text: { type: "plain_text", text: "Cancel", emoji: true },
            value: JSON.stringify(target),
          },
        ],
      },
    ],
  };
}

/** How many locked states `/vm unlock` lists by name. */
const LISTED_LOCKS = 15;

/**
 * `/vm unlock` with no name: the project's locked states, oldest lock first, or that none is.
 * A single locked state is answered with its prompt (see the command).
 */
export function lockedStates(
  locked: readonly (TerraformState & { lockedAt: string })[],
  project: string,
  now: Date,
): Reply {
  if (locked.length === 0) {
    const text = `:unlock: No Terraform state in ${code(project)} is locked. Nothing to do.`;
    return { text, blocks: [section(text)] };
  }
  const oldest = [...locked].sort((a, b) => Date.parse(a.lockedAt) - Date.parse(b.lockedAt));
  const lines = oldest
    .slice(0, LISTED_LOCKS)
    .map(
      (state) =>
        `• ${code(state.name)}: locked by *${holderOf(state)}* since ${when(state.lockedAt)} (${age(state.lockedAt, now)})`,
    );
  const more = locked.length - LISTED_LOCKS;
  const text = `:lock: ${locked.length} Terraform states in ${code(project)} are locked:`;
  return {
    text: `${locked.length} Terraform states in ${project} are locked.`,
    blocks: [
      section([text, ...lines, ...(more > 0 ? [`…and ${more} more.`] : [])].join("\n")),
      {
        type: "context",
        elements: [
          {
            type: "mrkdwn",
            text: "Run `/vm unlock <VM or state>` to see one lock and force-unlock it.",
          },
        ],
      },
    ],
  };
}

export function leftLocked(state: string): Reply {
  const text = `:lock: Left the Terraform state ${code(state)} locked. Nothing changed.`;
  return { text, blocks: [section(text)] };
}

export function lockChanged(state: string): Reply {
  const text = `The lock on ${code(state)} is no longer the one you were shown, so vmbot did not unlock it. Run \`/vm unlock ${escapeMrkdwn(state)}\` again to see who holds it now.`;
  return { text, blocks: [section(text)] };
}

export function alreadyUnlocked(state: string): Reply {
  const text = `:unlock: The Terraform state ${code(state)} was unlocked meanwhile. Nothing to do.`;
  return { text, blocks: [section(text)] };
}

export function stillLocked(state: string): Reply {
  const text = `:warning: GitLab accepted the unlock, but ${code(state)} is locked again, probably by a new Terraform run. Check the project's running pipelines.`;
  return { text, blocks: [section(text)] };
}

export function unlocked(state: string): Reply {
  const text = `:unlock: Unlocked the Terraform state ${code(state)}; GitLab confirms it is free. The channel has been told.`;
  return { text, blocks: [section(text)] };
}

/** The channel's record: who unlocked which state, whose lock it was, and how old. */
export function unlockedNotice(
  admin: string,
  state: TerraformState & { lockedAt: string },
  now: Date,
): Reply {
  const text = `:unlock: <@${admin}> force-unlocked the Terraform state ${code(state.name)}, locked by *${holderOf(state)}* since ${when(state.lockedAt)} (${age(state.lockedAt, now)}).`;
  return { text, blocks: [section(text)] };
}

export function failure(message: string): Reply {
  const text = `:warning: ${message}`;
  return { text, blocks: [section(text)] };
}

/** An unlock a restart interrupted, which failed when vmbot finished it: the channel is told. */
export function resumedUnlockFailed(admin: string, state: string, reason: string): Reply {
  return failure(
    `The force-unlock of ${code(state)} that <@${admin}> confirmed before vmbot restarted did not go through: ${reason} Run \`/vm unlock ${escapeMrkdwn(state)}\` to see the lock, and confirm again to retry.`,
  );
}

/** GitLab did not answer the unlock, nor the read that followed: say so, and how to find out. */
export function unlockUnknown(state: string, reason: string): string {
  return `GitLab did not answer the unlock of ${code(state)}, nor when vmbot read the lock again, so vmbot cannot tell whether it was removed. Run \`/vm unlock ${escapeMrkdwn(state)}\` in a minute to see. ${reason}`;
}

export const UNLOCK_USAGE =
  "Usage: `/vm unlock [VM or state]`. A VM or state name has letters, digits, '.', '_' or '-'; without one, vmbot lists the locked states.";

/** A Force-unlock or Cancel button whose value vmbot cannot read. */
export const DAMAGED_UNLOCK_BUTTON = "This button is damaged. Run `/vm unlock` again.";

export function stateGoneWords(state: string): string {
  return `GitLab no longer has a Terraform state \`${state}\`.`;
}

export function unlockUnderWayWords(state: string): string {
  return `An unlock of \`${state}\` is already under way.`;
}

/** The DELETE was accepted and the state could not be read again. */
export function unlockUnconfirmedWords(state: string, why: string): string {
  return `GitLab accepted the unlock of \`${state}\`, but vmbot could not read the state again to confirm it: ${why}`;
}

export function sameHolderWords(state: string): string {
  return `GitLab accepted the unlock, but \`${state}\` is still locked by the same holder. Try again, or remove the lock in GitLab (Operate → Terraform states).`;
}

/** To an admin whose confirmation is one of the approvals the policy's unlock rule needs. */
export function unlockWaiting(words: string): Reply {
  const text = `:busts_in_silhouette: ${words}`;
  return { text, blocks: [section(text)] };
}
