import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  beginScan,
  createLineScan,
  passesOver,
  passRun,
} from "../../src/terraform/plan-text-skip.js";
import { readPlanLine, type ResourceList } from "../../src/terraform/plan-text.js";
import {
  createPlanTextState,
  planTextResult,
  type PlanTextState,
} from "../../src/terraform/plan-text-state.js";
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
    '+/- resource "local_file" "c" {',
    '-/+ resource "local_file" "a" {',
    '  +/- resource "local_file" "a" { # x',
    '  - resource "local_file" "d" {',
    "  ~ size = 2",
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
    "          EOT x",
    "          EOT ",
    "          EOT\t",
    "          END",
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

/**
 * A list that keeps no resource any more, as the message's list past the ones it names: what only a
 * kept resource would show (its reasons, its order) is passed over.
 */
const keepingNone = (): ResourceList => ({
  add: () => undefined,
  keeps: () => false,
  list: () => ({ resources: [] }),
});

/**
 * The states `passesOver` decides from: in a resource or not (one the list keeps or not), under
 * its heading, in a heredoc, and the rest. Made afresh for each side of a comparison, as passing
 * a line over may end what the state was in.
 */
const state = fc
  .record({
    current: fc.boolean(),
    action: fc.constantFrom("update", "replace", "create", "no-op"),
    kept: fc.boolean(),
    heredoc: fc.option(fc.tuple(fc.constantFrom("EOT", "END", "x"), fc.nat(10)), {
      nil: undefined,
    }),
    afterHeading: fc.boolean(),
    inOutputs: fc.boolean(),
    inActions: fc.boolean(),
    diagnostic: fc.boolean(),
  })
  .map((flags) => (): PlanTextState => {
    const read = createPlanTextState(flags.kept ? undefined : keepingNone());
    if (flags.current) {
      read.current = {
        resource: { address: "local_file.a", action: flags.action },
        comments: [],
        forcedBy: [],
      };
      read.last = read.current;
      read.afterHeading = flags.afterHeading;
    }
    if (flags.heredoc !== undefined) [read.heredocEnd, read.heredocIndent] = flags.heredoc;
    // Each of these stops a run at once: seldom set, so that most runs go on.
    read.inOutputs = flags.inOutputs && flags.inActions && flags.diagnostic;
    read.inActions = flags.inActions;
    if (flags.diagnostic && flags.afterHeading && flags.kept) {
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

/** What a state shows of itself: what the reader reports, and what it is in the middle of. */
function observed(read: PlanTextState) {
  return {
    result: planTextResult(read),
    current: read.current?.resource.action,
    afterHeading: read.afterHeading,
    heredoc: read.heredocEnd === undefined ? undefined : [read.heredocEnd, read.heredocIndent],
    inActions: read.inActions,
    inOutputs: read.inOutputs,
    diagnostic: read.diagnostic,
  };
}

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
        (make, lines, tail, lead) => {
          // Text before `from` (a line already read) and a tail that is not part of the run.
          const before = "  # local_file.z will be created\n".slice(0, lead % 34);
          const text = `${before}${lines.map((line) => `${line}\n`).join("")}${tail}`;
          const stop = text.length - tail.length;
          const scan = createLineScan();
          beginScan(scan);
          const [fast, slow] = [make(), make()];
          expect(passRun(fast, scan, text, before.length, stop)).toBe(
            lineByLine(slow, text, before.length, stop),
          );
          expect(observed(fast)).toEqual(observed(slow));
        },
      ),
      RUNS,
    );
  });

  it("goes on from where a run stopped with the same searches ahead", () => {
    // One scan over a whole text, as over a chunk: each run begins where the line read ended.
    fc.assert(
      fc.property(state, fc.array(plainLine, { maxLength: 40 }), (make, lines) => {
        const text = lines.map((line) => `${line}\n`).join("");
        const scan = createLineScan();
        beginScan(scan);
        const [fast, slow] = [make(), make()];
        let from = 0;
        while (from < text.length) {
          const at = passRun(fast, scan, text, from, text.length);
          expect(at).toBe(lineByLine(slow, text, from, text.length));
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

  it("passes over only lines whose reading would change nothing reported, ending what reading them would end", () => {
    fc.assert(
      fc.property(state, plainLine, (make, line) => {
        const passed = make();
        const scan = createLineScan();
        beginScan(scan);
        const text = `${line}\n`;
        // A line read is read: nothing to hold it to.
        fc.pre(passRun(passed, scan, text, 0, text.length) === text.length);
        const read = make();
        readPlanLine(read, line);
        expect(observed(passed)).toEqual(observed(read));
      }),
      { numRuns: 2000 },
    );
  });

  it("under a heading, reads its reasons and a marker line that replaces, and passes over a marker line that does not", () => {
    const under = (action: "update" | "replace", list?: ResourceList) => {
      const read = createPlanTextState(list);
      read.inActions = true;
      read.current = { resource: { address: "local_file.a", action }, comments: [], forcedBy: [] };
      read.last = read.current;
      read.afterHeading = true;
      return read;
    };
    const stopsAt = (read: PlanTextState, text: string) => {
      const scan = createLineScan();
      beginScan(scan);
      return passRun(read, scan, text, 0, text.length);
    };
    const reason = "  # (because local_file.b is tainted)\n";
    expect(stopsAt(under("update"), reason)).toBe(0);
    // A marker line that does not replace changes nothing: passed over, ending the comments.
    const marker = '  ~ resource "local_file" "a" {\n      + tags = {\n';
    const read = under("update");
    expect(stopsAt(read, marker)).toBe(marker.length);
    expect(read.afterHeading).toBe(false);
    // One that replaces makes the resource a replacement, and gives the order a kept one shows.
    const replaces = '-/+ resource "local_file" "a" {\n';
    expect(stopsAt(under("update"), replaces)).toBe(0);
    expect(stopsAt(under("replace"), replaces)).toBe(0);
    expect(stopsAt(under("update", keepingNone()), replaces)).toBe(0);
    // A replacement the list will not keep shows neither its order nor its reasons: passed over.
    const settled = under("replace", keepingNone());
    const body = `${replaces}      ~ content = (sensitive value) # forces replacement\n    }\n`;
    expect(stopsAt(settled, body)).toBe(body.length);
  });

  it("ends a heredoc value at its word, and reads a line that only starts like it", () => {
    const read = createPlanTextState();
    read.heredocEnd = "EOT";
    read.heredocIndent = 6;
    const scan = createLineScan();
    beginScan(scan);
    const text = "          # data, not a heading\n        EOTX\n        EOT\n";
    expect(passRun(read, scan, text, 0, text.length)).toBe(text.indexOf("        EOTX"));
    const after = text.indexOf("        EOT\n");
    expect(passRun(read, scan, text, after, text.length)).toBe(text.length);
    expect(read.heredocEnd).toBeUndefined();
  });

  it("opens a heredoc where it stands, and reads a line that may open one and say more", () => {
    const read = createPlanTextState();
    read.current = {
      resource: { address: "local_file.a", action: "update" },
      comments: [],
      forcedBy: [],
    };
    const scan = createLineScan();
    beginScan(scan);
    const text = "      ~ content = <<-EOT\n  # local_file.x will be destroyed\n          EOT\n";
    // A heading less far in than the opener ends the value: it is read.
    expect(passRun(read, scan, text, 0, text.length)).toBe(text.indexOf("  # local_file.x"));
    expect([read.heredocEnd, read.heredocIndent]).toEqual(["EOT", 6]);
    for (const line of [
      "      ~ size = <<EOT # forces replacement",
      "  # local_file.b <<EOT",
      "Plan: <<EOT",
    ]) {
      const fresh = createPlanTextState();
      fresh.current = read.current;
      const alone = createLineScan();
      beginScan(alone);
      expect(passRun(fresh, alone, `${line}\n`, 0, line.length + 1), line).toBe(0);
    }
  });

  it("reads the lines a run must not pass: a heading, a reason, a landmark", () => {
    const read = createPlanTextState();
    read.current = {
      resource: { address: "local_file.a", action: "update" },
      comments: [],
      forcedBy: [],
    };
    for (const line of [
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
