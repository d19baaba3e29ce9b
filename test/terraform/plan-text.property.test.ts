import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cleanTrace } from "../../src/gitlab/trace.js";
import {
  createPlanTextParser,
  isSpace,
  parsePlanText,
  type PlanTextResult,
} from "../../src/terraform/plan-text.js";
import { readFixture } from "../support/fixtures.js";
import { colorize, cutPoints, hostileText, printable, SGR } from "../support/generators.js";

const RUNS = { numRuns: 200 };

const FIXTURES = [
  "terraform-plan-text/atlantis-import-multiple-project-exp-output-plan-again.txt",
  "terraform-plan-text/atlantis-import-single-project-exp-output-plan-again.txt",
  "terraform-plan-text/atlantis-simple-exp-output-atlantis-plan.txt",
  "terraform-plan-text/atlantis-simple-yaml-exp-output-plan-maintenance-lock.txt",
  "terraform-plan-text/terraform-plan-comment-basic-1-modify-plan.txt",
  "terraform-plan-text/terraform-plan-comment-basic-2-delete-plan.txt",
];

/** Terraform's heading phrases (`resourceChangeComment`), the drift ones included. */
const PHRASES = [
  "will be created",
  "will be read during apply",
  "will be updated in-place",
  "will be destroyed",
  "must be replaced",
  "is tainted, so must be replaced",
  "will be replaced, as requested",
  "will be replaced due to changes in replace_triggered_by",
  "must be replaced, but the existing object will not be destroyed",
  "will be imported",
  "will no longer be managed by Terraform, but will not be destroyed",
  "will be removed from Terraform state, but will not be destroyed",
  "has changed",
  "has been deleted",
];

const identifier = fc.stringMatching(/^[a-z][a-z0-9_]{0,12}$/);
const type = fc.constantFrom(
  "proxmox_virtual_environment_vm",
  "null_resource",
  "local_file",
  "random_id",
);

const resourceBlock = fc
  .record({
    module: fc.option(identifier, { nil: undefined }),
    type,
    name: identifier,
    key: fc.option(
      fc.oneof(
        fc.nat(9).map(String),
        hostileText.map((k) => JSON.stringify(k)),
      ),
      {
        nil: undefined,
      },
    ),
    phrase: fc.constantFrom(...PHRASES),
    symbol: fc.constantFrom("+", "-", "~", "-/+", "+/-", "<="),
    reason: fc.option(
      fc.constantFrom(
        "because null_resource.a is not in configuration",
        "depends on a resource or a module with changes pending",
      ),
      { nil: undefined },
    ),
    forces: fc.boolean(),
    movedTo: fc.option(identifier, { nil: undefined }),
  })
  .map(({ module, type: t, name, key, phrase, symbol, reason, forces, movedTo }) => {
    const address = `${module === undefined ? "" : `module.${module}.`}${t}.${name}${key === undefined ? "" : `[${key}]`}`;
    const heading =
      movedTo === undefined
        ? `  # ${address} ${phrase}`
        : `  # ${address} has moved to ${t}.${movedTo}`;
    return [
      heading,
      ...(reason === undefined ? [] : [`  # (${reason})`]),
      `  ${symbol} resource "${t}" "${movedTo ?? name}" {`,
      `      ~ node_name = "pve" -> "pve2"${forces ? " # forces replacement" : ""}`,
      '      + name      = "web-01"',
      "    }",
      "",
    ].join("\n");
  });

const otherLines = fc.constantFrom(
  "Terraform will perform the following actions:",
  "Plan: 1 to add, 0 to change, 0 to destroy.",
  "Plan: 2 to import, 0 to add, 1 to change, 0 to destroy, 1 to forget.",
  "No changes. Your infrastructure matches the configuration.",
  "Changes to Outputs:\n  + vm_ip = (known after apply)\n  ~ node_resources = {\n    }\n  - old = 1 -> null\n",
  "╷\n│ Error: Invalid value for variable\n│ \n│   on variables.tf line 9:\n│ vm_ip must be an IPv4 address.\n╵\n",
  "╷\n│ Warning: Argument is deprecated\n╵\n",
  "Error: Unframed older error\n\n  detail text\nmore detail\n\n",
  "│ Error: a frame whose top was cut off",
  "Refreshing state... [id=120]",
  "  # (1 unchanged attribute hidden)",
  "",
);

/** A heading with nothing after it, as where a log was cut. */
const bareHeading = resourceBlock.map((block) => block.slice(0, block.indexOf("\n")));

/** A plan-ish text: resource blocks, Terraform's other lines, hostile and random text. */
const planText = fc
  .array(
    fc.oneof(
      { weight: 4, arbitrary: resourceBlock },
      { weight: 1, arbitrary: bareHeading },
      { weight: 3, arbitrary: otherLines },
      { weight: 1, arbitrary: hostileText },
      { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
    ),
    { maxLength: 25 },
  )
  .map((parts) => parts.join("\n"));

/** Only printable text, tabs and newlines: what `terraform plan -no-color` prints. */
const plainPlanText = planText.map(printable);

function lineByLine(text: string): PlanTextResult {
  const parser = createPlanTextParser();
  for (const line of text.split("\n")) parser.push(line);
  return parser.result();
}

/** What a text cut at `cut` must report: the complete lines' resources, in order, as the whole. */
function expectCutAgrees(text: string, cut: number, whole: PlanTextResult): void {
  const prefix = text.slice(0, cut);
  const result = parsePlanText(prefix);
  const complete = prefix.slice(0, prefix.lastIndexOf("\n") + 1);
  const cutMidLine = cut < text.length && text[cut] !== "\n";
  const addresses = (r: PlanTextResult) => r.resources.map((resource) => resource.address);
  if (cutMidLine) expect(addresses(result)).toEqual(addresses(parsePlanText(complete)));
  // Every resource but the last is settled once the next heading is read.
  const found = result.resources;
  expect(found.slice(0, -1)).toEqual(whole.resources.slice(0, Math.max(0, found.length - 1)));
  expect(addresses(result)).toEqual(addresses(whole).slice(0, found.length));
}

function expectBounded(text: string, result: PlanTextResult): void {
  const lines = text.split("\n").length;
  expect(result.resources.length).toBeLessThanOrEqual(lines);
  expect(result.outputChanges.length).toBeLessThanOrEqual(lines);
  expect(result.errors.length).toBeLessThanOrEqual(lines);
  expect(result.notes.length).toBeLessThanOrEqual(lines + 2);
  for (const error of result.errors) expect(error.detail.length).toBeLessThanOrEqual(10_002);
}

describe("reading plan text", () => {
  it("never throws on any text and keeps a result bounded by its number of lines", () => {
    fc.assert(
      fc.property(fc.oneof(planText, fc.string({ unit: "binary", maxLength: 400 })), (text) => {
        expectBounded(text, parsePlanText(text));
      }),
      RUNS,
    );
  });

  it("reads a text fed line by line as the whole text", () => {
    fc.assert(
      fc.property(planText, (text) => {
        // Lines as a log streams them: each one complete.
        const complete = `${text}\n`;
        expect(lineByLine(complete)).toEqual(parsePlanText(complete));
      }),
      RUNS,
    );
  });

  it("reads CRLF line ends as LF", () => {
    fc.assert(
      fc.property(planText, (text) => {
        expect(parsePlanText(text.replaceAll("\n", "\r\n"))).toEqual(parsePlanText(text));
      }),
      RUNS,
    );
  });

  it("reads a coloured plan in a job log as the plain plan", () => {
    fc.assert(
      fc.property(
        plainPlanText,
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.array(fc.constantFrom(...SGR), { minLength: 1, maxLength: 4 }),
        (text, positions, codes) => {
          expect(parsePlanText(cleanTrace(colorize(text, positions, codes)))).toEqual(
            parsePlanText(text),
          );
        },
      ),
      RUNS,
    );
  });

  it("reports, for a plan cut anywhere, only resources whose heading line was complete", () => {
    fc.assert(
      fc.property(planText, fc.nat(), (text, at) => {
        expectCutAgrees(text, at % (text.length + 1), parsePlanText(text));
      }),
      { numRuns: 500 },
    );
  });

  it("reads a heading cut at every point as nothing, or as the heading it is", () => {
    fc.assert(
      fc.property(resourceBlock, (block) => {
        const whole = parsePlanText(block);
        for (const cut of cutPoints(block)) expectCutAgrees(block, cut, whole);
      }),
      { numRuns: 100 },
    );
  });

  it("reads a large hostile plan in one pass (bounded by the test's timeout)", () => {
    const lines = [
      `  # ${"a ".repeat(20_000)}will be invoked`,
      `  # ${"x".repeat(20_000)} will be`,
      `  ${"-/+ ".repeat(5_000)}resource "a" "b" {`,
      `Error: ${"e".repeat(20_000)}`,
      ...Array.from({ length: 20_000 }, (_, i) => `  detail line ${i}`),
      ...Array.from({ length: 20_000 }, (_, i) => `  # null_resource.n${i} will be created`),
      `  ~ x = 1 -> 2 ${"#".repeat(20_000)} forces replacement`,
    ];
    const text = lines.join("\n");
    const result = parsePlanText(text);
    expectBounded(text, result);
    expect(result.resources).toHaveLength(20_000);
  });
});

describe("reading cut and re-encoded copies of the plan text fixtures", () => {
  for (const name of FIXTURES) {
    const text = readFixture(name);
    const whole = parsePlanText(text);

    it(`reads ${name} cut at any point, reporting only resources whose heading was complete`, () => {
      for (const cut of cutPoints(text, 3000)) expectCutAgrees(text, cut, whole);
    });

    it(`reads ${name} with CRLF line ends as with LF, and coloured as plain`, () => {
      expect(parsePlanText(text.replaceAll("\n", "\r\n"))).toEqual(whole);
      const colored = text.replace(/^( *)([-+~#] )/gm, "$1\x1b[32m$2\x1b[0m");
      expect(parsePlanText(cleanTrace(colored))).toEqual(whole);
    });
  }
});

/** A Terraform 0.11 resource line: its symbol, address and the notes after it. */
const legacyResource = fc.record({
  symbol: fc.constantFrom("+", "-", "~", "<=", "-/+", "+/-"),
  module: fc.option(identifier, { nil: undefined }),
  type,
  name: identifier,
  index: fc.option(fc.nat(9), { nil: undefined }),
  tainted: fc.boolean(),
});
const LEGACY_ACTION = {
  "+": "create",
  "-": "delete",
  "~": "update",
  "<=": "read",
  "-/+": "replace",
  "+/-": "replace",
} as const;

describe("reading Terraform 0.11 plans and heredoc values", () => {
  it("lists every 0.11 resource line with its action, whatever attributes follow", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(legacyResource, fc.array(hostileText, { maxLength: 3 })), {
          maxLength: 8,
        }),
        (entries) => {
          const lines = [
            "Resource actions are indicated with the following symbols:",
            "  + create",
            "-/+ destroy and then create replacement",
            "",
            "Terraform will perform the following actions:",
            "",
          ];
          const expected: [string, string][] = [];
          for (const [resource, attributes] of entries) {
            const data = resource.symbol === "<=" ? "data." : "";
            const index = resource.index === undefined ? "" : `[${resource.index}]`;
            const module = resource.module === undefined ? "" : `module.${resource.module}.`;
            const address = `${module}${data}${resource.type}.${resource.name}${index}`;
            const notes = [
              ...(resource.tainted ? [" (tainted)"] : []),
              ...(LEGACY_ACTION[resource.symbol] === "replace" ? [" (new resource required)"] : []),
            ].join("");
            lines.push(`${resource.symbol.padStart(3)} ${address}${notes}`);
            for (const attribute of attributes) lines.push(`      ${printable(attribute)}`);
            lines.push("");
            expected.push([address, LEGACY_ACTION[resource.symbol]]);
          }
          lines.push("", "Plan: 0 to add, 0 to change, 0 to destroy.");
          const result = parsePlanText(lines.join("\n"));
          expect(result.resources.map(({ address, action }) => [address, action])).toEqual(
            expected,
          );
        },
      ),
      RUNS,
    );
  });

  it("reads nothing inside a heredoc value, whatever its lines hold", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            hostileText.map(printable),
            fc.constantFrom(
              "  # proxmox_virtual_environment_vm.other will be destroyed",
              "Plan: 0 to add, 0 to change, 9 to destroy.",
              "Error: not an error",
              "╷",
              "No changes.",
              "Terraform will perform the following actions:",
              "-/+ aws_instance.web (new resource required)",
            ),
          ),
          { maxLength: 12 },
        ),
        fc.constantFrom("<<EOT", "<<-EOT", "<<~EOT", "<<-EOT # forces replacement"),
        (content, opener) => {
          // Terraform prints every line of a value indented under its attribute, a line break
          // inside one of the generated texts included.
          const body = content
            .flatMap((line) => line.split("\n"))
            .filter((line) => !line.trimStart().startsWith("EOT"));
          const plan = [
            "  # proxmox_virtual_environment_file.cloud_config will be created",
            '  + resource "proxmox_virtual_environment_file" "cloud_config" {',
            `      + data = ${opener}`,
            ...body.map((line) => `            ${line}`),
            "        EOT",
            "    }",
            "",
            "Plan: 1 to add, 0 to change, 0 to destroy.",
          ].join("\n");
          const result = parsePlanText(plan);
          const forced = opener.includes("forces replacement");
          expect(result.resources).toEqual([
            {
              address: "proxmox_virtual_environment_file.cloud_config",
              action: forced ? "replace" : "create",
              ...(forced ? { reason: "data forces replacement" } : {}),
            },
          ]);
          expect(result.counts).toEqual({ add: 1, change: 0, destroy: 0 });
          expect(result.errors).toEqual([]);
          expect(result.planLines).toBe(1);
        },
      ),
      RUNS,
    );
  });
});

describe("reading a line's indentation and marker by character codes", () => {
  it("takes for white space exactly what trim and the patterns' \\s take", () => {
    const disagreeing: string[] = [];
    for (let code = 0; code <= 0xffff; code += 1) {
      const char = String.fromCharCode(code);
      const space = isSpace(code);
      if (space !== /\s/.test(char) || space !== (char.trim() === "")) {
        disagreeing.push(`U+${code.toString(16)}`);
      }
    }
    expect(disagreeing).toEqual([]);
  });

  const SPACES = [" ", "\t", "\u00a0", "\u2003", "\u3000", "\ufeff", "\u200b", "x"];
  const indentation = fc.array(fc.constantFrom(...SPACES), { maxLength: 4 }).map((s) => s.join(""));

  it("reads a replace marker under an update heading whatever spaces surround its symbol", () => {
    fc.assert(
      fc.property(
        indentation,
        fc.constantFrom("-/+", "+/-", "~", "<=", "-/", "+/-+", ""),
        indentation,
        fc.constantFrom("resource", "data", "resources", "r"),
        (indent, symbol, gap, keyword) => {
          const marker = `${indent}${symbol}${gap}${keyword} "t" "n" {`;
          const plan = `  # ${keyword === "data" ? "data." : ""}t.n will be updated in-place\n${marker}\n`;
          const replaces = /^\s*(?:-\/\+|\+\/-)\s+(?:resource|data) "t" "n" \{/.test(marker);
          const [resource] = parsePlanText(plan).resources;
          expect(resource?.action).toBe(replaces ? "replace" : "update");
        },
      ),
      { numRuns: 500 },
    );
  });
});
