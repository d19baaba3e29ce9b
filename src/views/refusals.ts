/**
 * The answers to someone who may not do what they tried: they name who may (people as Slack
 * mentions, user groups by their handle), never a setting's name.
 */

const USER = /^[UW][A-Z0-9]+$/;
const GROUP = /^S[A-Z0-9]+$/;
/** More names than this make a refusal hard to read: the rest are counted. */
const MAX_NAMED = 5;

/** "<!subteam^S1>, <@U1> or <@U2>", the first few, then how many more. */
export function whoMay(ids: readonly string[]): string {
  const names = ids.flatMap((id) =>
    GROUP.test(id) ? [`<!subteam^${id}>`] : USER.test(id) ? [`<@${id}>`] : [],
  );
  if (names.length === 0) return "nobody yet";
  const shown = names.slice(0, MAX_NAMED);
  const more = names.length - shown.length;
  if (more > 0) return `${shown.join(", ")} or ${more} more`;
  if (shown.length === 1) return shown[0] ?? "";
  return `${shown.slice(0, -1).join(", ")} or ${shown.at(-1) ?? ""}`;
}

export function notApproverWords(
  verb: "approve" | "reject",
  vmName: string,
  approvers: readonly string[],
): string {
  return `Only the approvers (${whoMay(approvers)}) may ${verb} plans. Ask one of them to look at ${vmName}.`;
}

/** At `/vm create`, in a message where mentions show as names. */
export function notRequesterWords(requesters: readonly string[]): string {
  return `Only the people who may ask for VMs (${whoMay(requesters)}) can use /vm create, and you are not among them. Ask the team that runs vmbot to add you.`;
}

/** Under a form's field, which shows text as it is: no mentions. */
export const NOT_REQUESTER_FIELD =
  "You are not among the people who may ask for VMs. Ask the team that runs vmbot to add you.";

export function capacityRefusedWords(requesters: readonly string[]): string {
  return `Capacity is shown to the people who may ask for VMs (${whoMay(requesters)}), and you are not among them.`;
}

export function listRefusedWords(requesters: readonly string[]): string {
  return `The VM list is shown to the people who may ask for VMs (${whoMay(requesters)}), and you are not among them.`;
}

export function notAdminWords(admins: readonly string[]): string {
  return `Only vmbot's admins (${whoMay(admins)}) may unlock Terraform state. Ask one of them if the state is stuck.`;
}

/** Slack's user-group lookup did not answer within the command's budget: nothing was decided. */
export function notConfirmedWords(what: "list" | "destroy"): string {
  return what === "list"
    ? "Slack did not confirm in time that you may see the VM list. Please try again."
    : "Slack did not confirm in time that you may destroy this VM. Please try again.";
}
