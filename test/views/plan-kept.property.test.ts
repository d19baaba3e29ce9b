import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  createPlanTextParser,
  deriveCounts,
  type PlanTextResult,
} from "../../src/terraform/plan-text.js";
import { KEPT_RESOURCES, keptForMessage, messageResources } from "../../src/views/plan-kept.js";
import { LISTED_RESOURCES, NAMED_DESTROYS } from "../../src/views/plan-message.js";

/** One resource's block as Terraform prints it, under the address `local_file.r<i>`. */
const block = fc.constantFrom(
  (a: string) => [
    `  # ${a} will be created`,
    `  + resource "local_file" "${a.slice(11)}" {`,
    "    }",
  ],
  (a: string) => [
    `  # ${a} will be destroyed`,
    `  - resource "local_file" "${a.slice(11)}" {`,
    "    }",
  ],
  (a: string) => [`  # ${a} will be updated in-place`, "      ~ size = 1 -> 2", "    }"],
  (a: string) => [
    `  # ${a} will be updated in-place`,
    `  ~ resource "local_file" "${a.slice(11)}" {`,
    "      ~ content = (sensitive value) # forces replacement",
    "    }",
  ],
  (a: string) => [
    `  # ${a} must be replaced`,
    `+/- resource "local_file" "${a.slice(11)}" {`,
    "    }",
  ],
  (a: string) => [`  # ${a} will be read during apply`, "    }"],
  (a: string) => [`  # local_file.old_${a.slice(11)} has moved to ${a}`, "    }"],
  (a: string) => [`  # ${a} will be imported`, "    }"],
  (a: string) => [`  # ${a} has changed`, "    }"],
  (a: string) => [`  # ${"module.x".repeat(150)}.${a} will be destroyed`, "    }"],
);

/**
 * Resources' blocks: about as many as a plan kept whole may have, many more, or a few; then a
 * `Plan:` line (or not).
 */
const plan = fc
  .tuple(
    fc.oneof(
      fc.array(block, { minLength: KEPT_RESOURCES - 2, maxLength: KEPT_RESOURCES + 2 }),
      fc.array(block, { minLength: KEPT_RESOURCES + 3, maxLength: 4 * KEPT_RESOURCES }),
      fc.array(block, { maxLength: 10 }),
    ),
    fc.constantFrom("", "Plan: 3 to add, 1 to change, 2 to destroy.", "No changes."),
  )
  .map(([blocks, end]) => [
    "Terraform will perform the following actions:",
    "",
    ...blocks.flatMap((lines, i) => lines(`local_file.r${String(i)}`)),
    end,
  ]);

function parse(lines: readonly string[], bounded: boolean, readAt: number): PlanTextResult[] {
  const parser = createPlanTextParser(bounded ? messageResources() : undefined);
  const results: PlanTextResult[] = [];
  lines.forEach((line, i) => {
    parser.push(line);
    // The result may be asked for at any time, and reading goes on.
    if (i === readAt) results.push(parser.result());
  });
  results.push(parser.result());
  return results;
}

describe("a plan reader that keeps only what the message needs", () => {
  it("gives the message what the whole plan would, however long it is, at any point", () => {
    fc.assert(
      fc.property(plan, fc.nat(), (lines, at) => {
        const readAt = at % (lines.length + 1);
        const whole = parse(lines, false, readAt);
        const bounded = parse(lines, true, readAt);
        expect(bounded.map(keptForMessage)).toEqual(whole.map(keptForMessage));
        bounded.forEach((result, i) => {
          expect(whole[i]!.derivedCounts).toEqual(deriveCounts(whole[i]!.resources));
          expect(result.derivedCounts).toEqual(whole[i]!.derivedCounts);
          expect(result.mismatch).toEqual(whole[i]!.mismatch);
          expect(result.noChanges).toBe(whole[i]!.noChanges);
          expect(result.resources.length).toBeLessThanOrEqual(
            Math.max(KEPT_RESOURCES, LISTED_RESOURCES + 2 * NAMED_DESTROYS),
          );
        });
      }),
      { numRuns: 200 },
    );
  });
});
