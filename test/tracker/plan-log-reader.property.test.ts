import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createTraceCleaner, type TraceCleanerOptions } from "../../src/gitlab/trace.js";
import {
  createPlanTextParser,
  mayBeCutHeading,
  type PlanTextResult,
  type ResourceList,
} from "../../src/terraform/plan-text.js";
import { createPlanLogReader } from "../../src/tracker/plan-log-reader.js";
import { messageResources } from "../../src/views/plan-kept.js";
import { readFixture } from "../support/fixtures.js";
import { colorize, hostileText, SGR, splitAt } from "../support/generators.js";

const RUNS = { numRuns: 300 };

type Overwritten = NonNullable<TraceCleanerOptions["overwritten"]>;

/**
 * The reference: every line cleaned and made by the cleaner, each read by the parser, a last line
 * without a newline read unless it may be a heading cut short.
 */
function reference(
  pieces: readonly string[],
  overwritten: Overwritten,
  resources?: ResourceList,
): { plan: PlanTextResult; lines: string[] } {
  const cleaner = createTraceCleaner({ overwritten });
  const parser = createPlanTextParser(resources);
  const lines = pieces.flatMap((piece) => cleaner.push(piece));
  const rest = cleaner.end();
  const ended = pieces.join("").endsWith("\n") || pieces.join("") === "";
  const last = ended ? undefined : rest.pop();
  lines.push(...rest);
  for (const line of lines) parser.push(line);
  if (last !== undefined && !mayBeCutHeading(last)) parser.push(last);
  if (last !== undefined) lines.push(last);
  return { plan: parser.result(), lines };
}

function read(
  pieces: readonly string[],
  overwritten: Overwritten,
  keepLines: boolean,
  resources?: ResourceList,
) {
  const reader = createPlanLogReader({
    overwritten,
    keepLines,
    ...(resources === undefined ? {} : { resources }),
  });
  const lines = pieces.flatMap((piece) => [...reader.push(piece)]);
  const { lines: rest, last } = reader.end();
  lines.push(...rest);
  if (last !== undefined) lines.push(last);
  return { plan: reader.result(), lines };
}

/**
 * The pieces after a first line of their own read as the reference reads them, lines kept or not:
 * the cleaner's shortcuts start once a first line has shown the log has no timestamps.
 */
function readsAfterAFirstLine(parts: readonly string[], overwritten: Overwritten): void {
  const apart = ["Running with gitlab-runner 18.2.0\n", ...parts];
  const expected = reference(apart, overwritten);
  expect(read(apart, overwritten, false).plan).toEqual(expected.plan);
  expect(read(apart, overwritten, true)).toEqual(expected);
}

const word = fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/);

/** Lines of a plan job's log: Terraform's, the runner's, and text that only looks like them. */
const planLine = fc.oneof(
  fc.constantFrom(
    "  # local_file.a will be created",
    "  # local_file.b must be replaced",
    "  # module.m.null_resource.c[0] will be destroyed",
    "  # local_file.d has moved to local_file.e",
    "  # local_file.f has changed",
    "  # (because local_file.a is tainted)",
    "  # (3 unchanged attributes hidden)",
    '-/+ resource "local_file" "b" {',
    '  + resource "local_file" "a" {',
    '  ~ resource "local_file" "g" { # x',
    "      ~ content = (sensitive value) # forces replacement",
    '      + name    = "web-01"',
    "      + count   = 3",
    "      ~ content = <<-EOT # forces replacement",
    "      + script  = <<EOT",
    "      + script  = <<EOT\n          # data, not a heading\n        EOT\n      ~ id = 1 # forces replacement",
    '  # local_file.r must be replaced\n-/+ resource "local_file" "r" {\n      ~ data = <<-EOT\n        EOT\n      ~ size = 2 # forces replacement\n    }',
    "          + just a line",
    "      + tags    = {",
    "      + b       = x<",
    "      + c       = 1 <",
    "  #",
    "#",
    "        ",
    "  # action.a.b will be invoked",
    "        EOT",
    "EOT",
    "    }",
    "",
    "   ",
    "\t+ tabbed = 1",
    "Plan: 1 to add, 0 to change, 1 to destroy.",
    "No changes. Your infrastructure matches the configuration.",
    "Terraform will perform the following actions:",
    "  + aws_instance.web",
    "-/+ aws_instance.db (tainted) (new resource required)",
    "Changes to Outputs:",
    "  + vm_ip = (known after apply)",
    "╷",
    "│ Error: Invalid value for variable",
    "│ Warning: Argument is deprecated",
    "╵",
    "Error: Unframed older error",
    "Warning: old",
    "$ terraform plan -no-color",
    "Running with gitlab-runner 18.2.0",
    "Preparing environment",
    "Checking out 4c1e0a7d",
    "Created fresh repository.",
    "Terraform has been successfully initialized!",
    '      + täg    = "ünïcode ✓" ',
    "  \u00a0# local_file.h will be created",
  ),
  word.map((w) => `      + ${w} = <<${w.toUpperCase()}`),
  word.map((w) => `  # local_file.${w} will be updated in-place`),
  hostileText,
);

/** What the runner and a terminal put around a line: colours, section markers, overwrites. */
const dressing = fc.record({
  colours: fc.array(fc.nat(200), { maxLength: 3 }),
  marker: fc.constantFrom(
    "",
    "",
    "",
    "section_start:1767603600:step_script\r\x1b[0K",
    "section_end:1767603601:step_script\r\x1b[0K",
    "section_start:1:build[collapsed=true]\r\x1b[0K\x1b[0K",
  ),
  markerAtEnd: fc.boolean(),
  overwrite: fc.constantFrom("", "", "", "Refreshing state...\r", "  50%\r\x1b[0K", "\r"),
  crlf: fc.boolean(),
});

const jobLog = fc.array(fc.tuple(planLine, dressing), { maxLength: 40 }).map((lines) =>
  lines
    .map(([line, d]) => {
      const coloured = colorize(line, d.colours, SGR);
      const marked = d.markerAtEnd ? `${coloured}${d.marker}` : `${d.marker}${coloured}`;
      return `${d.overwrite}${marked}${d.crlf ? "\r" : ""}`;
    })
    .join("\n"),
);

const withEnd = fc.tuple(jobLog, fc.boolean()).map(([log, ended]) => (ended ? `${log}\n` : log));

const pieces = withEnd.chain((log) =>
  fc.array(fc.nat(log.length), { maxLength: 8 }).map((cuts) => splitAt(log, cuts)),
);

const overwrittenMode = fc.constantFrom<Overwritten>("hide", "keep");

/** One of `logs`, in pieces cut anywhere, as a socket hands them over. */
const cutAnywhere = (logs: readonly string[]) =>
  fc.tuple(fc.constantFrom(...logs), fc.array(fc.nat(), { maxLength: 6 })).map(([log, cuts]) =>
    splitAt(
      log,
      cuts.map((cut) => cut % (log.length + 1)),
    ),
  );

/**
 * A resource block of a plan, `n` naming it: replacements (forced, requested, with a heredoc that
 * holds what looks like a heading), updates a marker or an attribute makes replacements, creations,
 * deletions, imports and moves.
 */
const BLOCKS: readonly ((n: number) => string)[] = [
  (n) =>
    `  # local_file.r${n} must be replaced\n-/+ resource "local_file" "r${n}" {\n      ~ content = (sensitive value) # forces replacement\n      ~ id      = "a1" -> (known after apply)\n        # (3 unchanged attributes hidden)\n    }`,
  (n) =>
    `  # local_file.h${n} must be replaced\n+/- resource "local_file" "h${n}" {\n      ~ content = <<-EOT # forces replacement\n          # local_file.x${n} will be destroyed\n          Plan: 9 to add, 9 to change, 9 to destroy.\n        EOT\n      ~ size    = 2 # forces replacement\n    }`,
  (n) =>
    `  # local_file.u${n} will be updated in-place\n  ~ resource "local_file" "u${n}" {\n      ~ size = 2 # forces replacement\n      + tags = {\n          + "a" = "b"\n        }\n    }`,
  (n) =>
    `  # local_file.m${n} will be updated in-place\n-/+ resource "local_file" "m${n}" {\n      ~ size = 2\n    }`,
  (n) =>
    `  # local_file.c${n} will be created\n  + resource "local_file" "c${n}" {\n      + script = <<EOT\n  # local_file.y${n} will be created\n      EOT\n    }`,
  (n) =>
    `  # local_file.d${n} will be destroyed\n  - resource "local_file" "d${n}" {\n      - size = 1 -> null\n    }`,
  (n) =>
    `  # local_file.i${n} will be updated in-place\n  # (imported from "i-${n}")\n  ~ resource "local_file" "i${n}" {\n    }`,
  (n) =>
    `  # local_file.t${n} is tainted, so must be replaced\n\n-/+ resource "local_file" "t${n}" {\n      ~ id = "x" # forces replacement\n    }`,
  (n) =>
    `  # local_file.o${n} has moved to local_file.p${n}\n    resource "local_file" "p${n}" {\n    }`,
];

/**
 * A plan of more resources than its message names, in a job log: past the ones the message keeps,
 * the reader passes over what only a kept resource would show.
 */
const longPlanLog = fc
  .tuple(
    fc.array(fc.nat(BLOCKS.length - 1), { minLength: 55, maxLength: 90 }),
    fc.array(fc.tuple(fc.nat(200), dressing), { maxLength: 6 }),
  )
  .map(([kinds, dressed]) => {
    const lines = [
      "Terraform will perform the following actions:",
      "",
      ...kinds.flatMap((kind, n) => [...(BLOCKS[kind] ?? BLOCKS[0]!)(n).split("\n"), ""]),
      `Plan: ${kinds.length} to add, 0 to change, ${kinds.length} to destroy.`,
    ];
    // A few lines dressed as the runner and a terminal dress them.
    for (const [at, d] of dressed) {
      const index = at % lines.length;
      const line = colorize(lines[index] ?? "", d.colours, SGR);
      lines[index] = `${d.overwrite}${d.marker}${line}${d.crlf ? "\r" : ""}`;
    }
    return `Running with gitlab-runner 18.2.0\n${lines.join("\n")}\n`;
  });

/** A log in pieces cut anywhere, as a socket hands them over. */
const cutUp = (log: string) =>
  fc.array(fc.nat(log.length), { maxLength: 8 }).map((cuts) => splitAt(log, cuts));

const longPlan = longPlanLog.chain(cutUp);

/** The control characters a log seldom holds, which the cleaner removes from its lines. */
const rareControl = fc.constantFrom(
  "\x00",
  "\x01",
  "\x07",
  "\b",
  "\x0b",
  "\x0c",
  "\x0e",
  "\x1a",
  "\x1c",
  "\x1f",
  "\x7f",
);

/**
 * A log with rare control characters put in one line of its lines in three, one to three of them
 * each anywhere in its line: where a landmark's, a marker's, a heredoc's or a heading's words
 * are, or inside an escape sequence or a section marker, they hide them from any rule that reads
 * the line as it stands.
 */
const sprinkled = (log: string) => {
  const lines = log.split("\n");
  const marks = fc.oneof(
    { weight: 2, arbitrary: fc.constant([]) },
    {
      weight: 1,
      arbitrary: fc.array(fc.tuple(fc.nat(), rareControl), { minLength: 1, maxLength: 3 }),
    },
  );
  return fc.array(marks, { minLength: lines.length, maxLength: lines.length }).map((all) =>
    lines
      .map((line, index) =>
        (all[index] ?? []).reduce((text, [at, control]) => {
          const cut = at % (text.length + 1);
          return `${text.slice(0, cut)}${control}${text.slice(cut)}`;
        }, line),
      )
      .join("\n"),
  );
};

describe("reading a plan job's log", () => {
  it("reads a log as the cleaner's lines read one by one, cut anywhere", () => {
    fc.assert(
      fc.property(pieces, overwrittenMode, (parts, overwritten) => {
        const expected = reference(parts, overwritten);
        expect(read(parts, overwritten, false).plan).toEqual(expected.plan);
        expect(read(parts, overwritten, true)).toEqual(expected);
      }),
      RUNS,
    );
  });

  it("reads what a plan's message keeps of a plan longer than it names as every line read does", () => {
    fc.assert(
      fc.property(longPlan, overwrittenMode, (parts, overwritten) => {
        const expected = reference(parts, overwritten, messageResources()).plan;
        expect(read(parts, overwritten, false, messageResources()).plan).toEqual(expected);
        expect(read(parts, overwritten, true, messageResources()).plan).toEqual(expected);
      }),
      { numRuns: 150 },
    );
  });

  it("reads a log after a first line of its own as the cleaner's lines read one by one", () => {
    // The cleaner's shortcuts start once a first line has shown the log has no timestamps.
    fc.assert(
      fc.property(pieces, overwrittenMode, (parts, overwritten) => {
        readsAfterAFirstLine(parts, overwritten);
      }),
      RUNS,
    );
  });

  it("reads a log cut only where its lines end as the cleaner's lines read one by one", () => {
    // Each piece then begins with a line of its own: runs of plain lines start at a chunk's start
    // and end at its end, with no line held over from the piece before.
    const cutAtLineEnds = withEnd.chain((log) => {
      const ends = [...log.matchAll(/\n/g)].map((match) => match.index + 1);
      return fc.subarray(ends).map((cuts) => splitAt(log, cuts));
    });
    fc.assert(
      fc.property(cutAtLineEnds, overwrittenMode, (parts, overwritten) => {
        readsAfterAFirstLine(parts, overwritten);
      }),
      RUNS,
    );
  });

  it("reads a log whose lines hold rare control characters anywhere as the cleaner's lines read one by one", () => {
    // After a first line of their own, the pieces go the shortcuts' way, which check only the
    // lines they make for such characters: the rules that pass lines over read any line one could
    // change.
    const short = withEnd.chain(sprinkled).chain(cutUp);
    fc.assert(
      fc.property(short, overwrittenMode, (parts, overwritten) => {
        readsAfterAFirstLine(parts, overwritten);
      }),
      RUNS,
    );
    const long = longPlanLog.chain(sprinkled).chain(cutUp);
    fc.assert(
      fc.property(long, overwrittenMode, (parts, overwritten) => {
        const apart = ["Running with gitlab-runner 18.2.0\n", ...parts];
        const expected = reference(apart, overwritten, messageResources()).plan;
        expect(read(apart, overwritten, false, messageResources()).plan).toEqual(expected);
      }),
      { numRuns: 150 },
    );
  });

  it("reads no line beside a section marker where only control characters stand", () => {
    // The cleaner leaves such text out, as it does an empty one: read as an empty line, it would
    // end the heading's comments before the import's.
    const plan = [
      "  # local_file.t is tainted, so must be replaced",
      "section_start:1767603600:step_script\r\x1b[0K\x00\x7f",
      '  # (imported from "i-1")',
      '-/+ resource "local_file" "t" {',
      '      ~ id = "x" # forces replacement',
      "    }",
      "",
    ].join("\n");
    const parts = ["Running with gitlab-runner 18.2.0\n", plan];
    const expected = reference(parts, "hide");
    expect(expected.plan.resources).toEqual([
      {
        address: "local_file.t",
        action: "replace",
        replaceOrder: "delete-first",
        reason: 'tainted; imported from "i-1"; id forces replacement',
        importing: true,
      },
    ]);
    expect(read(parts, "hide", false).plan).toEqual(expected.plan);
  });

  it("reads a line whose colours stand inside the words it is passed over by", () => {
    const plan = [
      "  # local_file.b will be updated in-place",
      '  ~ resource "local_file" "b" {',
      "      ~ content = (sensitive value) # forces repl\x1b[32;1macement",
      "    }",
      "\x1b[32;1mTerraform \x1b[0mwill perform the following actions:\x1b[0;m",
      "",
    ].join("\n");
    const parts = ["Running with gitlab-runner 18.2.0\n", plan];
    const expected = reference(parts, "hide");
    expect(expected.plan.resources).toEqual([
      { address: "local_file.b", action: "replace", reason: "content forces replacement" },
    ]);
    expect(read(parts, "hide", false).plan).toEqual(expected.plan);
  });

  it("reads real logs and plans as the cleaner's lines read one by one", () => {
    const logs = [
      readFixture("gitlab-trace/trace_with_sections"),
      readFixture("gitlab-trace/ansi-sequence-and-unicode"),
      readFixture("terraform-plan-text/terraform-plan-comment-basic-1-modify-plan.txt"),
      readFixture("terraform-plan-text/terraform-plan-comment-basic-2-delete-plan.txt"),
    ];
    fc.assert(
      fc.property(cutAnywhere(logs), overwrittenMode, (parts, overwritten) => {
        const expected = reference(parts, overwritten);
        expect(read(parts, overwritten, false).plan).toEqual(expected.plan);
        expect(read(parts, overwritten, true)).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });

  it("reads real plans longer than the message names as every line read does", () => {
    // Each real plan's resource blocks repeated under new names, past the resources the message
    // keeps: what the reader passes over of those it does not name is held to a full read.
    const plans = [
      "terraform-plan-text/terraform-plan-comment-basic-1-modify-plan.txt",
      "terraform-plan-text/terraform-plan-comment-basic-2-delete-plan.txt",
      "terraform-plan-text/atlantis-simple-exp-output-atlantis-plan.txt",
      "terraform-plan-text/atlantis-import-multiple-project-exp-output-plan-again.txt",
    ].map((path) => {
      const plan = readFixture(path);
      const first = plan.indexOf("  # ");
      const end = plan.indexOf("Plan:", first);
      const blocks = plan.slice(first, end);
      // Each resource's name, in its heading and in its marker line, made its own.
      const repeated = Array.from({ length: 60 }, (_, i) =>
        blocks
          .replace(/^(\s*# (?:[\w-]+\.)+)([\w-]+)/gm, `$1$2_${i}`)
          .replace(/^(\s*\S*\s*(?:resource|data) "[^"]+" ")([^"]+)"/gm, `$1$2_${i}"`),
      ).join("");
      return `Running with gitlab-runner 18.2.0\n${plan.slice(0, first)}${repeated}${plan.slice(end)}`;
    });
    fc.assert(
      fc.property(cutAnywhere(plans), overwrittenMode, (parts, overwritten) => {
        const expected = reference(parts, overwritten, messageResources()).plan;
        expect(expected.omitted).toBeDefined();
        expect(read(parts, overwritten, false, messageResources()).plan).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });
});
