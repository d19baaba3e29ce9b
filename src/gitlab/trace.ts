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

import { stripControls, stripEscapes } from "./trace-escapes.js";

/** A collapsible section seen in the log, with the clean lines it spans. */
export interface TraceSection {
  /** The name as written in the marker, e.g. `step_script`. */
  name: string;
  /** Unix seconds from the start marker. */
  startedAt: number;
  /** Unix seconds from the end marker; undefined while the section is open. */
  endedAt?: number;
  /** Options from the start marker, e.g. `{ collapsed: "true" }`. */
  options: Record<string, string>;
  /** Index (0-based, among all clean lines) of the section's first line. */
  startLine: number;
  /** Index one past the section's last line; undefined while the section is open. */
  endLine?: number;
}

export interface TraceCleaner {
  /** Feeds a piece of the log; returns the lines completed by it, clean. */
  push(chunk: string): string[];
  /** Ends the log; returns the lines still held (a last line without a newline). */
  end(): string[];
  /** Every section started so far, in order; a name that recurs appears once per start. */
  sections(): readonly TraceSection[];
  /** Distinct section names, in order of first appearance. */
  sectionNames(): string[];
  /** Whether the log has runner timestamp prefixes; undefined until its first line is complete. */
  timestamped(): boolean | undefined;
}

/* eslint-disable no-control-regex -- these patterns exist to match control characters */

/** `2024-01-01T00:00:00.000000Z 00O ` — GitLab's own pattern for the runner's line prefix. */
const TIMESTAMP_HEADER =
  /^\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d\.\d{6}Z [0-9a-f]{2}[EO][+ ]/;
const TIMESTAMP_HEADER_LENGTH = 32;

/**
 * GitLab's section marker: prefix, optional `[key=value,...]` options, and the `\r\e[0K` suffix.
 * Sticky: it is tried where a search for `section_` has found one, not at every character.
 */
const SECTION_MARKER =
  /section_(start|end):(\d+):([a-zA-Z0-9_.-]+)(\[\w+=\w+(?:, ?\w+=\w+)*\])?\r\x1b\[0K/y;

/**
 * Any control character but tab: a line without one has no section marker (each ends in
 * `\r\e[0K`), no carriage return and no escape sequence, so it is already clean.
 */
const ANY_CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/* eslint-enable no-control-regex */

/**
 * The control characters a log seldom holds: all but tab, newline, carriage return and ESC.
 * Until a log has shown one of these, a line is clean unless it holds a `\r` or an ESC, and
 * `includes` finds a single character many times faster than a pattern scans for a set of them.
 */
const RARE_CONTROLS = Array.from({ length: 32 }, (_, code) => String.fromCharCode(code))
  .filter((char) => !"\t\n\r\x1b".includes(char))
  .concat("\x7f");

export interface TraceCleanerOptions {
  /**
   * What becomes of text a carriage return overwrites (`a\rb`): `hide` it, as the job page and a
   * terminal do (the default), or `keep` it as a line of its own before what overwrote it, for a
   * reader that must not miss anything the program printed (a plan's destroy heading hidden by a
   * progress line still destroys).
   */
  overwritten?: "hide" | "keep";
  /**
   * Read every line by the general rules, without the shortcuts taken for text that holds no
   * escape or carriage return: the reference the shortcuts are tested against.
   */
  lineByLine?: boolean;
}

/**
 * One display segment (no markers, no newline) as lines: one as a person sees it, or more.
 * `strip` removes what is left of escapes and control characters once carriage returns are read.
 */
function renderSegment(
  segment: string,
  keepOverwritten: boolean,
  strip: (text: string) => string,
): string[] {
  let text = segment;
  if (text.includes("\r")) {
    // `\r` before the end of the line is part of the line break; any other returns the cursor
    // to the start, so only what follows the last one is shown.
    text = text.replace(/\r+$/, "");
    if (keepOverwritten) {
      const parts = text
        .split(/\r+/)
        .map(strip)
        .filter((part) => part !== "");
      return parts.length > 0 ? parts : [""];
    }
    const lastReturn = text.lastIndexOf("\r");
    if (lastReturn !== -1) text = text.slice(lastReturn + 1);
  }
  return [strip(text)];
}

/** The value of a run of decimal digits, as `Number` reads it, without its general parser. */
function digitsValue(digits: string): number {
  if (digits.length > 15) return Number(digits);
  let value = 0;
  for (let index = 0; index < digits.length; index += 1) {
    value = value * 10 + digits.charCodeAt(index) - 48;
  }
  return value;
}

function parseOptions(raw: string | undefined): Record<string, string> {
  const options: Record<string, string> = {};
  if (raw === undefined) return options;
  for (const pair of raw.slice(1, -1).split(",")) {
    const [key, value] = pair.trim().split("=");
    if (key !== undefined && value !== undefined) options[key] = value;
  }
  return options;
}

// eslint-disable-next-line max-lines-per-function -- one closure over a streaming reader's state, on the hot path of every job log; still to be split as the plan text reader was
export function createTraceCleaner(options: TraceCleanerOptions = {}): TraceCleaner {
  const keepOverwritten = options.overwritten === "keep";
  const lineByLine = options.lineByLine === true;
  /** Pieces of the physical line not yet ended by `\n`. */
  let partial: string[] = [];
  /** With timestamps: the logical line waiting to see whether the next one continues it. */
  let pending: string | undefined;
  let hasTimestamps: boolean | undefined;
  /** Whether any text fed so far holds one of `RARE_CONTROLS`. */
  let rareControlSeen = false;
  /** Clean lines emitted so far: the index of the next one. */
  let emitted = 0;
  const seen: TraceSection[] = [];
  /**
   * Sections started and not yet ended, by name, latest last: an end marker finds its section
   * without a search through every open one, which a log of many unended sections would make
   * quadratic.
   */
  const open = new Map<string, TraceSection[]>();
  /**
   * One copy of each section name. A name cut out of its line would keep the line's whole chunk
   * of log in memory; and the same few names recur in every job.
   */
  const names = new Map<string, string>();
  const sectionName = (name: string): string => {
    let kept = names.get(name);
    if (kept === undefined) {
      kept = structuredClone(name);
      names.set(kept, kept);
    }
    return kept;
  };

  const emit = (line: string, out: string[]) => {
    out.push(line);
    emitted += 1;
  };

  /**
   * How escapes are removed once carriage returns are read: by character codes while the log
   * holds no control character but tab, newline, carriage return and ESC; else by the pattern.
   */
  const strip = () => (rareControlSeen || lineByLine ? stripControls : stripEscapes);

  const isClean = (line: string): boolean =>
    rareControlSeen ? !ANY_CONTROL.test(line) : !line.includes("\x1b") && !line.includes("\r");

  const logicalLine = (line: string, out: string[]) => {
    if (isClean(line)) {
      // Most lines of program output: nothing to strip.
      emit(line, out);
      return;
    }
    uncleanLine(line, out);
  };

  /** A line with control characters in it: escapes, carriage returns, section markers. */
  const uncleanLine = (line: string, out: string[]) => {
    let marker = line.indexOf("section_");
    if (marker === -1) {
      for (const shown of renderSegment(line, keepOverwritten, strip())) emit(shown, out);
      return;
    }
    let sawMarker = false;
    let from = 0;
    const emitSegment = (segment: string) => {
      for (const clean of renderSegment(segment, keepOverwritten, strip()))
        if (clean !== "") emit(clean, out);
    };
    for (; marker !== -1; marker = line.indexOf("section_", marker)) {
      SECTION_MARKER.lastIndex = marker;
      const match = SECTION_MARKER.exec(line);
      const kind = match?.[1];
      const unix = match?.[2];
      const name = match?.[3];
      if (match === null || kind === undefined || unix === undefined || name === undefined) {
        marker += 1;
        continue;
      }
      sawMarker = true;
      emitSegment(line.slice(from, marker));
      from = marker + match[0].length;
      const rawOptions = match[4];
      marker = from;
      const at = digitsValue(unix);
      if (kind === "start") {
        const section: TraceSection = {
          name: sectionName(name),
          startedAt: at,
          options: parseOptions(rawOptions),
          startLine: emitted,
        };
        seen.push(section);
        const sameName = open.get(section.name);
        if (sameName === undefined) open.set(section.name, [section]);
        else sameName.push(section);
      } else {
        // Like GitLab, an end marker for a section that is not open is ignored.
        const sameName = open.get(name);
        const section = sameName?.pop();
        if (section !== undefined) {
          section.endedAt = at;
          section.endLine = emitted;
        }
        // An emptied list stays, for the name's next start: as few as the names are.
      }
    }
    if (!sawMarker) {
      for (const shown of renderSegment(line, keepOverwritten, strip())) emit(shown, out);
      return;
    }
    emitSegment(line.slice(from));
  };

  const physicalLine = (line: string, out: string[]) => {
    hasTimestamps ??= TIMESTAMP_HEADER.test(line);
    if (!hasTimestamps) {
      logicalLine(line, out);
      return;
    }
    const hasHeader = TIMESTAMP_HEADER.test(line);
    const body = hasHeader ? line.slice(TIMESTAMP_HEADER_LENGTH) : line;
    if (hasHeader && line[TIMESTAMP_HEADER_LENGTH - 1] === "+" && pending !== undefined) {
      // The runner split one line of output: the newline before this one is not real.
      pending += body;
      return;
    }
    if (pending !== undefined) logicalLine(pending, out);
    pending = body;
  };

  /**
   * A chunk of a log without timestamps whose text holds no control character but tab, newline,
   * carriage return and ESC. Its lines are split off natively, and only those that hold an ESC or
   * a `\r` (found with a search from one such line to the next) are cleaned; the others are
   * clean as they are.
   */
  const plainChunk = (chunk: string): string[] => {
    const lines = chunk.split("\n");
    const rest = lines.pop() ?? "";
    const out: string[] = [];
    let escape = chunk.indexOf("\x1b");
    let cr = chunk.indexOf("\r");
    let start = 0;
    for (let index = 0; index < lines.length; index += 1) {
      const line = lines[index] ?? "";
      const end = start + line.length;
      start = end + 1;
      if (index === 0 && partial.length > 0) {
        partial.push(line);
        logicalLine(partial.join(""), out);
        partial = [];
      } else if ((escape === -1 || escape > end) && (cr === -1 || cr > end)) {
        out.push(line);
        emitted += 1;
        continue;
      } else if (cr === -1 || cr > end) {
        // Escapes and no `\r`, which every section marker ends with: only colours to remove.
        out.push(stripEscapes(line));
        emitted += 1;
      } else {
        uncleanLine(line, out);
      }
      if (escape !== -1 && escape < end) escape = chunk.indexOf("\x1b", end);
      if (cr !== -1 && cr < end) cr = chunk.indexOf("\r", end);
    }
    if (rest !== "") partial.push(rest);
    return out;
  };

  return {
    push(chunk) {
      rareControlSeen ||= RARE_CONTROLS.some((char) => chunk.includes(char));
      if (hasTimestamps === false && !rareControlSeen && !lineByLine) return plainChunk(chunk);
      const out: string[] = [];
      let from = 0;
      for (;;) {
        const newline = chunk.indexOf("\n", from);
        if (newline === -1) {
          if (from < chunk.length) partial.push(chunk.slice(from));
          return out;
        }
        let line = chunk.slice(from, newline);
        if (partial.length > 0) {
          partial.push(line);
          line = partial.join("");
          partial = [];
        }
        physicalLine(line, out);
        from = newline + 1;
      }
    },
    end() {
      const out: string[] = [];
      if (partial.length > 0) {
        physicalLine(partial.join(""), out);
        partial = [];
      }
      if (pending !== undefined) {
        logicalLine(pending, out);
        pending = undefined;
      }
      return out;
    },
    sections: () => seen,
    sectionNames: () => [...new Set(seen.map((section) => section.name))],
    timestamped: () => hasTimestamps,
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
