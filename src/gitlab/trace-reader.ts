/**
 * The trace cleaner's state and the steps it takes through a job log: a chunk, a physical line
 * (with its runner timestamp), a logical line, and the display segments between section markers.
 * `trace.ts` describes what a trace holds and gives the cleaner its interface.
 *
 * Lines are counted without a counter per line: a step appends the lines it completes to the
 * chunk's `out`, and the index of the next clean line is `emitted + out.length`, where `emitted`
 * counts the lines handed out for earlier chunks.
 */

import { stripControls, stripEscapes, stripEscapesBetween } from "./trace-escapes.js";
import {
  applyMarker,
  createSectionBook,
  matchMarker,
  readMarker,
  type SectionBook,
  type SectionMarker,
} from "./trace-sections.js";

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
  /**
   * Keep the sections the log's markers open and close, for `sections()` (the default). A reader
   * that never asks for them saves their cost: the markers still break lines as ever.
   */
  keepSections?: boolean;
}

/* eslint-disable no-control-regex -- these patterns exist to match control characters */

/** `2024-01-01T00:00:00.000000Z 00O ` — GitLab's own pattern for the runner's line prefix. */
const TIMESTAMP_HEADER =
  /^\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d\.\d{6}Z [0-9a-f]{2}[EO][+ ]/;
const TIMESTAMP_HEADER_LENGTH = 32;

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

/** One of `RARE_CONTROLS`, and all of them: a class of their escapes. */
const RARE_CONTROL = new RegExp(
  `[${RARE_CONTROLS.map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}]`,
);
const RARE_CONTROL_ALL = new RegExp(RARE_CONTROL.source, "g");

/**
 * A line made by the rules for text with no rare control character, without the rare control
 * characters it holds all the same: what the rules for any text make of it (`stripControls`
 * removes escape sequences and control characters in one pass from the left, and no rare control
 * character starts an escape sequence or is part of one that ends before it).
 */
export function withoutRareControls(line: string): string {
  return RARE_CONTROL.test(line) ? line.replace(RARE_CONTROL_ALL, "") : line;
}

/**
 * Where a line's clean text stands in its chunk, as the sink is shown it: where its first
 * character other than space is (`first`, its end when there is none) after `indent` spaces, where
 * its last is (`last`; -1 when escapes are all it holds), and where the chunk's next ESC after the
 * line is (`escape`, -1 when none). One per cleaner, written over for each line.
 */
export interface LineView {
  first: number;
  indent: number;
  last: number;
  escape: number;
}

export interface CleanerState {
  keepOverwritten: boolean;
  lineByLine: boolean;
  keepSections: boolean;
  /** Pieces of the physical line not yet ended by `\n`. */
  partial: string[];
  /** With timestamps: the logical line waiting to see whether the next one continues it. */
  pending: string | undefined;
  hasTimestamps: boolean | undefined;
  /** Whether any text fed so far holds one of `RARE_CONTROLS`. */
  rareControlSeen: boolean;
  /**
   * Whether the lines made are checked for `RARE_CONTROLS` one by one, rather than each chunk
   * for any: for a sink that reads few of its lines, whose rules read any line such a character
   * could make other than it looks (see `LineSink`).
   */
  checksLines: boolean;
  /** Clean lines handed out for the chunks before the one being read. */
  emitted: number;
  sections: SectionBook;
  /** The marker last read, written over by the next: no object per marker. */
  marker: SectionMarker;
  /** The line last shown to a sink, written over by the next: no object per line. */
  view: LineView;
}

export function createCleanerState(options: TraceCleanerOptions): CleanerState {
  return {
    keepOverwritten: options.overwritten === "keep",
    lineByLine: options.lineByLine === true,
    keepSections: options.keepSections !== false,
    partial: [],
    pending: undefined,
    hasTimestamps: undefined,
    rareControlSeen: false,
    checksLines: false,
    emitted: 0,
    sections: createSectionBook(),
    marker: { start: false, at: 0, name: "", options: "", end: 0 },
    view: { first: 0, indent: 0, last: 0, escape: -1 },
  };
}

/**
 * How escapes are removed once carriage returns are read: by character codes while the log holds
 * no control character but tab, newline, carriage return and ESC; else by the pattern.
 */
function strip(state: CleanerState, text: string): string {
  if (state.rareControlSeen || state.lineByLine) return stripControls(text);
  const clean = stripEscapes(text);
  return state.checksLines ? withoutRareControls(clean) : clean;
}

/**
 * One display segment (no markers, no newline) as the lines it shows: one as a person sees it,
 * or, keeping overwritten text, each part a carriage return overwrote. With `skipEmpty`, a line
 * that comes out empty is left out (a segment beside a section marker).
 */
export function renderSegment(
  state: CleanerState,
  segment: string,
  out: string[],
  skipEmpty: boolean,
): void {
  if (skipEmpty && segment === "") return;
  let text = segment;
  if (text.includes("\r")) {
    // `\r` before the end of the line is part of the line break; any other returns the cursor
    // to the start, so only what follows the last one is shown.
    text = text.replace(/\r+$/, "");
    if (state.keepOverwritten) {
      let shown = 0;
      for (const part of text.split(/\r+/)) {
        const clean = strip(state, part);
        if (clean !== "") {
          out.push(clean);
          shown += 1;
        }
      }
      if (shown === 0 && !skipEmpty) out.push("");
      return;
    }
    const lastReturn = text.lastIndexOf("\r");
    if (lastReturn !== -1) text = text.slice(lastReturn + 1);
  }
  const clean = strip(state, text);
  if (!skipEmpty || clean !== "") out.push(clean);
}

/** A line with control characters in it: escapes, carriage returns, section markers. */
export function uncleanLine(state: CleanerState, line: string, out: string[]): void {
  const read = state.lineByLine ? matchMarker : readMarker;
  const marker = state.marker;
  let from = 0;
  for (let at = line.indexOf("section_"); at !== -1; at = line.indexOf("section_", at)) {
    if (!read(line, at, state.sections, marker)) {
      at += 1;
      continue;
    }
    renderSegment(state, line.slice(from, at), out, true);
    if (state.keepSections) applyMarker(state.sections, marker, state.emitted + out.length);
    from = at = marker.end;
  }
  if (from === 0) renderSegment(state, line, out, false);
  else renderSegment(state, line.slice(from), out, true);
}

export function logicalLine(state: CleanerState, line: string, out: string[]): void {
  const clean =
    state.rareControlSeen || state.checksLines
      ? !ANY_CONTROL.test(line)
      : !line.includes("\x1b") && !line.includes("\r");
  // Most lines of program output: nothing to strip.
  if (clean) out.push(line);
  else uncleanLine(state, line, out);
}

function physicalLine(state: CleanerState, line: string, out: string[]): void {
  state.hasTimestamps ??= TIMESTAMP_HEADER.test(line);
  if (!state.hasTimestamps) {
    logicalLine(state, line, out);
    return;
  }
  const hasHeader = TIMESTAMP_HEADER.test(line);
  const body = hasHeader ? line.slice(TIMESTAMP_HEADER_LENGTH) : line;
  if (hasHeader && line[TIMESTAMP_HEADER_LENGTH - 1] === "+" && state.pending !== undefined) {
    // The runner split one line of output: the newline before this one is not real.
    state.pending += body;
    return;
  }
  if (state.pending !== undefined) logicalLine(state, state.pending, out);
  state.pending = body;
}

/** The physical line that the text up to `end` completes, with what earlier chunks left of it. */
export function completed(state: CleanerState, chunk: string, end: number): string {
  const { partial } = state;
  partial.push(chunk.slice(0, end));
  const line = partial.join("");
  state.partial = [];
  return line;
}

/**
 * A chunk of a log without timestamps whose text holds no control character but tab, newline,
 * carriage return and ESC. Its lines are found with one search for each newline, ESC and `\r`
 * from one to the next: a line with neither is handed out as a slice of the chunk, one with
 * escapes and no `\r` (which every section marker ends with) loses its escapes without being cut
 * out first, and only one with a `\r` is read by the general rules.
 */
function plainChunk(state: CleanerState, chunk: string, out: string[]): void {
  let from = 0;
  let newline = chunk.indexOf("\n");
  if (newline !== -1 && state.partial.length > 0) {
    logicalLine(state, completed(state, chunk, newline), out);
    from = newline + 1;
    newline = chunk.indexOf("\n", from);
  }
  let escape = chunk.indexOf("\x1b", from);
  let cr = chunk.indexOf("\r", from);
  for (; newline !== -1; newline = chunk.indexOf("\n", from)) {
    if (cr !== -1 && cr < newline) {
      uncleanLine(state, chunk.slice(from, newline), out);
      cr = chunk.indexOf("\r", newline);
      if (escape !== -1 && escape < newline) escape = chunk.indexOf("\x1b", newline);
    } else if (escape !== -1 && escape < newline) {
      out.push(stripEscapesBetween(chunk, from, newline, escape));
      escape = chunk.indexOf("\x1b", newline);
    } else {
      out.push(chunk.slice(from, newline));
    }
    from = newline + 1;
  }
  if (from < chunk.length) state.partial.push(from === 0 ? chunk : chunk.slice(from));
}

/** A chunk read line by line, by the general rules: timestamps, rare control characters. */
function generalChunk(state: CleanerState, chunk: string, out: string[]): void {
  let from = 0;
  for (let newline = chunk.indexOf("\n"); newline !== -1; newline = chunk.indexOf("\n", from)) {
    const line =
      from === 0 && state.partial.length > 0
        ? completed(state, chunk, newline)
        : chunk.slice(from, newline);
    physicalLine(state, line, out);
    from = newline + 1;
  }
  if (from < chunk.length) state.partial.push(from === 0 ? chunk : chunk.slice(from));
}

export function hasRareControl(chunk: string): boolean {
  for (const char of RARE_CONTROLS) if (chunk.includes(char)) return true;
  return false;
}

/** Feeds a piece of the log; returns the lines completed by it, clean. */
export function pushChunk(state: CleanerState, chunk: string): string[] {
  state.rareControlSeen ||= hasRareControl(chunk);
  const out: string[] = [];
  if (state.hasTimestamps === false && !state.rareControlSeen && !state.lineByLine) {
    plainChunk(state, chunk, out);
  } else {
    generalChunk(state, chunk, out);
  }
  state.emitted += out.length;
  return out;
}

/** Ends the log; returns the lines still held (a last line without a newline). */
export function endTrace(state: CleanerState): string[] {
  const out: string[] = [];
  if (state.partial.length > 0) {
    physicalLine(state, state.partial.join(""), out);
    state.partial = [];
  }
  if (state.pending !== undefined) {
    logicalLine(state, state.pending, out);
    state.pending = undefined;
  }
  state.emitted += out.length;
  return out;
}
