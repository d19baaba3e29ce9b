/**
 * Removing ANSI escape sequences and other control characters from a line of a job log: by a
 * pattern for any text, and by character codes for the usual text, whose only control characters
 * are ESC and tab, without trying the pattern at every character.
 */

/* eslint-disable no-control-regex -- these patterns exist to match control characters */

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

/* eslint-enable no-control-regex */

/**
 * Where the escape sequence starting at `at` (an ESC) ends, in text whose line ends at `length`:
 * the same sequence `ESCAPE_SEQUENCE` matches in the line, found by character codes rather than a
 * pattern tried at every position.
 */
export function escapeEnd(text: string, at: number, length: number): number {
  const next = at + 1;
  if (next >= length) return next;
  const code = text.charCodeAt(next);
  if (code === 0x5b) {
    // `[`: a CSI, complete or cut off by the end; else `\e[` alone, as a two-byte escape.
    let end = next + 1;
    while (end < length && isBetween(text.charCodeAt(end), 0x30, 0x3f)) end += 1;
    while (end < length && isBetween(text.charCodeAt(end), 0x20, 0x2f)) end += 1;
    if (end === length) return length;
    return isBetween(text.charCodeAt(end), 0x40, 0x7e) ? end + 1 : next + 1;
  }
  if (code === 0x5d) {
    // `]`: an OSC, up to and with BEL or ST, or up to the next ESC or the end.
    for (let end = next + 1; end < length; end += 1) {
      const char = text.charCodeAt(end);
      if (char === 0x07) return end + 1;
      if (char === 0x1b)
        return end + 1 < length && text.charCodeAt(end + 1) === 0x5c ? end + 2 : end;
    }
    return length;
  }
  if (code === 0x50 || code === 0x58 || code === 0x5e || code === 0x5f) {
    // DCS, SOS, PM, APC: up to and with ST, or up to the next ESC or the end.
    const end = text.indexOf("\x1b", next + 1);
    if (end === -1 || end >= length) return length;
    return end + 1 < length && text.charCodeAt(end + 1) === 0x5c ? end + 2 : end;
  }
  let end = next;
  while (end < length && isBetween(text.charCodeAt(end), 0x20, 0x2f)) end += 1;
  return end < length && isBetween(text.charCodeAt(end), 0x30, 0x7e) ? end + 1 : next;
}

function isBetween(code: number, low: number, high: number): boolean {
  return code >= low && code <= high;
}

/**
 * Text without its escape sequences, for text whose only control characters are ESC and tab:
 * what `text.replace(ESCAPE_OR_CONTROL, "")` gives it, without trying the pattern at every
 * character.
 */
export function stripEscapes(text: string): string {
  return stripEscapesBetween(text, 0, text.length, text.indexOf("\x1b"));
}

/**
 * `stripEscapes` of the line `text.slice(from, end)`, whose first ESC is at `escape` (-1 or `end`
 * and beyond: none), without cutting the line out first. Text between escapes is taken as slices
 * of `text`: a line with escapes only around its words (`\e[32;1m$ terraform plan\e[0;m`) comes
 * out as one slice, not as a joined copy.
 */
export function stripEscapesBetween(
  text: string,
  from: number,
  end: number,
  escape: number,
): string {
  let clean = "";
  let at = from;
  for (let next = escape; next !== -1 && next < end; next = text.indexOf("\x1b", at)) {
    if (next > at) clean = clean === "" ? text.slice(at, next) : clean + text.slice(at, next);
    at = escapeEnd(text, next, end);
  }
  if (at >= end) return clean;
  const rest = at === 0 && end === text.length ? text : text.slice(at, end);
  return clean === "" ? rest : clean + rest;
}

/** Text without its escape sequences and other control characters but tab, by the pattern. */
export function stripControls(text: string): string {
  return text.replace(ESCAPE_OR_CONTROL, "");
}
