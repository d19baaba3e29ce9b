/**
 * GitLab's collapsible section markers in a job log, `section_start:<unix>:<name>[<options>]\r\e[0K`
 * and `section_end:<unix>:<name>\r\e[0K`, and the sections they open and close.
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

/**
 * The sections of one log: every one started, and those still open. They are kept as columns of
 * numbers and shared strings, one row per section, rather than as an object each: a long log
 * starts many, and columns of numbers are memory the garbage collector never has to walk.
 */
export interface SectionBook {
  /** The book's copy of each section's name. */
  name: string[];
  startedAt: number[];
  /** `OPEN` while the section is open. */
  endedAt: number[];
  options: Record<string, string>[];
  startLine: number[];
  /** `OPEN` while the section is open. */
  endLine: number[];
  /**
   * Rows of sections started and not yet ended, by name, latest last: an end marker finds its
   * section without a search through every open one, which a log of many unended sections would
   * make quadratic.
   */
  open: Map<string, number[]>;
  /**
   * One copy of each section name. A name cut out of its line would keep the line's whole chunk
   * of log in memory; and the same few names recur in every job.
   */
  names: Map<string, string>;
  /** The same names in a list, searched before a name is cut out of its line while they are few. */
  nameList: string[];
}

/** An end that has not been read yet: unix seconds and line numbers are never negative. */
const OPEN = -1;

/** What a marker says, read where one was found. */
export interface SectionMarker {
  start: boolean;
  /** Unix seconds. */
  at: number;
  /** The book's copy of the name. */
  name: string;
  /** The `[key=value,...]` options as written, or "" when it has none. */
  options: string;
  /** Where the marker ends: one past its `\r\e[0K`. */
  end: number;
}

export function createSectionBook(): SectionBook {
  return {
    name: [],
    startedAt: [],
    endedAt: [],
    options: [],
    startLine: [],
    endLine: [],
    open: new Map(),
    names: new Map(),
    nameList: [],
  };
}

/* eslint-disable no-control-regex -- this pattern exists to match control characters */

/**
 * GitLab's section marker: prefix, optional `[key=value,...]` options, and the `\r\e[0K` suffix.
 * Sticky: it is tried where a search for `section_` has found one, not at every character. It is
 * the reference `readMarker` is tested against.
 */
const SECTION_MARKER =
  /section_(start|end):(\d+):([a-zA-Z0-9_.-]+)(\[\w+=\w+(?:, ?\w+=\w+)*\])?\r\x1b\[0K/y;

/* eslint-enable no-control-regex */

/** The marker at `at` (where `section_` is) read by the pattern; false when there is none. */
export function matchMarker(
  text: string,
  at: number,
  book: SectionBook,
  found: SectionMarker,
): boolean {
  SECTION_MARKER.lastIndex = at;
  const match = SECTION_MARKER.exec(text);
  if (match === null) return false;
  const digits = match[2] ?? "";
  found.start = match[1] === "start";
  found.at = digits.length > 15 ? Number(digits) : digitsValue(digits, 0);
  found.name = sectionName(book, match[3] ?? "");
  found.options = match[4] ?? "";
  found.end = at + match[0].length;
  return true;
}

const isDigit = (code: number) => code >= 48 && code <= 57;

/** `\w`: `[A-Za-z0-9_]`. */
const isWord = (code: number) =>
  (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || isDigit(code) || code === 95;

/** A character of a section name: `[a-zA-Z0-9_.-]`. */
const isNameCharacter = (code: number) => isWord(code) || code === 0x2e || code === 0x2d;

/** The value of the decimal digits from `from`, as `Number` reads them, without its parser. */
function digitsValue(text: string, from: number): number {
  let value = 0;
  for (let index = from; isDigit(text.charCodeAt(index)); index += 1) {
    value = value * 10 + text.charCodeAt(index) - 48;
  }
  return value;
}

/** Where a run of `\w` from `from` ends; `from` itself when there is none. */
function wordEnd(text: string, from: number): number {
  let index = from;
  while (isWord(text.charCodeAt(index))) index += 1;
  return index;
}

/** Where the options `[\w+=\w+(, ?\w+=\w+)*]` starting at `at` (a `[`) end; -1 when they do not. */
function optionsEnd(text: string, at: number): number {
  let index = at + 1;
  for (;;) {
    const key = wordEnd(text, index);
    if (key === index || text.charCodeAt(key) !== 0x3d) return -1;
    index = wordEnd(text, key + 1);
    if (index === key + 1) return -1;
    const next = text.charCodeAt(index);
    if (next === 0x5d) return index + 1;
    if (next !== 0x2c) return -1;
    index += text.charCodeAt(index + 1) === 0x20 ? 2 : 1;
  }
}

/** Whether `text` holds `word` at `at`, compared by character codes. */
function holdsAt(text: string, at: number, word: string): boolean {
  for (let index = 0; index < word.length; index += 1) {
    if (text.charCodeAt(at + index) !== word.charCodeAt(index)) return false;
  }
  return true;
}

/**
 * The marker at `at` (where `section_` is), read by character codes: what `matchMarker` reads,
 * without a pattern and its captures. False when the text there is not a marker.
 */
export function readMarker(
  text: string,
  at: number,
  book: SectionBook,
  found: SectionMarker,
): boolean {
  let index = at + 8;
  const start = holdsAt(text, index, "start:");
  if (start) index += 6;
  else if (holdsAt(text, index, "end:")) index += 4;
  else return false;
  const digits = index;
  // The value is read with the digits: exact while they are few enough (15), as `Number` reads it.
  let value = 0;
  for (let code = text.charCodeAt(index); isDigit(code); code = text.charCodeAt(index)) {
    value = value * 10 + code - 48;
    index += 1;
  }
  if (index === digits || text.charCodeAt(index) !== 0x3a) return false;
  const digitsEnd = index;
  const name = index + 1;
  index = name;
  while (isNameCharacter(text.charCodeAt(index))) index += 1;
  if (index === name) return false;
  const nameEnd = index;
  if (text.charCodeAt(index) === 0x5b) {
    const end = optionsEnd(text, index);
    if (end === -1) return false;
    index = end;
  }
  if (!holdsAt(text, index, "\r\x1b[0K")) return false;
  found.start = start;
  found.at = digitsEnd - digits > 15 ? Number(text.slice(digits, digitsEnd)) : value;
  found.name = keptName(book, text, name, nameEnd);
  found.options = index === nameEnd ? "" : text.slice(nameEnd, index);
  found.end = index + 5;
  return true;
}

/** A character of a marker's options but its brackets: `\w`, `=`, `,` and space. */
const isOptionCharacter = (code: number) =>
  isWord(code) || code === 0x3d || code === 0x2c || code === 0x20;

/**
 * The ASCII characters of a class, one byte each (1 for those it holds): a loop over many
 * characters looks each up in one read rather than through the comparisons of its test.
 */
function characterTable(test: (code: number) => boolean): Uint8Array {
  return new Uint8Array(128).map((_, code) => (test(code) ? 1 : 0));
}

const NAME_CHARACTERS = characterTable(isNameCharacter);
const OPTION_CHARACTERS = characterTable(isOptionCharacter);
const DIGITS = characterTable(isDigit);

/**
 * Where a run of characters of the class `table` holds, ending just before `to`, starts; not
 * before `from`.
 */
function runStart(text: string, from: number, to: number, table: Uint8Array): number {
  let index = to;
  while (index > from && table[text.charCodeAt(index - 1)] === 1) index -= 1;
  return index;
}

/**
 * The marker whose `\r\e[0K` starts at `cr`, read back from there to its `section_`, no further
 * back than `from`: what `readMarker` reads where that marker starts, without a search for
 * `section_` (which costs as much as reading the whole marker). Each part of a marker ends at a
 * character the part before it cannot hold, so a marker that ends at a given carriage return can
 * start in one place only. Without a `book` only where it starts and ends is read. Returns where
 * it starts (its `section_`), or -1 when the text before `cr` ends no marker.
 */
export function readMarkerBefore(
  text: string,
  cr: number,
  from: number,
  book: SectionBook | undefined,
  found: SectionMarker,
): number {
  if (!holdsAt(text, cr, "\r\x1b[0K")) return -1;
  let nameEnd = cr;
  if (text.charCodeAt(cr - 1) === 0x5d) {
    // `]`: the options, back to their `[`, then read as `readMarker` reads them.
    nameEnd = runStart(text, from, cr - 1, OPTION_CHARACTERS) - 1;
    if (nameEnd < from || text.charCodeAt(nameEnd) !== 0x5b) return -1;
    if (optionsEnd(text, nameEnd) !== cr) return -1;
  }
  const name = runStart(text, from, nameEnd, NAME_CHARACTERS);
  if (name === nameEnd || text.charCodeAt(name - 1) !== 0x3a) return -1;
  const digits = runStart(text, from, name - 1, DIGITS);
  if (digits === name - 1 || text.charCodeAt(digits - 1) !== 0x3a) return -1;
  const kind = digits - 1;
  const start = kind - 13 >= from && holdsAt(text, kind - 13, "section_start");
  if (!start && !(kind - 11 >= from && holdsAt(text, kind - 11, "section_end"))) return -1;
  found.start = start;
  found.end = cr + 5;
  if (book !== undefined) {
    found.at = kind - digits > 15 ? Number(text.slice(digits, kind)) : digitsValue(text, digits);
    found.name = keptName(book, text, name, nameEnd);
    found.options = nameEnd === cr ? "" : text.slice(nameEnd, cr);
  }
  return start ? kind - 13 : kind - 11;
}

/** No options: one object for every section that has none, never written to. */
const NO_OPTIONS: Record<string, string> = Object.freeze({});

function parseOptions(raw: string): Record<string, string> {
  if (raw === "") return NO_OPTIONS;
  const options: Record<string, string> = {};
  for (const pair of raw.slice(1, -1).split(",")) {
    const [key, value] = pair.trim().split("=");
    if (key !== undefined && value !== undefined) options[key] = value;
  }
  return options;
}

function sectionName(book: SectionBook, name: string): string {
  let kept = book.names.get(name);
  if (kept === undefined) {
    kept = structuredClone(name);
    book.names.set(kept, kept);
    book.nameList.push(kept);
  }
  return kept;
}

/** How many names are searched one by one before a name is looked up by its hash. */
const FEW_NAMES = 16;

/**
 * The book's copy of the name `text.slice(from, to)`: found among the few names seen so far
 * without cutting it out and hashing it, the usual case, else looked up.
 */
function keptName(book: SectionBook, text: string, from: number, to: number): string {
  const list = book.nameList;
  if (list.length <= FEW_NAMES) {
    for (const name of list) {
      if (name.length === to - from && holdsAt(text, from, name)) return name;
    }
  }
  return sectionName(book, text.slice(from, to));
}

/** A marker read at clean line `line`: a section starts, or the latest open one of its name ends. */
export function applyMarker(book: SectionBook, marker: SectionMarker, line: number): void {
  if (marker.start) {
    const row = book.name.length;
    book.name.push(marker.name);
    book.startedAt.push(marker.at);
    book.endedAt.push(OPEN);
    book.options.push(parseOptions(marker.options));
    book.startLine.push(line);
    book.endLine.push(OPEN);
    const sameName = book.open.get(marker.name);
    if (sameName === undefined) book.open.set(marker.name, [row]);
    else sameName.push(row);
    return;
  }
  // Like GitLab, an end marker for a section that is not open is ignored.
  const row = book.open.get(marker.name)?.pop();
  if (row !== undefined) {
    book.endedAt[row] = marker.at;
    book.endLine[row] = line;
  }
  // An emptied list stays, for the name's next start: as few as the names are.
}

/** Every section started so far, in order, as it stands now. */
export function listSections(book: SectionBook): TraceSection[] {
  const sections: TraceSection[] = [];
  for (let row = 0; row < book.name.length; row += 1) {
    const section: TraceSection = {
      name: book.name[row] ?? "",
      startedAt: book.startedAt[row] ?? 0,
      options: { ...book.options[row] },
      startLine: book.startLine[row] ?? 0,
    };
    const endedAt = book.endedAt[row] ?? OPEN;
    if (endedAt !== OPEN) {
      section.endedAt = endedAt;
      section.endLine = book.endLine[row] ?? 0;
    }
    sections.push(section);
  }
  return sections;
}

/** Distinct section names, in order of first appearance. */
export function sectionNames(book: SectionBook): string[] {
  return [...new Set(book.name)];
}
