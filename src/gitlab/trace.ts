/**
 * Cleaning a GitLab job log (trace) into the plain lines a person reads on the job page.
 *
 * What a raw trace carries besides the program output:
 *
 * - Collapsible section markers, `section_start:<unix>:<name>[<options>]\r\e[0K` and
 *   `section_end:<unix>:<name>\r\e[0K`, anywhere in a line. GitLab starts a new display line at
 *   each marker; so does this cleaner.
 * - ANSI escape sequences: SGR colours (`\e[32;1m`), erase-in-line (`\e[0K`), other CSI, OSC and
 *   charset sequences.
 * - Carriage returns: `a\rb` shows as `b` (progress bars), and `\r\n` ends a line like `\n`.
 * - With the runner's `FF_TIMESTAMPS` (runner 17.0+), a 32-character prefix on every line:
 *   `2024-01-01T00:00:00.000000Z 00O ` — an RFC 3339 UTC time with microseconds, a space, the
 *   stream number as two hex digits, `O` (stdout) or `E` (stderr), and a flag that is `+` when the
 *   line continues the previous one (the newline before it was added by the runner, not by the
 *   program) and a space otherwise. This is the format GitLab itself parses
 *   (`Gitlab::Ci::Trace::Stream::TIMESTAMP_HEADER_REGEX`); like GitLab, the cleaner decides from
 *   the first line whether a log carries these prefixes.
 *
 * The cleaner is a streaming state machine: it holds at most the current unfinished line (two
 * with timestamps, to join continuations), so a 100 MB log is cleaned in little memory. Feed it
 * text decoded with a streaming decoder (`new TextDecoder("utf-8")` with `{ stream: true }`) so
 * that a multi-byte character split between network chunks stays whole.
 */

import {
  createCleanerState,
  endTrace,
  pushChunk,
  type TraceCleanerOptions,
} from "./trace-reader.js";
import { listSections, sectionNames, type TraceSection } from "./trace-sections.js";
import { pushChunkTo, type LineSink } from "./trace-sink.js";

export type { TraceCleanerOptions } from "./trace-reader.js";
export type { TraceSection } from "./trace-sections.js";
export type { LineSink } from "./trace-sink.js";

export interface TraceCleaner {
  /** Feeds a piece of the log; returns the lines completed by it, clean. */
  push(chunk: string): string[];
  /**
   * Feeds a piece of the log, handing its clean lines to `sink`, which may pass most of them over
   * without their being made: the same lines `push` returns, in order.
   */
  pushTo(chunk: string, sink: LineSink): void;
  /** Ends the log; returns the lines still held (a last line without a newline). */
  end(): string[];
  /**
   * Every section started so far, in order, as it stands when asked (a copy: a section still open
   * does not end in it later); a name that recurs appears once per start. None when the cleaner
   * was made not to keep them (`keepSections: false`).
   */
  sections(): readonly TraceSection[];
  /** Distinct section names, in order of first appearance. */
  sectionNames(): string[];
  /** Whether the log has runner timestamp prefixes; undefined until its first line is complete. */
  timestamped(): boolean | undefined;
}

export function createTraceCleaner(options: TraceCleanerOptions = {}): TraceCleaner {
  const state = createCleanerState(options);
  const out: string[] = [];
  return {
    push: (chunk) => pushChunk(state, chunk),
    pushTo: (chunk, sink) => {
      pushChunkTo(state, chunk, sink, out);
    },
    end: () => endTrace(state),
    sections: () => listSections(state.sections),
    sectionNames: () => sectionNames(state.sections),
    timestamped: () => state.hasTimestamps,
  };
}

/** A whole log, clean: each line ends with `\n`, the last only if the log's last line did. */
export function cleanTrace(text: string, options: TraceCleanerOptions = {}): string {
  const cleaner = createTraceCleaner(options);
  const lines = [...cleaner.push(text), ...cleaner.end()];
  const clean = lines.join("\n");
  return lines.length > 0 && text.endsWith("\n") ? `${clean}\n` : clean;
}

/** How much of a log is cleaned between two turns of the event loop. */
const CLEAN_BATCH_CHARS = 256 * 1024;

/** `cleanTrace` for a long log, letting other work run between batches of it. */
export async function cleanTraceInBatches(
  text: string,
  options: TraceCleanerOptions = {},
): Promise<string> {
  if (text.length <= CLEAN_BATCH_CHARS) return cleanTrace(text, options);
  const cleaner = createTraceCleaner(options);
  const parts: string[] = [];
  for (let from = 0; from < text.length; from += CLEAN_BATCH_CHARS) {
    const lines = cleaner.push(text.slice(from, from + CLEAN_BATCH_CHARS));
    if (lines.length > 0) parts.push(lines.join("\n"));
    await new Promise((resolve) => setImmediate(resolve));
  }
  const last = cleaner.end();
  if (last.length > 0) parts.push(last.join("\n"));
  const clean = parts.join("\n");
  return parts.length > 0 && text.endsWith("\n") ? `${clean}\n` : clean;
}
