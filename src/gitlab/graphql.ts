import { z } from "zod";

/** The GraphQL GitLab is asked through, and the shapes of its answers. */

export const TerraformStatesSchema = z.object({
  data: z
    .object({
      project: z
        .object({
          terraformStates: z.object({
            nodes: z.array(
              z.object({
                name: z.string(),
                lockedAt: z.string().nullish(),
                lockedByUser: z.object({ username: z.string() }).nullish(),
              }),
            ),
            pageInfo: z
              .object({ hasNextPage: z.boolean(), endCursor: z.string().nullish() })
              .optional(),
          }),
        })
        .nullable(),
    })
    .nullish(),
  errors: z.array(z.object({ message: z.string() })).optional(),
});

/** A page of the project's states: GitLab gives at most 100 a page, and a cursor for more. */
export const TERRAFORM_STATES_QUERY = `query vmbotTerraformStates($path: ID!, $after: String) {
  project(fullPath: $path) {
    terraformStates(first: 100, after: $after) {
      nodes { name lockedAt lockedByUser { username } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`;

/** Pages of states read at most: 5,000 states. */
export const MAX_STATE_PAGES = 50;

export const PIPELINE_INPUTS_QUERY = `query vmbotPipelineInputs($path: ID!, $ref: String!) {
  project(fullPath: $path) {
    ciPipelineCreationInputs(ref: $ref) { name type }
  }
}`;

export const PipelineInputsSchema = z.object({
  data: z
    .object({
      project: z
        .object({
          ciPipelineCreationInputs: z
            .array(z.object({ name: z.string(), type: z.string().nullish() }))
            .nullish(),
        })
        .nullish(),
    })
    .nullish(),
  errors: z.array(z.object({ message: z.string() })).optional(),
});

/** How long the pipeline's declared input types are trusted before they are read again. */
export const INPUT_TYPES_MAX_AGE_MS = 10 * 60_000;

/**
 * The inputs typed as the pipeline declares them: a number where it says NUMBER, a string where
 * it says STRING (or nothing). Values of other declared types, or of undeclared inputs, go as
 * they are (GitLab then names the input it refuses).
 */
export function typedInputs(
  inputs: Readonly<Record<string, string | number>>,
  declared: ReadonlyMap<string, string>,
): Record<string, string | number> {
  return Object.fromEntries(
    Object.entries(inputs).map(([name, value]) => {
      const type = declared.get(name);
      if (type === "NUMBER" && typeof value === "string" && /^-?\d+(\.\d+)?$/.test(value)) {
        return [name, Number(value)];
      }
      if (type === "STRING" && typeof value === "number") return [name, String(value)];
      return [name, value];
    }),
  );
}
