/**
 * Reading the plan that `terraform show -json tfplan` prints: the resource changes, the output
 * changes, and the planned value of the `node_resources` output (each Proxmox node's CPU and
 * memory use). The result has the same shape as the text reader's, so views need not care which
 * one a plan came from.
 *
 * A JSON document has to be read whole; plans for a handful of VMs are small, unlike job logs.
 * Everything that drives a decision is validated with zod; a document that is not a plan gives a
 * result with an error instead of a guess.
 */
import { z } from "zod";
import {
  deriveCounts,
  type OutputChange,
  type PlanCounts,
  type PlanDiagnostic,
  type PlanResource,
  type ReplaceOrder,
  type ResourceAction,
} from "./plan-text.js";
import {
  NODE_RESOURCES_OUTPUT,
  NodeResourcesSchema,
  PlanJsonSchema,
  type NodeResources,
  type PlanJson,
  type PlanJsonOptions,
  type PlanJsonResult,
  type PlanOutput,
  type ResourceChange,
} from "./plan-json-schema.js";

export {
  NODE_RESOURCES_OUTPUT,
  NodeResourcesSchema,
  NodeUsageSchema,
  PlanJsonSchema,
  type NodeResources,
  type NodeUsage,
  type PlanJsonOptions,
  type PlanJsonResult,
  type PlanOutput,
} from "./plan-json-schema.js";

type Mapped =
  | { kind: "resource"; action: ResourceAction; replaceOrder?: ReplaceOrder; reason?: string }
  | { kind: "forget" }
  | { kind: "unknown" };

/** Terraform's action lists, as `jsonplan` writes them. */
function mapActions(actions: readonly string[]): Mapped {
  switch (actions.join(",")) {
    case "no-op":
      return { kind: "resource", action: "no-op" };
    case "create":
      return { kind: "resource", action: "create" };
    case "read":
      return { kind: "resource", action: "read" };
    case "update":
      return { kind: "resource", action: "update" };
    case "delete":
      return { kind: "resource", action: "delete" };
    case "delete,create":
      return { kind: "resource", action: "replace", replaceOrder: "delete-first" };
    case "create,delete":
      return { kind: "resource", action: "replace", replaceOrder: "create-first" };
    case "create,forget":
      // Terraform counts this as an add: the old object stays, unmanaged (`destroy = false`).
      return {
        kind: "resource",
        action: "create",
        reason: "replacement; the existing object will not be destroyed",
      };
    case "forget":
      return { kind: "forget" };
    default:
      return { kind: "unknown" };
  }
}

const pathText = (path: readonly (string | number)[]) =>
  path
    .map((step, i) => (typeof step === "number" ? `[${step}]` : i === 0 ? step : `.${step}`))
    .join("");

/** Terraform's own words for `action_reason`, as its human plan prints them. */
function actionReason(change: ResourceChange): string[] {
  const parts: string[] = [];
  switch (change.action_reason) {
    case undefined:
      break;
    case "replace_because_tainted":
      parts.push("tainted");
      break;
    case "replace_by_request":
      parts.push("replacement requested");
      break;
    case "replace_by_triggers":
      parts.push("due to changes in replace_triggered_by");
      break;
    case "replace_because_cannot_update":
      // Named below from replace_paths, as the text plan's `# forces replacement`.
      break;
    case "delete_because_no_resource_config":
      parts.push(`because ${change.type ?? "?"}.${change.name ?? "?"} is not in configuration`);
      break;
    case "delete_because_no_module":
      parts.push(`because ${change.module_address ?? "its module"} is not in configuration`);
      break;
    case "delete_because_no_move_target":
      parts.push(
        `because ${change.previous_address ?? "it"} was moved to ${change.address}, which is not in configuration`,
      );
      break;
    case "delete_because_wrong_repetition":
      parts.push(
        change.index === undefined
          ? "because resource uses count or for_each"
          : typeof change.index === "number"
            ? "because resource does not use count"
            : "because resource does not use for_each",
      );
      break;
    case "delete_because_count_index":
      parts.push(`because index [${JSON.stringify(change.index)}] is out of range for count`);
      break;
    case "delete_because_each_key":
      parts.push(`because key [${JSON.stringify(change.index)}] is not in for_each map`);
      break;
    case "read_because_config_unknown":
      parts.push("config refers to values not yet known");
      break;
    case "read_because_dependency_pending":
      parts.push("depends on a resource or a module with changes pending");
      break;
    case "read_because_check_nested":
      parts.push("config will be reloaded to verify a check block");
      break;
    default:
      parts.push(change.action_reason.replaceAll("_", " "));
  }
  return parts;
}

function resourceFrom(change: ResourceChange, mapped: Mapped & { kind: "resource" }): PlanResource {
  const resource: PlanResource = { address: change.address, action: mapped.action };
  if (mapped.replaceOrder !== undefined) resource.replaceOrder = mapped.replaceOrder;
  if (change.deposed !== undefined) resource.deposed = change.deposed;
  const importing = change.change.importing !== undefined && change.change.importing !== null;
  if (importing) resource.importing = true;

  const parts = [...(mapped.reason === undefined ? [] : [mapped.reason]), ...actionReason(change)];
  if (change.deposed !== undefined && mapped.action === "delete") {
    parts.push("left over from a partially-failed replacement of this instance");
  }
  if (change.previous_address !== undefined && change.previous_address !== change.address) {
    parts.push(`moved from ${change.previous_address}`);
  }
  const importId = change.change.importing?.id;
  if (importing && mapped.action !== "no-op") {
    parts.push(importId === undefined ? "will be imported first" : `imported from "${importId}"`);
  }
  if (importing && mapped.action === "replace") {
    parts.push("Warning: this will destroy the imported resource");
  }
  if (change.action_reason === "replace_because_cannot_update") {
    const paths = (change.change.replace_paths ?? []).map(pathText).filter((p) => p !== "");
    parts.push(paths.length > 0 ? `${paths.join(", ")} forces replacement` : "forces replacement");
  }
  if (parts.length > 0) resource.reason = parts.join("; ");
  return resource;
}

const OUTPUT_ACTIONS: Record<string, ResourceAction> = {
  "no-op": "no-op",
  create: "create",
  update: "update",
  delete: "delete",
};

/**
 * A record's own entry. Output names are the plan's (`constructor` and `toString` are valid
 * Terraform names), so a plain lookup could find what every object inherits instead.
 */
const own = <T>(record: Record<string, T>, key: string): T | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined;

function readOutputs(plan: PlanJson): PlanOutput[] {
  const planned = plan.planned_values?.outputs ?? {};
  const changes = plan.output_changes ?? {};
  const names = [...new Set([...Object.keys(changes), ...Object.keys(planned)])].sort();
  return names.map((name) => {
    const change = own(changes, name);
    const plannedOutput = own(planned, name);
    const output: PlanOutput = {
      name,
      action:
        change === undefined
          ? "no-op"
          : (own(OUTPUT_ACTIONS, change.actions.join(",")) ?? "update"),
      sensitive: plannedOutput?.sensitive === true || change?.after_sensitive === true,
      known: false,
    };
    if (plannedOutput !== undefined && "value" in plannedOutput) {
      output.known = true;
      output.value = plannedOutput.value;
    } else if (change !== undefined && change.after_unknown !== true && "after" in change) {
      output.known = true;
      output.value = change.after;
    }
    return output;
  });
}

function issuesText(error: z.ZodError): string {
  const shown = error.issues.slice(0, 3).map((issue) => {
    const where = issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ` : "";
    return `${where}${issue.message}`;
  });
  const more = error.issues.length - shown.length;
  return more > 0 ? `${shown.join("; ")}; and ${more} more` : shown.join("; ");
}

function readNodeResources(
  outputs: readonly PlanOutput[],
  name: string,
): { nodes: NodeResources } | { problem: string } {
  const output = outputs.find((candidate) => candidate.name === name);
  if (output === undefined) return { problem: `The plan has no output named ${name}.` };
  if (!output.known) return { problem: `The output ${name} is only known after apply.` };
  if (output.value === null || output.value === undefined) {
    return { problem: `The output ${name} is null.` };
  }
  const parsed = NodeResourcesSchema.safeParse(output.value);
  if (!parsed.success) {
    return {
      problem: `The output ${name} is not a map of node name to { cpu_usage_percent, memory_used_gb, memory_total_gb }: ${issuesText(parsed.error)}.`,
    };
  }
  return { nodes: parsed.data };
}

function failed(summary: string, detail: string): PlanJsonResult {
  return {
    resources: [],
    counts: undefined,
    derivedCounts: deriveCounts([]),
    noChanges: false,
    errors: [{ summary, detail }],
    outputChanges: [],
    notes: [],
    outputs: [],
    nodeResources: undefined,
    nodeResourcesProblem: "There is no readable plan.",
  };
}

/**
 * The plan's resource changes as the human plan lists them, with errors for actions vmbot does not
 * know and notes for resources that leave the state; `listedByTerraform` counts what Terraform's
 * human plan would list: it hides no-ops that neither move nor import.
 */
function readResourceChanges(plan: PlanJson) {
  const errors: PlanDiagnostic[] = [];
  const notes: string[] = [];
  const resources: PlanResource[] = [];
  let listedByTerraform = 0;

  for (const change of plan.resource_changes ?? []) {
    const mapped = mapActions(change.change.actions);
    if (mapped.kind === "unknown") {
      errors.push({
        summary: `Unrecognised change for ${change.address}`,
        detail: `Terraform plans the actions ${JSON.stringify(change.change.actions)}, which vmbot does not know; the plan cannot be summarised safely.`,
      });
      continue;
    }
    if (mapped.kind === "forget") {
      notes.push(
        `${change.address} leaves Terraform's state but is not destroyed; it is not listed.`,
      );
      continue;
    }
    // A data source dropped from the configuration has nothing to destroy; Terraform hides it too.
    if (mapped.action === "delete" && change.mode === "data") continue;
    const resource = resourceFrom(change, mapped);
    resources.push(resource);
    const moved =
      change.previous_address !== undefined && change.previous_address !== change.address;
    if (resource.action !== "no-op" || moved || resource.importing === true) listedByTerraform += 1;
  }
  return { errors, notes, resources, listedByTerraform };
}

/** Reads a plan already parsed from JSON. */
export function readPlanJson(document: unknown, options: PlanJsonOptions = {}): PlanJsonResult {
  const parsed = PlanJsonSchema.safeParse(document);
  if (!parsed.success) {
    return failed(
      "This is not the JSON of a Terraform plan",
      `Expected the output of terraform show -json for a saved plan: ${issuesText(parsed.error)}.`,
    );
  }
  const plan = parsed.data;
  const { errors, notes, resources, listedByTerraform } = readResourceChanges(plan);

  if (plan.errored === true) {
    errors.push({
      summary: "Planning failed",
      detail:
        "Terraform marked this plan as errored: it is incomplete and cannot be applied. The plan job's log has Terraform's error.",
    });
  }

  const outputs = readOutputs(plan);
  const outputChanges: OutputChange[] = outputs
    .filter((output) => output.action !== "no-op")
    .map(({ name, action }) => ({ name, action }));
  const derivedCounts = deriveCounts(resources);

  // Terraform prints a "Plan:" line whenever it lists a resource; these are the numbers it prints.
  let counts: PlanCounts | undefined;
  if (listedByTerraform > 0) {
    counts = {
      add: derivedCounts.add,
      change: derivedCounts.change,
      destroy: derivedCounts.destroy,
    };
    if (derivedCounts.import > 0) counts.import = derivedCounts.import;
  }

  const outputName = options.nodeResourcesOutput ?? NODE_RESOURCES_OUTPUT;
  const node = readNodeResources(outputs, outputName);
  const result: PlanJsonResult = {
    resources,
    counts,
    derivedCounts,
    noChanges:
      plan.errored !== true &&
      errors.length === 0 &&
      listedByTerraform === 0 &&
      outputChanges.length === 0,
    errors,
    outputChanges,
    notes,
    outputs,
    nodeResources: "nodes" in node ? node.nodes : undefined,
  };
  if ("problem" in node) result.nodeResourcesProblem = node.problem;
  if (plan.terraform_version !== undefined) result.terraformVersion = plan.terraform_version;
  return result;
}

/** Reads the text of `terraform show -json`. */
export function parsePlanJson(text: string, options: PlanJsonOptions = {}): PlanJsonResult {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    return failed(
      "The plan is not valid JSON",
      error instanceof Error ? error.message : "JSON.parse failed.",
    );
  }
  return readPlanJson(document, options);
}
