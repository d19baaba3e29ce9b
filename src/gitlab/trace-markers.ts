/**
 * GitLab's collapsible section markers in a job log, `section_start:<unix>:<name>[<options>]\r\e[0K`
 * and `section_end:<unix>:<name>\r\e[0K`: read where a search for `section_` has found one,
 * by a pattern or by character codes.
 */

/** One marker, read at the index of its `section_`. */
export interface SectionMarker {
  kind: "start" | "end";
  /** Unix seconds. */
  at: number;
  /** The name as written (a piece of the line). */
  name: string;
  /** The options as written, brackets included: `[collapsed=true]`. */
  options: string | undefined;
  /** The index one past the marker's `\r\e[0K`. */
  end: number;
}

/* eslint-disable no-control-regex -- the marker ends with control characters */
/** GitLab's marker: prefix, optional `[key=value,...]` options, and the `\r\e[0K` suffix. */
const SECTION_MARKER =
  /section_(start|end):(\d+):([a-zA-Z0-9_.-]+)(\[\w+=\w+(?:, ?\w+=\w+)*\])?\r\x1b\[0K/y;
/* eslint-enable no-control-regex */

/** The marker starting at `index`, by the pattern; undefined when there is none. */
export function markerByPattern(line: string, index: number): SectionMarker | undefined {
  SECTION_MARKER.lastIndex = index;
  const match = SECTION_MARKER.exec(line);
  const [whole, kind, unix, name, options] = match ?? [];
  if (whole === undefined || unix === undefined || name === undefined) return undefined;
  return {
    kind: kind === "start" ? "start" : "end",
    at: Number(unix),
    name,
    options,
    end: index + whole.length,
  };
}

/** `[A-Za-z0-9_]`, the pattern's `\w`. */
function isWord(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 95
  );
}

/** Where a run of characters passing `test` from `from` ends. */
function runEnd(line: string, from: number, test: (code: number) => boolean): number {
  let end = from;
  while (end < line.length && test(line.charCodeAt(end))) end += 1;
  return end;
}

const isDigit = (code: number) => code >= 48 && code <= 57;
/** `[a-zA-Z0-9_.-]`. */
const isNameCharacter = (code: number) => isWord(code) || code === 46 || code === 45;

/** Where `[key=value, key=value]` starting at `from` (a `[`) ends; -1 when it is not one. */
function optionsEnd(line: string, from: number): number {
  let at = from + 1;
  for (;;) {
    const key = runEnd(line, at, isWord);
    if (key === at || line.charCodeAt(key) !== 61) return -1; // `=`
    const value = runEnd(line, key + 1, isWord);
    if (value === key + 1) return -1;
    const next = line.charCodeAt(value);
    if (next === 93) return value + 1; // `]`
    if (next !== 44) return -1; // `,`
    at = line.charCodeAt(value + 1) === 32 ? value + 2 : value + 1;
  }
}

/** The value of a run of decimal digits, as `Number` reads it, without its general parser. */
function digitsValue(line: string, from: number, to: number): number {
  if (to - from > 15) return Number(line.slice(from, to));
  let value = 0;
  for (let index = from; index < to; index += 1) value = value * 10 + line.charCodeAt(index) - 48;
  return value;
}

/** The marker starting at `index` (a `section_`), by character codes: what the pattern reads. */
export function readMarker(line: string, index: number): SectionMarker | undefined {
  let at = index + "section_".length;
  let kind: "start" | "end";
  if (line.startsWith("start:", at)) {
    kind = "start";
    at += "start:".length;
  } else if (line.startsWith("end:", at)) {
    kind = "end";
    at += "end:".length;
  } else {
    return undefined;
  }
  const digits = runEnd(line, at, isDigit);
  if (digits === at || line.charCodeAt(digits) !== 58) return undefined; // `:`
  const nameEnd = runEnd(line, digits + 1, isNameCharacter);
  if (nameEnd === digits + 1) return undefined;
  let end = nameEnd;
  if (line.charCodeAt(end) === 91) {
    // `[`: options, or no marker at all (the pattern wants `\r` right after the name).
    end = optionsEnd(line, end);
    if (end === -1) return undefined;
  }
  if (!line.startsWith("\r\x1b[0K", end)) return undefined;
  return {
    kind,
    at: digitsValue(line, at, digits),
    name: line.slice(digits + 1, nameEnd),
    options: end === nameEnd ? undefined : line.slice(nameEnd, end),
    end: end + "\r\x1b[0K".length,
  };
}
