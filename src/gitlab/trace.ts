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

/** GitLab's section marker: prefix, optional `[key=value,...]` options, and the `\r\e[0K` suffix. */
const SECTION_MARKER =
  /section_(start|end):(\d+):([a-zA-Z0-9_.-]+)(\[\w+=\w+(?:, ?\w+=\w+)*\])?\r\x1b\[0K/g;

/**
 * Escape sequences, in order of preference: a complete CSI (`\e[...m`, `\e[0K`, `\e[2J`), a CSI
 * cut off by the end of the line, an OSC (`\e]...` ended by BEL or ST, or by the end of the
 * line), a DCS/SOS/PM/APC string, any other two-or-more-byte escape (`\e(B`, `\e7`, `\e=`), and
 * a lone ESC.
 */
const ESCAPE_SEQUENCE =
  /\x1b(?:\[[0-?]*[ -/]*[@-~]|\[[0-?]*[ -/]*$|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?|[ -/]*[0-~])?/;

/** Control characters left after escapes and carriage returns are handled (tab is kept). */
const OTHER_CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/;

/**
 * Both, in one pass: an escape sequence wherever one starts (ESC is a control character too, so
 * the sequence is tried first), else a single control character.
 */
const ESCAPE_OR_CONTROL = new RegExp(`${ESCAPE_SEQUENCE.source}|${OTHER_CONTROL.source}`, "g");

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
}

/** One display segment (no markers, no newline) as lines: one as a person sees it, or more. */
function renderSegment(segment: string, keepOverwritten: boolean): string[] {
  let text = segment;
  if (text.includes("\r")) {
    // `\r` before the end of the line is part of the line break; any other returns the cursor
    // to the start, so only what follows the last one is shown.
    text = text.replace(/\r+$/, "");
    if (keepOverwritten) {
      const parts = text
        .split(/\r+/)
        .map((part) => part.replace(ESCAPE_OR_CONTROL, ""))
        .filter((part) => part !== "");
      return parts.length > 0 ? parts : [""];
    }
    const lastReturn = text.lastIndexOf("\r");
    if (lastReturn !== -1) text = text.slice(lastReturn + 1);
  }
  return [text.replace(ESCAPE_OR_CONTROL, "")];
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

export function createTraceCleaner(options: TraceCleanerOptions = {}): TraceCleaner {
  const keepOverwritten = options.overwritten === "keep";
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

  const isClean = (line: string): boolean =>
    rareControlSeen ? !ANY_CONTROL.test(line) : !line.includes("\x1b") && !line.includes("\r");

  const logicalLine = (line: string, out: string[]) => {
    if (isClean(line)) {
      // Most lines of program output: nothing to strip.
      emit(line, out);
      return;
    }
    if (!line.includes("section_")) {
      for (const shown of renderSegment(line, keepOverwritten)) emit(shown, out);
      return;
    }
    let sawMarker = false;
    let from = 0;
    const emitSegment = (segment: string) => {
      for (const clean of renderSegment(segment, keepOverwritten))
        if (clean !== "") emit(clean, out);
    };
    // `exec` on the shared pattern rather than `matchAll`, which copies the pattern on every call.
    SECTION_MARKER.lastIndex = 0;
    for (let match = SECTION_MARKER.exec(line); match; match = SECTION_MARKER.exec(line)) {
      const [whole, kind, unix, name, rawOptions] = match;
      if (kind === undefined || unix === undefined || name === undefined) continue;
      sawMarker = true;
      emitSegment(line.slice(from, match.index));
      from = match.index + whole.length;
      const at = Number(unix);
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
        if (sameName?.length === 0) open.delete(name);
      }
    }
    if (!sawMarker) {
      for (const shown of renderSegment(line, keepOverwritten)) emit(shown, out);
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

  return {
    push(chunk) {
      rareControlSeen ||= RARE_CONTROLS.some((char) => chunk.includes(char));
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
