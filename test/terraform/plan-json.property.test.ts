import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parsePlanJson, readPlanJson, type PlanJsonResult } from "../../src/terraform/plan-json.js";
import { deriveCounts } from "../../src/terraform/plan-text.js";
import { readFixture } from "../support/fixtures.js";
import { cutPoints, hostileText } from "../support/generators.js";

const RUNS = { numRuns: 300 };

const FIXTURES = [
  "terraform-json/basic.plan.json",
  "terraform-json/deep_module.plan.json",
  "terraform-json/explicit_null.plan.json",
  "terraform-json/output_depends_on.plan.json",
];

const ACTIONS = ["create", "update", "delete", "replace", "read", "no-op"];

/**
 * Names Terraform allows for outputs and resources that are also the names of what every
 * JavaScript object inherits: a lookup by name must not find those.
 */
const INHERITED_NAMES = [
  "constructor",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "isPrototypeOf",
  "__proto__",
  "__defineGetter__",
];

const name = fc.oneof(
  fc.constantFrom(...INHERITED_NAMES, "node_resources", "vm_ip"),
  fc.stringMatching(/^[a-z_][a-z0-9_-]{0,10}$/),
  hostileText,
);

const actionList = fc.oneof(
  fc.constantFrom(
    ["no-op"],
    ["create"],
    ["read"],
    ["update"],
    ["delete"],
    ["delete", "create"],
    ["create", "delete"],
    ["create", "forget"],
    ["forget"],
  ),
  fc.array(fc.oneof(fc.constantFrom(...INHERITED_NAMES, "create", "delete"), fc.string()), {
    maxLength: 3,
  }),
);

const nodeUsage = fc.record(
  {
    cpu_usage_percent: fc.oneof(fc.double(), fc.string(), fc.constant(null)),
    memory_used_gb: fc.oneof(fc.nat(), fc.constant("12.5"), fc.constant("-1")),
    memory_total_gb: fc.oneof(fc.nat(), fc.string()),
  },
  { requiredKeys: [] },
);

/** Something shaped like `terraform show -json` output, with odd names and values throughout. */
const planDocument = fc.record(
  {
    format_version: fc.oneof(fc.constant("1.2"), fc.string(), fc.integer()),
    terraform_version: fc.string(),
    errored: fc.boolean(),
    resource_changes: fc.array(
      fc.record(
        {
          address: name,
          mode: fc.constantFrom("managed", "data", "other"),
          type: name,
          name,
          index: fc.oneof(fc.nat(), fc.string()),
          deposed: fc.string(),
          previous_address: name,
          action_reason: fc.oneof(
            fc.constantFrom(
              "replace_because_tainted",
              "replace_because_cannot_update",
              "delete_because_no_resource_config",
              "delete_because_count_index",
              "delete_because_each_key",
              "read_because_config_unknown",
            ),
            name,
          ),
          change: fc.record(
            {
              actions: actionList,
              importing: fc.oneof(
                fc.constant(null),
                fc.record({ id: fc.string() }, { requiredKeys: [] }),
              ),
              replace_paths: fc.array(fc.array(fc.oneof(fc.string(), fc.nat()), { maxLength: 3 }), {
                maxLength: 3,
              }),
            },
            { requiredKeys: ["actions"] },
          ),
        },
        { requiredKeys: ["address", "change"] },
      ),
      { maxLength: 8 },
    ),
    output_changes: fc.dictionary(
      name,
      fc.record(
        {
          actions: actionList,
          after: fc.jsonValue(),
          after_unknown: fc.boolean(),
          after_sensitive: fc.boolean(),
        },
        { requiredKeys: ["actions"] },
      ),
      { maxKeys: 5 },
    ),
    planned_values: fc.record(
      {
        outputs: fc.dictionary(
          name,
          fc.record(
            {
              sensitive: fc.boolean(),
              value: fc.oneof(fc.jsonValue(), fc.dictionary(name, nodeUsage, { maxKeys: 4 })),
            },
            { requiredKeys: [] },
          ),
          { maxKeys: 5 },
        ),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ["format_version"] },
);

function expectWellFormed(result: PlanJsonResult): void {
  for (const resource of result.resources) expect(ACTIONS).toContain(resource.action);
  for (const change of result.outputChanges) expect(ACTIONS).toContain(change.action);
  for (const output of result.outputs) {
    expect(ACTIONS).toContain(output.action);
    expect(typeof output.name).toBe("string");
  }
  expect(result.derivedCounts).toEqual(deriveCounts(result.resources));
  for (const [node, usage] of Object.entries(result.nodeResources ?? {})) {
    expect(node).not.toBe("");
    for (const value of Object.values(usage)) {
      expect(Number.isFinite(value)).toBe(true);
      expect(value).toBeGreaterThanOrEqual(0);
    }
  }
  if (result.nodeResources === undefined) expect(result.nodeResourcesProblem).toBeTruthy();
}

describe("reading a JSON plan", () => {
  it("never throws on any text, and answers text that is not JSON with an error", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), fc.json()), (text) => {
        const result = parsePlanJson(text);
        expectWellFormed(result);
        let isJson = true;
        try {
          JSON.parse(text);
        } catch {
          isJson = false;
        }
        if (!isJson) {
          expect(result.resources).toEqual([]);
          expect(result.errors.map((e) => e.summary)).toEqual(["The plan is not valid JSON"]);
        }
      }),
      RUNS,
    );
  });

  it("never throws on any value, however odd its shape", () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withDate: true,
          withMap: true,
          withNullPrototype: true,
          withSet: true,
          withSparseArray: true,
          withTypedArray: true,
          key: fc.oneof(fc.string(), fc.constantFrom(...INHERITED_NAMES, "format_version")),
        }),
        (value) => {
          expectWellFormed(readPlanJson(value));
        },
      ),
      RUNS,
    );
  });

  it("reads any plan-shaped document, with any output or resource names, into known actions", () => {
    fc.assert(
      fc.property(planDocument, (document) => {
        // Through JSON, as the artifact arrives: `__proto__` becomes an ordinary key.
        const text = JSON.stringify(document);
        const result = parsePlanJson(text);
        expectWellFormed(result);
        expect(readPlanJson(JSON.parse(text))).toEqual(result);
        // Every output the plan names is listed once, under its own name.
        const parsed = JSON.parse(text) as {
          output_changes?: Record<string, unknown>;
          planned_values?: { outputs?: Record<string, unknown> };
        };
        if (result.errors.some((e) => e.summary === "This is not the JSON of a Terraform plan")) {
          return;
        }
        const names = new Set([
          ...Object.keys(parsed.output_changes ?? {}),
          ...Object.keys(parsed.planned_values?.outputs ?? {}),
        ]);
        // zod leaves a `__proto__` key out of a record (it guards against prototype pollution).
        names.delete("__proto__");
        expect(result.outputs.map((o) => o.name).sort()).toEqual([...names].sort());
      }),
      RUNS,
    );
  });
});

describe("reading cut and re-encoded copies of the JSON plan fixtures", () => {
  for (const fixture of FIXTURES) {
    const text = readFixture(fixture);
    const whole = parsePlanJson(text);

    it(`reads ${fixture} cut at any point as an error, never a partial plan`, () => {
      for (const cut of cutPoints(text, 2000)) {
        const prefix = text.slice(0, cut);
        const result = parsePlanJson(prefix);
        if (prefix.trim() === text.trim()) {
          expect(result).toEqual(whole);
        } else {
          expect(result.resources).toEqual([]);
          expect(result.errors).toHaveLength(1);
        }
      }
    });

    it(`reads ${fixture} re-indented, with CRLF line ends, as the original`, () => {
      const document = JSON.parse(text) as unknown;
      for (const indent of [0, 2, "\t"]) {
        const reformatted = JSON.stringify(document, null, indent).replaceAll("\n", "\r\n");
        expect(parsePlanJson(reformatted)).toEqual(whole);
      }
    });
  }
});
