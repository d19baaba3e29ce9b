import { pipelineParams, type PipelineParams, type VmSpec } from "../vm/spec.js";

/**
 * The inputs of a VM's `action=destroy` pipeline: the ones it was made with (Terraform must
 * see the same VM to destroy it), sent the way create sends them, and its state name.
 */
export function destroyParams(
  spec: VmSpec,
  shape: Parameters<typeof pipelineParams>[1],
  stateName: string | null,
): PipelineParams {
  const params = pipelineParams(spec, shape, stateName);
  return { ...params, inputs: { ...params.inputs, action: "destroy" } };
}
