/**
 * Each VM's Terraform state name, from TF_STATE_NAME_TEMPLATE: `vm-{vm_name}` gives every VM a
 * state of its own, so that a plan for one VM never sees (and never replaces) another; a fixed
 * name such as `general` keeps one state shared by every VM, as before.
 */

/** GitLab's state names: letters, digits, '.', '_' and '-', at most 255 of them. */
export const STATE_NAME = /^[\w.-]{1,255}$/;

const PLACEHOLDER = /\{([^{}]*)\}/g;
/** The longest VM name: a hostname label. */
const MAX_VM_NAME = 63;

/**
 * Why a template cannot name states, in words for the person who set it; undefined when it can.
 * Checked at start-up, so no request ever meets a bad template.
 */
export function stateNameTemplateProblem(template: string): string | undefined {
  for (const match of template.matchAll(PLACEHOLDER)) {
    if (match[1] !== "vm_name") {
      return `has {${match[1] ?? ""}}, and the only placeholder is {vm_name}`;
    }
  }
  const literal = template.replace(PLACEHOLDER, "");
  if (/[{}]/.test(literal)) return "has a { or } that opens or closes no {vm_name}";
  const longest = stateNameFor(template, "x".repeat(MAX_VM_NAME));
  if (!STATE_NAME.test(longest)) {
    return longest.length > 255
      ? "makes state names longer than GitLab's 255 characters"
      : "must make state names of letters, digits, '.', '_' or '-' (with {vm_name} for the VM's name)";
  }
  return undefined;
}

/** The state name the template gives a VM. */
export function stateNameFor(template: string, vmName: string): string {
  return template.replace(PLACEHOLDER, () => vmName);
}

/** Whether every VM shares one state: the template names no VM. */
export function sharedState(template: string): boolean {
  return !template.includes("{vm_name}");
}
