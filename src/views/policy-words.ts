/**
 * The sentences a policy decision shows. Some appear under a form's field, which shows text as it
 * is (no mentions), so people are pointed to the policy's groups by name.
 */

export interface UsageWords {
  vms: number;
  cores: number;
  memoryGib: number;
  diskGib: number;
}

const list = (names: readonly string[]) =>
  names.length <= 1
    ? (names[0] ?? "")
    : `${names.slice(0, -1).join(", ")} or ${names.at(-1) ?? ""}`;

/** "someone in platform or security" */
export const askWords = (groups: readonly string[]) =>
  groups.length === 0 ? "vmbot's admins" : `someone in ${list(groups)}`;

export const plural = (n: number, one: string, many = `${one}s`) =>
  `${String(n)} ${n === 1 ? one : many}`;

export const gib = (n: number) => `${String(Math.round(n * 10) / 10)} GiB`;

export function notInRoleWords(role: "requester" | "approver" | "admin", groups: string[]) {
  const what =
    role === "requester"
      ? "ask for VMs"
      : role === "approver"
        ? "approve or reject plans"
        : "do this (admins only)";
  return `You are not among the people who may ${what}: the policy lets ${groups.length === 0 ? "nobody" : list(groups)} do it.`;
}

export const noAllowanceWords = (admins: readonly string[]) =>
  `No rule of the policy lets you ask for VMs. Ask ${askWords(admins)} to add you.`;

export const templateWords = (template: string, allowed: readonly string[], admins: string[]) =>
  `You may not ask for the ${template} template: you may use ${list(allowed)}. Ask ${askWords(admins)} if you need it.`;

export const nodeWords = (node: string, allowed: readonly string[], admins: string[]) =>
  `You may not place VMs on ${node}: you may use ${list(allowed)}. Ask ${askWords(admins)} if you need it.`;

export const sizeWords = (what: string, asked: string, limit: string, admins: string[]) =>
  `${asked} is more ${what} than you may ask for in one VM: your limit is ${limit}. Ask ${askWords(admins)} if you need more.`;

export function quotaWords(
  scope: string,
  limit: string,
  held: UsageWords,
  after: string,
  admins: string[],
) {
  const holding = `${plural(held.vms, "VM")} with ${plural(held.cores, "core")}, ${gib(held.memoryGib)} of memory and ${gib(held.diskGib)} of disk`;
  return `Over quota: ${scope} may hold at most ${limit} in all, and ${scope === "you" ? "you hold" : "it holds"} ${holding} (requests on their way included); this VM would make it ${after}. Destroy a VM you no longer need, or ask ${askWords(admins)}.`;
}

export const policyLateWords =
  "Slack did not confirm your groups in time, so vmbot could not check this request against the policy. Nothing was created: please press Create again.";

/** Under a plan's buttons: "Approvals: 1 of 2 from platform, 0 of 1 from security · so far <@U1>". */
export function approvalsSoFarWords(approvals: { tally: string; by: string[]; notes: string[] }) {
  const by =
    approvals.by.length === 0
      ? ""
      : ` · approved so far by ${approvals.by.map((u) => `<@${u}>`).join(", ")}`;
  const notes = approvals.notes.length === 0 ? "" : `\n${approvals.notes.join("\n")}`;
  return `:busts_in_silhouette: Approvals: ${approvals.tally}${by}${notes}`;
}

/** What is approved: a plan (its apply job plays when met), a destroy (its destroy job), or a lease extension. */
export type ApprovedThing = "plan" | "destroy" | "extension";

const THIS: Record<ApprovedThing, string> = {
  plan: "this plan",
  destroy: "this destroy",
  extension: "this lease extension",
};
const THEN: Record<ApprovedThing, string> = {
  plan: "the apply starts",
  destroy: "the destroy job starts",
  extension: "the lease moves",
};

export const approvalRecordedWords = (tally: string, what: ApprovedThing = "plan") =>
  `Your approval is recorded. ${THIS[what].replace(/^t/, "T")} needs ${tally}; ${THEN[what]} when the rest approve.`;

export const approvalNotCountingWords = (tally: string, what: ApprovedThing = "plan") =>
  `Your approval does not add to what ${THIS[what]} needs (${tally}): another approval from the same group, or from a group the rule does not ask for, does not count.`;

export const earlierPlanResetWords =
  "The plan was run again: approvals given on the earlier plan were reset, this plan needs its own.";

export const lapsedWords = (users: readonly string[], after: string) =>
  `${users.map((u) => `<@${u}>`).join(", ")}: approval older than ${after} lapsed and was removed.`;

/** To an admin whose Force-unlock is one of several approvals the policy's unlock rule needs. */
export const unlockApprovalWords = (state: string, tally: string, counts: boolean) =>
  counts
    ? `Your approval to force-unlock \`${state}\` is recorded: ${tally}. The lock is removed when the rest approve: each runs \`/vm unlock ${state}\` and confirms.`
    : `Your approval does not add to what force-unlocking \`${state}\` needs (${tally}): another approval from the same group, or from a group the rule does not ask for, does not count.`;
