/**
 * The trace cleaner handing its lines to a reader that can pass most of them over unmade: a line
 * of a chunk that holds no carriage return is first shown to the reader by where its text starts
 * in the chunk, and cut out (and its escapes removed) only when the reader wants to read it. A
 * long log's lines are mostly ones a reader looking for a few landmarks never needs as strings.
 */

import { escapeEnd, stripEscapesBetween } from "./trace-escapes.js";
import {
  completed,
  hasRareControl,
  withoutRareControls,
  logicalLine,
  pushChunk,
  renderSegment,
  type CleanerState,
  type LineView,
} from "./trace-reader.js";
import { applyMarker, readMarkerBefore } from "./trace-sections.js";

/** Receives a log's clean lines, in order. */
export interface LineSink {
  /**
   * Whether the reader wants every line as a string: `passes` is then never asked, and each line
   * is made and handed to `line`.
   */
  readonly wantsEveryLine: boolean;
  /** A chunk of the log begins: the text the lines shown to `passes` are in, until the next. */
  begin(text: string): void;
  /**
   * Whether the clean line held in `text` from `first - indent` to `end` can be passed over
   * unread. Its first character that is neither a space nor part of an escape sequence is at
   * `first` (`end` for a blank line), after `indent` spaces; its last one is at `last`. Escape
   * sequences may stand anywhere between, and so may control characters the cleaner removes
   * (`\x00`, `\b`, DEL, ...): a line is passed over only where what the sink reads of it cannot
   * be other with them removed (a control character is read as one that may be anything).
   */
  passes(text: string, first: number, indent: number, last: number, end: number): boolean;
  /**
   * Passes over lines in a run, as `passes` would pass each over: the lines of `text` from `from`
   * on, each ending with a newline before `stop`, where the text from `from` to `stop` holds no
   * escape sequence and no carriage return (each of those lines is clean as it stands). Returns
   * where the first line not passed over starts: `from` when none was. A line there that ends
   * before `stop` is one `passes` would not pass over, and is handed to `line`. Never asked when
   * the reader wants every line.
   */
  passRun(text: string, from: number, stop: number): number;
  /** A clean line to read. */
  line(text: string): void;
}

/** Hands out what `out` holds and counts it as emitted. */
function flush(state: CleanerState, out: string[], sink: LineSink): void {
  for (const line of out) sink.line(line);
  state.emitted += out.length;
  out.length = 0;
}

/** How many newlines the text of `chunk` from `from` to `to` holds. */
function linesBetween(chunk: string, from: number, to: number): number {
  let lines = 0;
  for (let at = chunk.indexOf("\n", from); at !== -1 && at < to; at = chunk.indexOf("\n", at + 1))
    lines += 1;
  return lines;
}

/**
 * Fills `view` for the line of `chunk` from `from` to `end`, whose first ESC is at `escape` (-1
 * or `end` and beyond: none), in one pass over its escape sequences, read as
 * `stripEscapesBetween` reads them, without joining what is between them.
 */
function viewLine(view: LineView, chunk: string, from: number, end: number, escape: number): void {
  let first = -1;
  let indent = 0;
  let last = -1;
  let at = from;
  let next = escape;
  for (;;) {
    const stop = next !== -1 && next < end ? next : end;
    if (at < stop) {
      if (first === -1) {
        while (at < stop && chunk.charCodeAt(at) === 0x20) {
          indent += 1;
          at += 1;
        }
        if (at < stop) first = at;
      }
      last = stop - 1;
    }
    if (stop === end) break;
    at = escapeEnd(chunk, next, end);
    next = chunk.indexOf("\x1b", at);
  }
  view.first = first === -1 ? end : first;
  view.indent = indent;
  // A plain line's last character is its end's, blank or not; one with escapes, blank, has none.
  view.last = next === escape ? end - 1 : first === -1 ? -1 : last;
  view.escape = next;
}

/**
 * The text of `chunk` from `from` to `end`, which holds no carriage return and no escape before
 * `escape` (-1 or `end` and beyond: none): shown to the sink, and made only if the sink reads it.
 * Beside a section marker (`besideMarker`), text that is empty once its escapes are removed is no
 * line. Returns how many lines it was: 0 or 1.
 */
function shownLine(
  state: CleanerState,
  sink: LineSink,
  chunk: string,
  from: number,
  end: number,
  escape: number,
  besideMarker: boolean,
): number {
  const view = state.view;
  viewLine(view, chunk, from, end, escape);
  const { first, indent } = view;
  if (besideMarker && first >= end && indent === 0) return 0;
  if (!sink.wantsEveryLine && sink.passes(chunk, first, indent, view.last, end)) return 1;
  const plain = escape === -1 || escape >= end;
  const line = plain ? chunk.slice(from, end) : stripEscapesBetween(chunk, from, end, escape);
  const clean = state.checksLines ? withoutRareControls(line) : line;
  // Control characters were all it held but escapes: beside a marker, no line.
  if (besideMarker && clean === "") return 0;
  sink.line(clean);
  return 1;
}

/**
 * The text of `chunk` from `segment` to `to`, between section markers or beside one: with a
 * carriage return in it (`returns`), read by the general rules (`renderSegment`); else shown to
 * the sink as any line. Nothing between two markers is no line.
 */
function markedSegment(
  state: CleanerState,
  chunk: string,
  segment: number,
  to: number,
  returns: boolean,
  sink: LineSink,
  out: string[],
): void {
  if (returns) {
    renderSegment(state, chunk.slice(segment, to), out, true);
    flush(state, out, sink);
  } else if (segment < to) {
    const escape = chunk.indexOf("\x1b", segment);
    state.emitted += shownLine(state, sink, chunk, segment, to, escape, true);
  }
}

/**
 * A line of `chunk` from `from` to `end` with a carriage return in it, whose first is at `cr`:
 * its section markers read where they stand, each found from the carriage return it ends with,
 * and the text between them handed on by `markedSegment`. A line with no marker is read by the
 * general rules.
 */
function markedLine(
  state: CleanerState,
  chunk: string,
  from: number,
  end: number,
  cr: number,
  sink: LineSink,
  out: string[],
): void {
  const marker = state.marker;
  const book = state.keepSections ? state.sections : undefined;
  let segment = from;
  // Whether the text since `segment` holds a carriage return that ends no marker.
  let returns = false;
  for (let at = cr; at !== -1 && at < end; at = chunk.indexOf("\r", at + 1)) {
    const start = readMarkerBefore(chunk, at, segment, book, marker);
    if (start === -1) {
      returns = true;
      continue;
    }
    markedSegment(state, chunk, segment, start, returns, sink, out);
    if (book !== undefined) applyMarker(book, marker, state.emitted);
    segment = marker.end;
    returns = false;
  }
  if (segment === from) {
    renderSegment(state, chunk.slice(from, end), out, false);
    flush(state, out, sink);
  } else {
    markedSegment(state, chunk, segment, end, returns, sink, out);
  }
}

/**
 * `plainChunk` of the cleaner, its lines handed to a sink: a chunk of a log without timestamps
 * whose text holds no control character but tab, newline, carriage return and ESC, or whose
 * lines are checked for the others one by one (`checksLines`). A line with a carriage return is
 * read by the general rules; any other is shown to the sink.
 */
function plainChunkTo(state: CleanerState, chunk: string, sink: LineSink, out: string[]): void {
  let from = 0;
  let newline = chunk.indexOf("\n");
  if (newline !== -1 && state.partial.length > 0) {
    logicalLine(state, completed(state, chunk, newline), out);
    flush(state, out, sink);
    from = newline + 1;
    newline = chunk.indexOf("\n", from);
  }
  sink.begin(chunk);
  let escape = chunk.indexOf("\x1b", from);
  let cr = chunk.indexOf("\r", from);
  const runs = !sink.wantsEveryLine;
  for (; newline !== -1; newline = chunk.indexOf("\n", from)) {
    // The lines before the next ESC and `\r` are clean as they stand: the sink passes over as
    // many of them as it can in one call, and reads the one it stops at if that one is clean too.
    const clean = Math.min(escape === -1 ? chunk.length : escape, cr === -1 ? chunk.length : cr);
    if (runs && newline < clean) {
      const at = sink.passRun(chunk, from, clean);
      if (at !== from) {
        if (state.keepSections) state.emitted += linesBetween(chunk, from, at);
        from = at;
        newline = chunk.indexOf("\n", from);
        if (newline === -1) break;
      }
      if (newline < clean) {
        sink.line(withoutRareControls(chunk.slice(from, newline)));
        state.emitted += 1;
        from = newline + 1;
        continue;
      }
    }
    if (cr !== -1 && cr < newline) {
      markedLine(state, chunk, from, newline, cr, sink, out);
      cr = chunk.indexOf("\r", newline);
    } else {
      state.emitted += shownLine(state, sink, chunk, from, newline, escape, false);
      escape = state.view.escape;
    }
    if (escape !== -1 && escape < newline) escape = chunk.indexOf("\x1b", newline);
    from = newline + 1;
  }
  if (from < chunk.length) state.partial.push(from === 0 ? chunk : chunk.slice(from));
}

/** Feeds a piece of the log; its clean lines go to the sink. */
export function pushChunkTo(
  state: CleanerState,
  chunk: string,
  sink: LineSink,
  out: string[],
): void {
  // A sink that reads few lines has those checked for rare control characters, not each chunk
  // for any: 27 searches of the whole chunk cost as much as half the lines' split. The general
  // rules (a first line, timestamps) search each chunk they read as ever.
  if (sink.wantsEveryLine) state.rareControlSeen ||= hasRareControl(chunk);
  let rest = chunk;
  if (state.hasTimestamps === undefined) {
    // The log's first line says whether it has timestamps: read by the general rules, and the
    // rest of its chunk (64 KB of a 1 MB log) by the shortcuts, not all of it line by line.
    const newline = chunk.indexOf("\n");
    if (newline === -1 || newline === chunk.length - 1) {
      for (const line of pushChunk(state, chunk)) sink.line(line);
      return;
    }
    for (const line of pushChunk(state, chunk.slice(0, newline + 1))) sink.line(line);
    rest = chunk.slice(newline + 1);
  }
  if (state.hasTimestamps === false && !state.rareControlSeen && !state.lineByLine) {
    state.checksLines = !sink.wantsEveryLine;
    plainChunkTo(state, rest, sink, out);
    return;
  }
  for (const line of pushChunk(state, rest)) sink.line(line);
}
