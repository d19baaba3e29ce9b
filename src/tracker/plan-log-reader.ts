/**
 * Reading a plan job's log as it streams in: the trace cleaner and the plan text parser in one,
 * the cleaner showing each line to the parser where it stands in its chunk, and making only the
 * lines the parser reads (resource headings, landmarks, diagnostics, and what a resource its list
 * keeps says of itself) unless every line is wanted for a file.
 */
import { createTraceCleaner, type LineSink, type TraceCleanerOptions } from "../gitlab/trace.js";
import {
  createPlanTextParser,
  mayBeCutHeading,
  type PlanTextResult,
  type ResourceList,
} from "../terraform/plan-text.js";

export interface PlanLogReaderOptions {
  /** What becomes of text a carriage return overwrites: see `TraceCleanerOptions`. */
  overwritten?: TraceCleanerOptions["overwritten"];
  /** Hand out every clean line (for a copy of the log), not only read the plan from them. */
  keepLines?: boolean;
  /** Where the plan's resources go: every one is kept unless told otherwise. */
  resources?: ResourceList;
}

export interface PlanLogReader {
  /** Reads a piece of the log; returns the clean lines it completed when keeping lines. */
  push(text: string): readonly string[];
  /**
   * Ends the log: the clean lines still held, and its last line when the log did not end with a
   * newline. That line may be cut short, and is read only if it cannot be a heading cut short.
   */
  end(): { lines: string[]; last: string | undefined };
  /** The plan as read so far. */
  result(): PlanTextResult;
}

const NONE: readonly string[] = Object.freeze([]);

export function createPlanLogReader(options: PlanLogReaderOptions = {}): PlanLogReader {
  // The plan is all it reads: the sections the log's markers open are never asked for.
  const cleaner = createTraceCleaner({
    overwritten: options.overwritten ?? "hide",
    keepSections: false,
  });
  const parser = createPlanTextParser(options.resources);
  const keepLines = options.keepLines === true;
  let kept: string[] = [];
  // Whether the log's last piece ended with a newline: if not, its last line is cut.
  let ended = true;
  const sink: LineSink = keepLines
    ? {
        wantsEveryLine: true,
        begin: () => undefined,
        passes: () => false,
        passRun: (_text, from) => from,
        line: (line) => {
          kept.push(line);
          readKept(line);
        },
      }
    : {
        wantsEveryLine: false,
        begin: (text) => {
          parser.begin(text);
        },
        passes: (text, first, indent, last, end) => parser.passes(text, first, indent, last, end),
        passRun: (text, from, stop) => parser.passRun(text, from, stop),
        // The cleaner's lines hold no newline and no carriage return.
        line: (line) => {
          parser.pushLine(line);
        },
      };
  /** A kept line, made anyway: passed over by its indentation and characters as any other. */
  function readKept(line: string): void {
    let first = 0;
    while (line.charCodeAt(first) === 0x20) first += 1;
    parser.begin(line);
    if (!parser.passes(line, first, first, line.length - 1, line.length)) parser.pushLine(line);
  }
  return {
    push(text) {
      if (text !== "") ended = text.endsWith("\n");
      cleaner.pushTo(text, sink);
      if (!keepLines) return NONE;
      const lines = kept;
      kept = [];
      return lines;
    },
    end() {
      const lines = cleaner.end();
      const last = ended ? undefined : lines.pop();
      for (const line of lines) parser.push(line);
      if (last !== undefined && !mayBeCutHeading(last)) parser.push(last);
      return { lines, last };
    },
    result: () => parser.result(),
  };
}
