import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  cleanTrace,
  createTraceCleaner,
  type TraceCleanerOptions,
  type TraceSection,
} from "../../src/gitlab/trace.js";
import { stripControls, stripEscapes } from "../../src/gitlab/trace-escapes.js";
import { readFixture } from "../support/fixtures.js";
import { colorize, cutPoints, printable, SGR, splitAt } from "../support/generators.js";

const RUNS = { numRuns: 300 };

const FIXTURES = [
  "gitlab-trace/trace_with_sections",
  "gitlab-trace/trace_with_duplicate_sections",
  "gitlab-trace/ansi-sequence-and-unicode",
];

// eslint-disable-next-line no-control-regex -- looking for leftover control characters
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

interface Cleaned {
  lines: string[];
  sections: readonly TraceSection[];
  timestamped: boolean | undefined;
}

function clean(pieces: readonly string[], options: TraceCleanerOptions = {}): Cleaned {
  const cleaner = createTraceCleaner(options);
  const lines = pieces.flatMap((piece) => cleaner.push(piece));
  lines.push(...cleaner.end());
  return {
    lines,
    sections: structuredClone(cleaner.sections()),
    timestamped: cleaner.timestamped(),
  };
}

/**
 * `clean`, the lines handed to a sink: each one it is shown is read (made) or, with `passAll`,
 * passed over, one by one or in runs, and then only the sections are kept.
 */
function cleanTo(pieces: readonly string[], overwritten: "hide" | "keep", passAll: boolean) {
  const cleaner = createTraceCleaner({ overwritten });
  const lines: string[] = [];
  const sink = {
    wantsEveryLine: false,
    begin: () => undefined,
    passes: () => passAll,
    passRun: (text: string, from: number, stop: number) => {
      const newline = text.lastIndexOf("\n", stop - 1);
      return passAll && newline >= from ? newline + 1 : from;
    },
    line: (line: string) => lines.push(line),
  };
  for (const piece of pieces) cleaner.pushTo(piece, sink);
  lines.push(...cleaner.end());
  return {
    lines: passAll ? [] : lines,
    sections: structuredClone(cleaner.sections()),
    timestamped: cleaner.timestamped(),
  };
}

/** What a job log is made of: output, line ends, markers, escapes, runner timestamps. */
const logPiece = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 12 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "\n",
      "\r\n",
      "\r",
      "\t",
      "\x1b[0K",
      "\x1b[32;1m",
      "\x1b[0;m",
      "\x1b[",
      "\x1b]8;;https://x\x07",
      "\x1b]0;title",
      "\x1bP",
      "\x1b\\",
      "\x1b(B",
      "\x1b",
      "\x07",
      "\x00",
      "\x7f",
      "section_start:1506004954:prepare_script\r\x1b[0K",
      "section_start:1:build[collapsed=true]\r\x1b[0K",
      "section_start:1:a[k=v, x=y]\r\x1b[0K",
      "section_end:1506004957:prepare_script\r\x1b[0K",
      "section_end:2:build\r\x1b[0K",
      "section_end:9:never_opened\r\x1b[0K",
      "section_start:",
      "section_end:12:",
      "2024-01-01T00:00:00.000000Z 00O ",
      "2024-01-01T00:00:00.000000Z 01E+",
      "2024-01-01T00:00:00.000000Z 00O+",
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 8 }) },
);

const jobLog = fc.array(logPiece, { maxLength: 60 }).map((pieces) => pieces.join(""));

/** The control characters most logs carry (tab, newline, `\r`, ESC) and none of the others. */
// eslint-disable-next-line no-control-regex -- these are the characters to leave out
const RARE_CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]/g;

/** A job log as most are: escapes, markers and carriage returns, but no other control character. */
const commonLog = fc
  .array(
    fc.oneof(
      { weight: 3, arbitrary: logPiece },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          "\x1b[",
          "\x1b[1;",
          "\x1b[?25",
          "\x1b[1 q",
          "\x1b[ ",
          "\x1b]",
          "\x1b]0;x\x1b\\",
          "\x1bX",
          "\x1b^x",
          "\x1b_x\x1b",
          "\x1b #",
          "\x1b(",
          "\x1b(0",
          "[32m",
          "\\",
        ),
      },
    ),
    { maxLength: 60 },
  )
  .map((pieces) => pieces.join("").replace(RARE_CONTROL, ""));

/** Cut points for a log: where its chunks end. */
const chunked = (log: string, offsets: readonly number[]) =>
  splitAt(
    log,
    offsets.map((offset) => offset % (log.length + 1)),
  );

/** Plain output: no escapes, no carriage returns, no markers. */
const plainLog = fc
  .array(
    fc.oneof(
      { weight: 4, arbitrary: fc.string({ maxLength: 16 }) },
      { weight: 2, arbitrary: fc.constant("\n") },
      { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 6 }) },
    ),
    { maxLength: 40 },
  )
  .map((pieces) => printable(pieces.join("")));

describe("cleaning a job log", () => {
  it("never throws, leaves no control character and never makes the log longer", () => {
    fc.assert(
      fc.property(jobLog, (log) => {
        const { lines, sections } = clean([log]);
        for (const line of lines) expect(line).not.toMatch(CONTROL);
        expect(cleanTrace(log).length).toBeLessThanOrEqual(log.length);
        // A bounded number of lines and sections: one per newline or marker at most.
        const markers = log.split("section_").length - 1;
        expect(lines.length).toBeLessThanOrEqual(log.split("\n").length + markers);
        expect(sections.length).toBeLessThanOrEqual(markers);
        for (const section of sections) {
          expect(section.startLine).toBeLessThanOrEqual(lines.length);
          if (section.endLine !== undefined) {
            expect(section.endLine).toBeGreaterThanOrEqual(section.startLine);
            expect(section.endLine).toBeLessThanOrEqual(lines.length);
          }
        }
      }),
      RUNS,
    );
  });

  it("gives the same lines, sections and timestamp mode however the log is split into chunks", () => {
    fc.assert(
      fc.property(jobLog, fc.array(fc.nat(), { maxLength: 8 }), (log, offsets) => {
        expect(clean(chunked(log, offsets))).toEqual(clean([log]));
      }),
      RUNS,
    );
  });

  it("never takes back a line it has handed out: what a cut log gave is how the whole log starts", () => {
    fc.assert(
      fc.property(jobLog, fc.nat(), (log, at) => {
        const cut = at % (log.length + 1);
        const early = createTraceCleaner().push(log.slice(0, cut));
        expect(clean([log]).lines.slice(0, early.length)).toEqual(early);
      }),
      RUNS,
    );
  });

  it("reads CRLF line ends as LF", () => {
    fc.assert(
      fc.property(jobLog, (log) => {
        fc.pre(!log.includes("Z 0")); // runner timestamps: a `+` line may continue after a `\r`
        expect(cleanTrace(log.replaceAll("\n", "\r\n"))).toBe(cleanTrace(log));
      }),
      RUNS,
    );
  });

  it("gives the same text for coloured output as for the plain output", () => {
    fc.assert(
      fc.property(
        plainLog,
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.array(fc.constantFrom(...SGR), { minLength: 1, maxLength: 5 }),
        (log, positions, codes) => {
          expect(cleanTrace(colorize(log, positions, codes))).toBe(cleanTrace(log));
        },
      ),
      RUNS,
    );
  });

  it("cleans a large hostile log in one pass (bounded by the test's timeout)", () => {
    // 100,000 sections that never end, then as many end markers of a section never started, each
    // of which is looked up among the open ones; then long escapes and runs of carriage returns.
    const count = 100_000;
    const log = [
      "section_start:1:open_forever\r\x1b[0K".repeat(count),
      "section_end:2:never_started\r\x1b[0K".repeat(count),
      `\x1b[${"1;".repeat(50)}\x1b]${"x".repeat(50)}${"\r".repeat(10)}\n`.repeat(count / 10),
    ].join("\n");
    const { lines, sections } = clean([log]);
    expect(sections).toHaveLength(count);
    expect(sections.every((section) => section.endLine === undefined)).toBe(true);
    expect(lines.length).toBeLessThanOrEqual(log.split("\n").length);
  });
});

describe("the shortcuts for text with no rare control character", () => {
  it("strip escapes as the pattern does", () => {
    fc.assert(
      fc.property(commonLog, (log) => {
        const line = log.replace(/[\r\n]/g, "");
        expect(stripEscapes(line)).toBe(stripControls(line));
      }),
      { numRuns: 1000 },
    );
  });

  for (const overwritten of ["hide", "keep"] as const) {
    it(`give the lines, sections and timestamp mode of the line-by-line reading (overwritten text: ${overwritten})`, () => {
      fc.assert(
        fc.property(
          fc.oneof(commonLog, jobLog),
          fc.array(fc.nat(), { maxLength: 8 }),
          fc.boolean(),
          (log, offsets, firstLineApart) => {
            // The shortcuts start once the first line has shown the log has no timestamps.
            const pieces = [...(firstLineApart ? ["output\n"] : []), ...chunked(log, offsets)];
            expect(clean(pieces, { overwritten })).toEqual(
              clean(pieces, { overwritten, lineByLine: true }),
            );
          },
        ),
        { numRuns: 500 },
      );
    });
  }

  it("hand a sink the lines and sections they return, whichever lines it passes over", () => {
    const logInPieces = fc
      .tuple(fc.oneof(commonLog, jobLog), fc.array(fc.nat(), { maxLength: 8 }), fc.boolean())
      .map(([log, offsets, apart]) => [...(apart ? ["output\n"] : []), ...chunked(log, offsets)]);
    fc.assert(
      fc.property(logInPieces, fc.constantFrom("hide", "keep"), (pieces, overwritten) => {
        const pushed = clean(pieces, { overwritten });
        expect(cleanTo(pieces, overwritten, false)).toEqual(pushed);
        expect(cleanTo(pieces, overwritten, true)).toEqual({ ...pushed, lines: [] });
      }),
      { numRuns: 1000 },
    );
  });

  it("give the line-by-line reading of the GitLab fixtures, cut anywhere", () => {
    for (const name of FIXTURES) {
      const log = readFixture(name);
      for (const cut of cutPoints(log, 200)) {
        const pieces = [log.slice(0, cut), log.slice(cut)];
        expect(clean(pieces)).toEqual(clean(pieces, { lineByLine: true }));
      }
    }
  });
});

describe("cleaning cut and re-encoded copies of the GitLab fixtures", () => {
  for (const name of FIXTURES) {
    const log = readFixture(name);

    it(`cleans ${name} cut at any point without throwing, agreeing with the whole log`, () => {
      const whole = clean([log]).lines;
      for (const cut of cutPoints(log, 3000)) {
        const cleaner = createTraceCleaner();
        const early = cleaner.push(log.slice(0, cut));
        expect(whole.slice(0, early.length)).toEqual(early);
        const rest = cleaner.end();
        expect(rest.length).toBeLessThanOrEqual(1);
        for (const line of [...early, ...rest]) expect(line).not.toMatch(CONTROL);
      }
    });

    it(`cleans ${name} with CRLF line ends as with LF`, () => {
      expect(clean([log.replaceAll("\n", "\r\n")])).toEqual(clean([log]));
    });

    it(`cleans ${name} with extra colour codes anywhere between its escapes as without`, () => {
      // Not inside an escape sequence or a section marker, which a code would split.
      const spans = [
        // eslint-disable-next-line no-control-regex -- finding escape sequences is the point
        ...log.matchAll(/section_(?:start|end):[^\r\n]*\r\x1b\[0K|\x1b\[[0-?]*[ -/]*[@-~]|\x1b./g),
      ].map((m) => [m.index, m.index + m[0].length] as const);
      const safe = Array.from({ length: log.length + 1 }, (_, i) => i).filter(
        (i) => !spans.some(([start, end]) => i > start && i < end),
      );
      fc.assert(
        fc.property(
          fc.array(fc.nat(), { minLength: 1, maxLength: 30 }),
          fc.array(fc.constantFrom(...SGR), { minLength: 1, maxLength: 5 }),
          (positions, codes) => {
            fc.pre(safe.length > 0);
            const chosen = positions.map((p) => safe[p % safe.length]!);
            expect(cleanTrace(colorize(log, chosen, codes))).toBe(cleanTrace(log));
          },
        ),
        { numRuns: 100 },
      );
    });
  }
});
