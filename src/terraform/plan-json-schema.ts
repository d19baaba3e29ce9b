/**
 * The shapes of `terraform show -json tfplan` that the plan reader uses, and what it returns.
 */
import { z } from "zod";
import type { PlanSummary, ResourceAction } from "./plan-text.js";

/** The output that carries node capacity, unless configured otherwise. */
export const NODE_RESOURCES_OUTPUT = "node_resources";

/**
 * A number, or a string holding one: Terraform turns numbers into strings when a map's values
 * are unified to `string`, which `tomap()` and `map(string)` outputs do.
 */
const Quantity = z
  .union([
    z.number(),
    z
      .string()
      .trim()
      .regex(/^-?\d+(?:\.\d+)?$/, "expected a number")
      .transform(Number),
  ])
  .pipe(z.number().nonnegative());

/** One node's entry in the `node_resources` output. */
export const NodeUsageSchema = z
  .object({
    cpu_usage_percent: Quantity,
    memory_used_gb: Quantity,
    memory_total_gb: Quantity,
  })
  .transform((node) => ({
    cpuUsagePercent: node.cpu_usage_percent,
    memoryUsedGb: node.memory_used_gb,
    memoryTotalGb: node.memory_total_gb,
  }));
export type NodeUsage = z.infer<typeof NodeUsageSchema>;

/** The `node_resources` output: node name → its use. */
export const NodeResourcesSchema = z.record(z.string().min(1), NodeUsageSchema);
export type NodeResources = z.infer<typeof NodeResourcesSchema>;

export const ResourceChangeSchema = z.object({
  address: z.string().min(1),
  mode: z.enum(["managed", "data"]).optional(),
  type: z.string().optional(),
  name: z.string().optional(),
  module_address: z.string().optional(),
  index: z.union([z.number(), z.string()]).optional(),
  deposed: z.string().optional(),
  previous_address: z.string().optional(),
  action_reason: z.string().optional(),
  change: z.object({
    // Kept as strings so that an action from a newer Terraform is reported, not a parse failure.
    actions: z.array(z.string()).min(1),
    importing: z.object({ id: z.string().optional() }).nullish(),
    replace_paths: z.array(z.array(z.union([z.string(), z.number()]))).optional(),
  }),
});
export type ResourceChange = z.infer<typeof ResourceChangeSchema>;

export const OutputChangeSchema = z.object({
  actions: z.array(z.string()).min(1),
  after: z.unknown().optional(),
  after_unknown: z.unknown().optional(),
  after_sensitive: z.unknown().optional(),
});

export const PlannedOutputSchema = z.object({
  sensitive: z.boolean().optional(),
  value: z.unknown().optional(),
});

/** The parts of `terraform show -json` that this reader relies on. */
export const PlanJsonSchema = z.object({
  format_version: z.string(),
  terraform_version: z.string().optional(),
  resource_changes: z.array(ResourceChangeSchema).optional(),
  output_changes: z.record(z.string(), OutputChangeSchema).optional(),
  planned_values: z
    .object({ outputs: z.record(z.string(), PlannedOutputSchema).optional() })
    .optional(),
  errored: z.boolean().optional(),
});
export type PlanJson = z.infer<typeof PlanJsonSchema>;

export interface PlanOutput {
  name: string;
  action: ResourceAction;
  sensitive: boolean;
  /** False when the value is only known after apply. */
  known: boolean;
  /** The planned value, when known. */
  value?: unknown;
}

export interface PlanJsonResult extends PlanSummary {
  /** Every output in the plan, changed or not. */
  outputs: PlanOutput[];
  /** The planned `node_resources`; undefined when absent, unknown or malformed. */
  nodeResources: NodeResources | undefined;
  /** Why `nodeResources` is undefined, for a person. */
  nodeResourcesProblem?: string;
  terraformVersion?: string;
}

export interface PlanJsonOptions {
  /** The output that maps node names to their use; `node_resources` by default. */
  nodeResourcesOutput?: string;
}
