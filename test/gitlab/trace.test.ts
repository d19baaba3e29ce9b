import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cleanTrace, createTraceCleaner, type TraceSection } from "../../src/gitlab/trace.js";
import { fixturePath, readFixture } from "../support/fixtures.js";

interface Cleaned {
  lines: string[];
  sections: readonly TraceSection[];
}

/** Feeds the pieces one after the other, as a log arrives from GitLab. */
function cleanPieces(pieces: readonly string[]): Cleaned {
  const cleaner = createTraceCleaner();
  const lines = pieces.flatMap((piece) => cleaner.push(piece));
  lines.push(...cleaner.end());
  return { lines, sections: cleaner.sections() };
}

/** Splits the UTF-8 bytes at `offset` and decodes them as a stream, like a chunked download. */
function cleanBytesSplitAt(bytes: Uint8Array, offset: number): Cleaned {
  const decoder = new TextDecoder("utf-8");
  const cleaner = createTraceCleaner();
  const lines = [
    ...cleaner.push(decoder.decode(bytes.subarray(0, offset), { stream: true })),
    ...cleaner.push(decoder.decode(bytes.subarray(offset), { stream: true })),
    ...cleaner.push(decoder.decode()),
    ...cleaner.end(),
  ];
  return { lines, sections: cleaner.sections() };
}

// eslint-disable-next-line no-control-regex -- looking for leftover control characters
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/;

/** The job log as GitLab shows it, read from trace_with_sections. */
const JOB_LINES = [
  "Running with gitlab-runner dev (HEAD)",
  "  on kitsune minikube (a21b584f)",
  "WARNING: Namespace is empty, therefore assuming 'default'.",
  "Using Kubernetes namespace: default",
  "Using Kubernetes executor with image alpine:3.4 ...",
  "Waiting for pod default/runner-a21b584f-project-1208199-concurrent-0sg03f to be running, status is Pending",
  "Running on runner-a21b584f-project-1208199-concurrent-0sg03f via kitsune.local...",
  "Cloning repository...",
  "Cloning into '/nolith/ci-tests'...",
  "Checking out dddd7a6e as master...",
  "Skipping Git submodules setup",
  "$ whoami",
  "root",
  "Job succeeded",
  // The log ends with `\e[0;m\n`: a last line that is empty once its colour reset is gone.
  "",
];

const JOB_SECTIONS = [
  "prepare_script",
  "get_sources",
  "restore_cache",
  "download_artifacts",
  "build_script",
  "after_script",
  "archive_cache",
  "upload_artifacts",
];

/** Each section's [startLine, endLine) in JOB_LINES, and its start and end times. */
function jobSections(offset: number): TraceSection[] {
  const spans: [string, number, number, number, number][] = [
    ["prepare_script", 5, 7, 1506004954, 1506004957],
    ["get_sources", 7, 11, 1506004957, 1506004958],
    ["restore_cache", 11, 11, 1506004958, 1506004958],
    ["download_artifacts", 11, 11, 1506004958, 1506004958],
    ["build_script", 11, 13, 1506004958, 1506004959],
    ["after_script", 13, 13, 1506004959, 1506004959],
    ["archive_cache", 13, 13, 1506004959, 1506004959],
    ["upload_artifacts", 13, 13, 1506004959, 1506004959],
  ];
  return spans.map(([name, startLine, endLine, startedAt, endedAt]) => ({
    name,
    startedAt,
    endedAt,
    options: {},
    startLine: startLine + offset,
    endLine: endLine + offset,
  }));
}

describe("cleaning GitLab job logs from test/fixtures/gitlab-trace", () => {
  it("has a test for every trace fixture", () => {
    const files = readdirSync(fixturePath("gitlab-trace")).sort();
    expect(files).toEqual([
      "ansi-sequence-and-unicode",
      "trace_with_duplicate_sections",
      "trace_with_sections",
    ]);
  });

  it("turns trace_with_sections into the lines GitLab shows, without markers or escapes", () => {
    const raw = readFixture("gitlab-trace/trace_with_sections");
    const clean = cleanTrace(raw);

    expect(clean).toBe(`${JOB_LINES.join("\n")}\n`);
    expect(clean).toContain("$ whoami\nroot\n");
    expect(clean).not.toContain("section_");
    expect(clean).not.toContain("\x1b");
    expect(clean).not.toMatch(CONTROL);
  });

  it("records every section of trace_with_sections with the lines it spans", () => {
    const cleaner = createTraceCleaner();
    const lines = [
      ...cleaner.push(readFixture("gitlab-trace/trace_with_sections")),
      ...cleaner.end(),
    ];

    expect(cleaner.sectionNames()).toEqual(JOB_SECTIONS);
    expect(cleaner.sections()).toEqual(jobSections(0));
    const build = cleaner.sections().find((section) => section.name === "build_script");
    expect(lines.slice(build?.startLine, build?.endLine)).toEqual(["$ whoami", "root"]);
    expect(cleaner.timestamped()).toBe(false);
  });

  it("cleans a log whose sections recur and lists each occurrence", () => {
    const cleaner = createTraceCleaner();
    const lines = [
      ...cleaner.push(readFixture("gitlab-trace/trace_with_duplicate_sections")),
      ...cleaner.end(),
    ];

    expect(lines).toEqual([...JOB_LINES, ...JOB_LINES]);
    expect(cleaner.sectionNames()).toEqual(JOB_SECTIONS);
    expect(cleaner.sections()).toEqual([...jobSections(0), ...jobSections(JOB_LINES.length)]);
    expect(lines.join("\n")).not.toContain("section_");
    expect(lines.join("\n")).not.toContain("\x1b");
  });

  it("removes colour codes and keeps emoji, kaomoji and CJK text intact", () => {
    const clean = cleanTrace(readFixture("gitlab-trace/ansi-sequence-and-unicode"));

    expect(clean.split("\n")).toEqual([".", "..", "😺", "ヾ(´༎ຶД༎ຶ`)ﾉ", "許功蓋", ""]);
  });

  it.each(["trace_with_sections", "trace_with_duplicate_sections", "ansi-sequence-and-unicode"])(
    "gives the same lines and sections for %s however its bytes are split",
    (name) => {
      const raw = readFixture(`gitlab-trace/${name}`);
      const bytes = new TextEncoder().encode(raw);
      const whole = cleanPieces([raw]);

      for (let offset = 0; offset <= bytes.length; offset += 1) {
        expect(cleanBytesSplitAt(bytes, offset), `split at byte ${offset}`).toEqual(whole);
      }
      for (let offset = 0; offset <= raw.length; offset += 1) {
        const pieces = [raw.slice(0, offset), raw.slice(offset)];
        expect(cleanPieces(pieces), `split at character ${offset}`).toEqual(whole);
      }
      // One UTF-16 code unit at a time, which also splits emoji surrogate pairs.
      const units = Array.from({ length: raw.length }, (_, i) => raw.charAt(i));
      expect(cleanPieces(units)).toEqual(whole);
    },
  );
});

describe("cleaning job log lines", () => {
  it("shows only what follows the last carriage return, like a terminal progress bar", () => {
    expect(cleanTrace("a\rb")).toBe("b");
    expect(cleanTrace("Downloading 10%\rDownloading 55%\rDownloading 100%\ndone\n")).toBe(
      "Downloading 100%\ndone\n",
    );
  });

  it("keeps overwritten text as lines of its own when asked, for readers that must see it all", () => {
    const raw = "  # vm will be destroyed\r\x1b[32;1mRefreshing...\x1b[0;m\nnext\r\n\rlast\n";
    expect(cleanTrace(raw, { overwritten: "keep" })).toBe(
      "  # vm will be destroyed\nRefreshing...\nnext\nlast\n",
    );
    expect(cleanTrace(raw)).toBe("Refreshing...\nnext\nlast\n");
    expect(cleanTrace("\n\n", { overwritten: "keep" })).toBe("\n\n");
  });

  it("treats CRLF as a line break", () => {
    expect(cleanTrace("one\r\ntwo\r\n")).toBe("one\ntwo\n");
  });

  it("keeps the text after a section marker: its carriage return is not an overwrite", () => {
    const raw = "section_start:1700000000:step_script[collapsed=true]\r\x1b[0K$ terraform plan\n";
    const cleaner = createTraceCleaner();

    expect(cleaner.push(raw)).toEqual(["$ terraform plan"]);
    expect(cleaner.sections()).toEqual([
      {
        name: "step_script",
        startedAt: 1700000000,
        options: { collapsed: "true" },
        startLine: 0,
      },
    ]);
  });

  it("starts a new line at a section marker in the middle of a line, as GitLab does", () => {
    expect(cleanTrace("no newline heresection_end:1700000001:step_script\r\x1b[0Knext\n")).toBe(
      "no newline here\nnext\n",
    );
  });

  it("keeps section-like text that lacks the marker suffix", () => {
    expect(cleanTrace("echo section_start:1:name\n")).toBe("echo section_start:1:name\n");
  });

  it("removes erase-in-line, cursor, OSC hyperlink and charset sequences", () => {
    const raw = [
      "\x1b[0K\x1b[2J\x1b[1;1Hcleared",
      "\x1b]8;;https://example.com\x07link\x1b]8;;\x07 text",
      "\x1b(Bplain\x1b[?25l",
      "cut off \x1b[38;5",
    ].join("\n");

    expect(cleanTrace(raw).split("\n")).toEqual(["cleared", "link text", "plain", "cut off "]);
  });

  it("keeps tabs and removes other control characters", () => {
    expect(cleanTrace("a\tb\x07c\x00")).toBe("a\tbc");
  });

  it("removes a control character that first appears late in the log, or in a held line", () => {
    const cleaner = createTraceCleaner();

    expect(cleaner.push("plain\nbell")).toEqual(["plain"]);
    expect(cleaner.push("\x07 rings\nback\x08space\n")).toEqual(["bell rings", "backspace"]);
    expect(cleaner.push("vertical\x0btab\nplain again\n")).toEqual(["verticaltab", "plain again"]);
  });

  it("keeps blank lines from program output", () => {
    expect(cleanTrace("a\n\nb\n")).toBe("a\n\nb\n");
  });

  it("returns lines only once they are complete", () => {
    const cleaner = createTraceCleaner();

    expect(cleaner.push("first li")).toEqual([]);
    expect(cleaner.push("ne\nsecond")).toEqual(["first line"]);
    expect(cleaner.end()).toEqual(["second"]);
  });
});

describe("cleaning job logs with runner timestamps (FF_TIMESTAMPS)", () => {
  // The runner's prefix: RFC 3339 UTC time with microseconds, a space, the stream number in two
  // hex digits, O (stdout) or E (stderr), then `+` for a continuation or a space.
  const timestamped = [
    "2024-01-01T00:00:00.000000Z 00O \x1b[0KRunning with gitlab-runner 17.0.0 (44feccdf)\x1b[0;m",
    "2024-01-01T00:00:00.100000Z 00O section_start:1704067200:prepare_executor\r\x1b[0K",
    '2024-01-01T00:00:00.100001Z 00O+\x1b[0K\x1b[36;1mPreparing the "docker" executor\x1b[0;m\x1b[0;m',
    "2024-01-01T00:00:01.000000Z 01E warning: written to stderr",
    "2024-01-01T00:00:01.500000Z 01O output the runner split",
    "2024-01-01T00:00:01.500001Z 01O+ into two records",
    "2024-01-01T00:00:02.000000Z 01O ",
    "2024-01-01T00:00:02.000001Z 00O section_end:1704067202:prepare_executor\r\x1b[0K",
    "2024-01-01T00:00:02.000002Z 00O+\x1b[32;1mJob succeeded\x1b[0;m",
    "",
  ].join("\n");

  const expected = [
    "Running with gitlab-runner 17.0.0 (44feccdf)",
    'Preparing the "docker" executor',
    "warning: written to stderr",
    "output the runner split into two records",
    "",
    "Job succeeded",
  ];

  it("removes the prefixes from stdout and stderr lines and joins continuations", () => {
    const cleaner = createTraceCleaner();
    const lines = [...cleaner.push(timestamped), ...cleaner.end()];

    expect(lines).toEqual(expected);
    expect(cleaner.timestamped()).toBe(true);
    expect(cleaner.sections()).toEqual([
      {
        name: "prepare_executor",
        startedAt: 1704067200,
        endedAt: 1704067202,
        options: {},
        startLine: 1,
        endLine: 5,
      },
    ]);
  });

  it("gives the same lines however a timestamped log is split", () => {
    const whole = cleanPieces([timestamped]);
    for (let offset = 0; offset <= timestamped.length; offset += 1) {
      const pieces = [timestamped.slice(0, offset), timestamped.slice(offset)];
      expect(cleanPieces(pieces), `split at ${offset}`).toEqual(whole);
    }
  });

  it("holds a line back until the next one shows it is not continued", () => {
    const cleaner = createTraceCleaner();

    expect(cleaner.push("2024-01-01T00:00:00.000000Z 00O part one\n")).toEqual([]);
    expect(cleaner.push("2024-01-01T00:00:00.000001Z 00O+, part two\n")).toEqual([]);
    expect(cleaner.push("2024-01-01T00:00:01.000000Z 00O next\n")).toEqual(["part one, part two"]);
    expect(cleaner.end()).toEqual(["next"]);
  });

  it("leaves a date at the start of a line alone in a log without prefixes", () => {
    const raw = "plain first line\n2024-01-01T00:00:00.000000Z 00O looks like a prefix\n";

    expect(cleanTrace(raw)).toBe(raw);
  });
});
