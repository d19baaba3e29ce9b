import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  beginScan,
  createLineScan,
  passesOver,
  passRun,
} from "../../src/terraform/plan-text-skip.js";
import { createPlanTextState, type PlanTextState } from "../../src/terraform/plan-text-state.js";
import { hostileText } from "../support/generators.js";

const RUNS = { numRuns: 500 };

/**
 * Lines as a plan job's log holds them outside escapes and carriage returns: the plan's own, the
 * ones that only look like them, and those whose first or last characters decide alone.
 */
const plainLine = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "   ",
    "        ",
    "{",
    "<",
    "#",
    "  #",
    "  # ",
    "  # local_file.a will be created",
    "  # local_file.b must be replaced",
    "  # local_file.d has moved to local_file.e",
    "  # local_file.d has moved to ",
    "  # x will be invoked",
    "  # action.x.y will be invoked by a",
    "  # (3 unchanged attributes hidden)",
    "  # (because local_file.a is tainted)",
    "  # local_file.f has changed",
    '-/+ resource "local_file" "b" {',
    '  ~ resource "local_file" "g" { # x',
    "      ~ content = (sensitive value) # forces replacement",
    "      ~ content = <<-EOT # forces replacement",
    "      + script  = <<EOT",
    "      + tags    = {",
    "      + list    = [",
    "      + a       = 1 <",
    "      + b       = x<",
    "      + c       = x <y",
    "replacement",
    "forces replacement",
    " forces replacement",
    "t",
    "          + just a line",
    "        EOT",
    "EOT",
    "  EOTX",
    "    }",
    "\t+ tabbed = 1",
    "  + trailing space ",
    '      + täg    = "ünïcode ✓"',
    "  \u00a0# local_file.h will be created",
    "Plan: 1 to add, 0 to change, 1 to destroy.",
    "Plan:",
    "Pla",
    "No changes. Your infrastructure matches the configuration.",
    "Terraform will perform the following actions:",
    "Terraform has been successfully initialized!",
    "Changes to Outputs:",
    "Error: x",
    "Warning: y",
    "Warnings",
    "E",
    "╷",
    "│ Error: z",
  ),
  fc
    .tuple(fc.nat(12), fc.stringMatching(/^[ -~]{0,20}$/))
    .map(([indent, text]) => `${" ".repeat(indent)}${text}`),
  hostileText.map((text) => text.replace(/[\n\r]/g, "").replaceAll("\x1b", "")),
);

/** The states `passesOver` decides from: in a resource or not, in a heredoc, and the rest. */
const state = fc
  .record({
    current: fc.boolean(),
    heredoc: fc.option(fc.tuple(fc.constantFrom("EOT", "END", "x"), fc.nat(10)), {
      nil: undefined,
    }),
    afterHeading: fc.boolean(),
    inOutputs: fc.boolean(),
    inActions: fc.boolean(),
    diagnostic: fc.boolean(),
  })
  .map((flags): PlanTextState => {
    const read = createPlanTextState();
    if (flags.current) {
      read.current = {
        resource: { address: "local_file.a", action: "update" },
        comments: [],
        forcedBy: [],
      };
    }
    if (flags.heredoc !== undefined) [read.heredocEnd, read.heredocIndent] = flags.heredoc;
    // Each of these stops a run at once: seldom set, so that most runs go on.
    read.afterHeading = flags.afterHeading && flags.inOutputs;
    read.inOutputs = flags.inOutputs && flags.inActions;
    read.inActions = flags.inActions && flags.diagnostic;
    if (flags.diagnostic && flags.afterHeading) {
      read.diagnostic = {
        framed: true,
        summary: "",
        detail: [],
        chars: 0,
        truncated: false,
        sawDetailText: false,
        afterBlank: false,
        introduces: false,
      };
    }
    return read;
  });

/**
 * Where `passesOver`, asked about each line of `text` from `from` in turn (each ending before
 * `stop`), first says a line is to be read: the reference `passRun` is held to.
 */
function lineByLine(read: PlanTextState, text: string, from: number, stop: number): number {
  const scan = createLineScan();
  beginScan(scan);
  let start = from;
  for (let end = text.indexOf("\n", start); end !== -1 && end < stop;) {
    let first = start;
    while (first < end && text.charCodeAt(first) === 0x20) first += 1;
    if (!passesOver(read, scan, text, first, first - start, end - 1, end)) return start;
    start = end + 1;
    end = text.indexOf("\n", start);
  }
  return start;
}

describe("passing over a run of plain lines", () => {
  it("stops at the line passesOver would read first, whatever the state", () => {
    fc.assert(
      fc.property(
        state,
        fc.array(plainLine, { maxLength: 30 }),
        fc.constantFrom("", "tail without newline", "\x1b[0m after an escape", "a\r\n"),
        fc.nat(),
        (read, lines, tail, lead) => {
          // Text before `from` (a line already read) and a tail that is not part of the run.
          const before = "  # local_file.z will be created\n".slice(0, lead % 34);
          const text = `${before}${lines.map((line) => `${line}\n`).join("")}${tail}`;
          const stop = text.length - tail.length;
          const scan = createLineScan();
          beginScan(scan);
          expect(passRun(read, scan, text, before.length, stop)).toBe(
            lineByLine(read, text, before.length, stop),
          );
        },
      ),
      RUNS,
    );
  });

  it("goes on from where a run stopped with the same searches ahead", () => {
    // One scan over a whole text, as over a chunk: each run begins where the line read ended.
    fc.assert(
      fc.property(state, fc.array(plainLine, { maxLength: 40 }), (read, lines) => {
        const text = lines.map((line) => `${line}\n`).join("");
        const scan = createLineScan();
        beginScan(scan);
        let from = 0;
        while (from < text.length) {
          const at = passRun(read, scan, text, from, text.length);
          expect(at).toBe(lineByLine(read, text, from, text.length));
          if (at === text.length) break;
          // The line not passed over is read (here: skipped) and the next run starts after it.
          from = text.indexOf("\n", at) + 1;
        }
      }),
      RUNS,
    );
  });

  it("passes over blank lines and lines of spaces, and stops before a line cut by the stop", () => {
    const read = createPlanTextState();
    const scan = createLineScan();
    const text = "\n   \n\n      + a = 1\n  # (1 unchanged attribute hidden)\n    }\n  + b = 2";
    beginScan(scan);
    expect(passRun(read, scan, text, 0, text.length)).toBe(text.lastIndexOf("\n") + 1);
    beginScan(scan);
    // A stop inside a line: that line is not passed over, its newline being after the stop.
    const cut = text.indexOf("}");
    expect(passRun(read, scan, text, 0, cut)).toBe(text.lastIndexOf("\n", cut) + 1);
  });

  it("reads the lines a run must not pass: a `{`, a `<` after a word, a heading", () => {
    const read = createPlanTextState();
    read.current = {
      resource: { address: "local_file.a", action: "update" },
      comments: [],
      forcedBy: [],
    };
    for (const line of [
      '  ~ resource "local_file" "a" {',
      "      + tags = {",
      "      ~ content = <<EOT",
      "  # local_file.b will be destroyed",
      "  # local_file.c has moved to local_file.d",
      "      ~ size = 2 # forces replacement",
      "Plan: 0 to add, 1 to change, 0 to destroy.",
    ]) {
      const text = `      + a = 1\n${line}\n      + b = 2\n`;
      const scan = createLineScan();
      beginScan(scan);
      expect(passRun(read, scan, text, 0, text.length)).toBe(text.indexOf("\n") + 1);
    }
  });

  it("under the actions header every plan prints, reads only what may be a resource line of Terraform before 0.12", () => {
    const read = createPlanTextState();
    read.inActions = true;
    read.current = {
      resource: { address: "local_file.a", action: "update" },
      comments: [],
      forcedBy: [],
    };
    const passed = (line: string) => {
      const scan = createLineScan();
      beginScan(scan);
      const text = `${line}\n`;
      let first = 0;
      while (text.charCodeAt(first) === 0x20) first += 1;
      return passesOver(read, scan, text, first, first, text.length - 2, text.length - 1);
    };
    // Inside a resource block of Terraform 0.12 and later: passed over.
    expect(passed('      ~ content_md5 = "80080f5c" -> (known after apply)')).toBe(true);
    expect(passed("          + just a line")).toBe(true);
    expect(passed("        # (3 unchanged attributes hidden)")).toBe(true);
    expect(passed("    }")).toBe(true);
    expect(passed("")).toBe(true);
    // Two spaces in or fewer: a resource line of Terraform before 0.12 may stand there.
    expect(passed("  + aws_instance.web")).toBe(false);
    expect(passed(" ~ aws_instance.web")).toBe(false);
    expect(passed("-/+ aws_instance.db (tainted) (new resource required)")).toBe(false);
    // The same line outside the actions list is passed over by the other rules.
    read.inActions = false;
    expect(passed("  + aws_instance.web")).toBe(true);
  });
});
