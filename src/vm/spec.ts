import { z } from "zod";
import type { VmTemplate } from "../config.js";
import type { CreateField } from "../ids.js";
import { inSubnet, isIpv4, parseIpv4Cidr, type Ipv4Cidr } from "../net/ipv4.js";
import { wholeNumberWords } from "../views/numbers.js";

/** A validated VM request: what the pipeline is asked to build. */
export const VmSpecSchema = z.object({
  name: z.string(),
  node: z.string(),
  templateId: z.number().int(),
  templateName: z.string(),
  cores: z.number().int(),
  memoryMb: z.number().int(),
  diskGb: z.number().int(),
  /** Address with prefix length, e.g. `192.168.1.50/24`. */
  ip: z.string(),
  gateway: z.string(),
  dns: z.string(),
  /** 0 lets Proxmox choose. */
  vmId: z.number().int(),
  /** 0 is untagged. */
  vlanId: z.number().int(),
  /**
   * The lease chosen on the form, in milliseconds (null: never); absent on requests made before
   * the form offered a choice, which get VM_LEASE_DEFAULT. Not a pipeline input.
   */
  leaseMs: z.number().int().positive().nullable().optional(),
});
export type VmSpec = z.infer<typeof VmSpecSchema>;

/** The form as submitted: each field's raw text, undefined when left blank. */
export type VmFormValues = Partial<Record<CreateField, string>>;

export interface FormOptions {
  nodes: readonly string[];
  templates: readonly VmTemplate[];
}

export type FormResult =
  | { ok: true; spec: VmSpec; notes: string[] }
  | { ok: false; errors: Partial<Record<CreateField, string>> };

export const LIMITS = {
  nameLength: 63,
  prefix: { min: 8, max: 30 },
  cores: { min: 1, max: 128 },
  memoryMb: { min: 512, max: 1_048_576 },
  diskGb: { min: 1, max: 65_536 },
  vmId: { min: 100, max: 999_999_999 },
  vlan: { min: 1, max: 4094 },
} as const;

function wholeNumber(
  raw: string | undefined,
  range: { min: number; max: number },
): number | undefined {
  const text = raw?.trim() ?? "";
  if (!/^\d{1,12}$/.test(text)) return undefined;
  const value = Number(text);
  return value >= range.min && value <= range.max ? value : undefined;
}

/** Blank or 0 means "none"; otherwise a number in range. */
function optionalId(raw: string | undefined, range: { min: number; max: number }) {
  const text = raw?.trim() ?? "";
  if (text === "" || /^0+$/.test(text)) return 0;
  return wholeNumber(text, range);
}

function checkName(raw: string | undefined): { value?: string; error?: string } {
  const name = raw?.trim() ?? "";
  if (name === "") {
    return { error: "Enter a name: 1 to 63 characters of a-z, 0-9 and -." };
  }
  if (name.length > LIMITS.nameLength) {
    return {
      error: `The name is ${name.length} characters long; a hostname has at most 63 (a-z, 0-9 and -).`,
    };
  }
  // Checked before folding: some characters lower-case into a-z (the Kelvin sign into k), and the
  // name sent must be what the person typed, up to case.
  const bad = [...new Set(name.replace(/[a-zA-Z0-9-]/g, ""))];
  const folded = name.toLowerCase();
  if (bad.length > 0) {
    const shown = bad.map((ch) => (ch === " " ? "space" : `"${ch}"`)).join(", ");
    return { error: `The name may only contain a-z, 0-9 and - (not ${shown}).` };
  }
  if (folded.startsWith("-") || folded.endsWith("-")) {
    return { error: "The name cannot start or end with -: use a-z or 0-9 there." };
  }
  return { value: folded };
}

function checkIp(raw: string | undefined) {
  const text = raw?.trim() ?? "";
  const example = "e.g. 192.168.1.50/24";
  if (text === "")
    return { error: `Enter the VM's IPv4 address with its prefix length, ${example}.` };
  if (!text.includes("/")) {
    return { error: `Add the prefix length after the address, ${example}.` };
  }
  const cidr = parseIpv4Cidr(text);
  if (!cidr) return { error: `Enter an IPv4 address with a prefix length, ${example}.` };
  if (cidr.prefix < LIMITS.prefix.min || cidr.prefix > LIMITS.prefix.max) {
    return {
      error: `The prefix length must be from /8 to /30 (it is /${cidr.prefix}).`,
    };
  }
  if (cidr.address === cidr.network) {
    return {
      error: `${cidr.address} is the network address of ${cidr.network}/${cidr.prefix}: choose a host address inside it.`,
    };
  }
  if (cidr.address === cidr.broadcast) {
    return {
      error: `${cidr.address} is the broadcast address of ${cidr.network}/${cidr.prefix}: choose a host address inside it.`,
    };
  }
  return { value: cidr };
}

const FormFieldsSchema = z.object({
  name: z.string().optional(),
  node: z.string().optional(),
  template: z.string().optional(),
  cores: z.string().optional(),
  memory: z.string().optional(),
  disk: z.string().optional(),
  ip: z.string().optional(),
  gateway: z.string().optional(),
  dns: z.string().optional(),
  vmId: z.string().optional(),
  vlan: z.string().optional(),
});
type FormFields = z.infer<typeof FormFieldsSchema>;

/** Tells the form a field is wrong, in words for the person filling it in. */
type Fail = (field: CreateField, message: string) => void;

/** The node and template, each one of those the form offered. */
function checkPlacement(form: FormFields, options: FormOptions, fail: Fail) {
  const node = form.node?.trim() ?? "";
  if (!options.nodes.includes(node)) {
    fail("node", `Choose one of the offered nodes: ${options.nodes.join(", ")}.`);
  }

  const template = options.templates.find((t) => String(t.id) === form.template?.trim());
  if (!template) {
    const offered = options.templates.map((t) => `${t.name} (${t.id})`).join(", ");
    fail("template", `Choose one of the offered templates: ${offered}.`);
  }
  return { node, template };
}

function checkSizing(form: FormFields, fail: Fail) {
  const cores = wholeNumber(form.cores, LIMITS.cores);
  if (cores === undefined) fail("cores", "Cores must be a whole number from 1 to 128.");
  const memoryMb = wholeNumber(form.memory, LIMITS.memoryMb);
  if (memoryMb === undefined) {
    fail(
      "memory",
      `Memory must be a whole number of MiB from ${wholeNumberWords(LIMITS.memoryMb.min)} to ${wholeNumberWords(LIMITS.memoryMb.max)}.`,
    );
  }
  const diskGb = wholeNumber(form.disk, LIMITS.diskGb);
  if (diskGb === undefined) {
    fail(
      "disk",
      `Disk must be a whole number of GiB from 1 to ${wholeNumberWords(LIMITS.diskGb.max)}.`,
    );
  }
  return { cores, memoryMb, diskGb };
}

/** The gateway: an IPv4 host inside the VM's subnet, other than the VM itself. */
function checkGateway(form: FormFields, ip: Ipv4Cidr | undefined, fail: Fail): string {
  const gateway = form.gateway?.trim() ?? "";
  if (!isIpv4(gateway)) {
    fail("gateway", "Enter the gateway as an IPv4 address, e.g. 192.168.1.1.");
  } else if (ip) {
    const subnet = `${ip.network}/${ip.prefix}`;
    if (gateway === ip.address) {
      fail("gateway", `The gateway cannot be the VM's own address (${gateway}).`);
    } else if (!inSubnet(gateway, ip)) {
      fail("gateway", `The gateway ${gateway} is outside the VM's subnet ${subnet}.`);
    } else if (gateway === ip.network || gateway === ip.broadcast) {
      fail(
        "gateway",
        `${gateway} is the ${gateway === ip.network ? "network" : "broadcast"} address of ${subnet}: the gateway must be a host in it.`,
      );
    }
  }
  return gateway;
}

function checkIds(form: FormFields, fail: Fail) {
  const vmId = optionalId(form.vmId, LIMITS.vmId);
  if (vmId === undefined) {
    fail(
      "vmId",
      `The VM ID must be blank (or 0) for automatic, or a whole number from 100 to ${wholeNumberWords(LIMITS.vmId.max)}.`,
    );
  }
  const vlanId = optionalId(form.vlan, LIMITS.vlan);
  if (vlanId === undefined) {
    fail("vlan", "The VLAN must be blank (or 0) for untagged, or a whole number from 1 to 4094.");
  }
  return { vmId, vlanId };
}

/** Every field checked in the form's order; the spec when all are right, else undefined. */
function checkForm(
  form: FormFields,
  options: FormOptions,
  fail: Fail,
): { spec: VmSpec; notes: string[] } | undefined {
  const notes: string[] = [];

  const name = checkName(form.name);
  if (name.error) fail("name", name.error);
  else if (name.value !== form.name?.trim()) {
    notes.push(`The name was folded to lower case: ${name.value ?? ""}.`);
  }

  const { node, template } = checkPlacement(form, options, fail);
  const { cores, memoryMb, diskGb } = checkSizing(form, fail);

  const ip = checkIp(form.ip);
  if (ip.error) fail("ip", ip.error);

  const gateway = checkGateway(form, ip.value, fail);

  const dns = form.dns?.trim() ?? "";
  if (!isIpv4(dns)) fail("dns", "Enter the DNS server as an IPv4 address, e.g. 192.168.1.1.");

  const { vmId, vlanId } = checkIds(form, fail);

  if (
    name.value === undefined ||
    !template ||
    cores === undefined ||
    memoryMb === undefined ||
    diskGb === undefined ||
    !ip.value ||
    vmId === undefined ||
    vlanId === undefined
  ) {
    return undefined;
  }
  return {
    spec: {
      name: name.value,
      node,
      templateId: template.id,
      templateName: template.name,
      cores,
      memoryMb,
      diskGb,
      ip: `${ip.value.address}/${ip.value.prefix}`,
      gateway,
      dns,
      vmId,
      vlanId,
    },
    notes,
  };
}

const FormSchema = (options: FormOptions) =>
  FormFieldsSchema.transform((form, ctx): { spec: VmSpec; notes: string[] } => {
    const fail: Fail = (field, message) => {
      ctx.addIssue({ code: "custom", path: [field], message });
    };
    return checkForm(form, options, fail) ?? z.NEVER;
  });

/** Validates the create form against what it offered. Each error names the field's rule. */
export function validateVmForm(values: VmFormValues, options: FormOptions): FormResult {
  const parsed = FormSchema(options).safeParse(values);
  if (parsed.success) return { ok: true, ...parsed.data };
  const errors: Partial<Record<CreateField, string>> = {};
  for (const issue of parsed.error.issues) {
    const field = issue.path[0] as CreateField;
    errors[field] ??= issue.message;
  }
  return { ok: false, errors };
}

/** What the pipeline is given: `spec:inputs`, and CI/CD variables. */
export interface PipelineParams {
  inputs: Record<string, string | number>;
  variables: Record<string, string>;
}

/**
 * Where sizing goes, and which inputs the pipeline declares `type: number`. GitLab reads an
 * input declared without a type as a string and refuses any other JSON type for it ("provided
 * value is not a string"), so every other input is sent as a string.
 */
export interface ParamsShape {
  sizing: "variables" | "inputs";
  numberInputs?: readonly string[];
}

/**
 * The pipeline's parameters for a spec. The platform's `spec:inputs` carry what SPEC section 1
 * lists, each typed as the pipeline declares it; the sizing values are Terraform variables with
 * defaults, passed as `TF_VAR_*` variables (which Terraform reads without any pipeline change)
 * unless the pipeline declares them as inputs too (`sizing: "inputs"`).
 */
export function pipelineParams(
  spec: VmSpec,
  shape: ParamsShape,
  stateName?: string | null,
): PipelineParams {
  const typed = (values: Record<string, string | number>) =>
    Object.fromEntries(
      Object.entries(values).map(([name, value]) => [
        name,
        shape.numberInputs?.includes(name) === true ? Number(value) : String(value),
      ]),
    );
  const inputs = {
    action: "apply",
    vm_name: spec.name,
    vm_ip: spec.ip,
    vm_gateway: spec.gateway,
    template_vm_id: spec.templateId,
    proxmox_node: spec.node,
    vm_id: spec.vmId,
    vlan_id: spec.vlanId,
  };
  const sizingValues = {
    cpu_cores: spec.cores,
    memory_mb: spec.memoryMb,
    disk_size_gb: spec.diskGb,
    dns_server: spec.dns,
  };
  // The VM's own Terraform state travels with the sizing: an input, or the TF_STATE_NAME
  // variable the pipeline's state address is built from.
  const state = stateName ?? undefined;
  if (shape.sizing === "inputs") {
    return {
      inputs: typed({
        ...inputs,
        ...sizingValues,
        ...(state === undefined ? {} : { tf_state_name: state }),
      }),
      variables: {},
    };
  }
  return {
    inputs: typed(inputs),
    variables: {
      ...Object.fromEntries(
        Object.entries(sizingValues).map(([name, value]) => [`TF_VAR_${name}`, String(value)]),
      ),
      ...(state === undefined ? {} : { TF_STATE_NAME: state }),
    },
  };
}
