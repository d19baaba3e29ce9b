/**
 * Which lines the plan text reader can pass over unread, decided from a few characters of the
 * line where it stands in a longer text (a chunk of a job log), without cutting it out: reading
 * such a line would change nothing in what the reader keeps. Most lines of a long plan log are
 * these: attributes inside resource blocks, heredoc values, the runner's output.
 */
import { isWordCharacter, mayBeHeading } from "./plan-text-lines.js";
import type { PlanTextState } from "./plan-text-state.js";

/**
 * Where the next `<` and `{` of the text being read are: each found by one search that moves on
 * with the lines, never by a search per line. -2: not searched yet; -1: none left.
 */
export interface LineScan {
  angle: number;
  brace: number;
}

export function createLineScan(): LineScan {
  return { angle: -2, brace: -2 };
}

export function beginScan(scan: LineScan): void {
  scan.angle = -2;
  scan.brace = -2;
}

/** Whether the line from `from` to `end` holds a `<`. */
function holdsAngle(scan: LineScan, text: string, from: number, end: number): boolean {
  if (scan.angle !== -1 && scan.angle < from) scan.angle = text.indexOf("<", from);
  return scan.angle !== -1 && scan.angle < end;
}

/** Whether the line from `from` to `end` holds a `{`. */
function holdsBrace(scan: LineScan, text: string, from: number, end: number): boolean {
  if (scan.brace !== -1 && scan.brace < from) scan.brace = text.indexOf("{", from);
  return scan.brace !== -1 && scan.brace < end;
}

/**
 * The landmark a line whose text starts with this letter may be (`Error:`, `Warning:`, `Plan:`,
 * `No changes.`, `Terraform will perform ...`, `Changes to Outputs:`); "" for any other letter.
 */
function landmarkFor(first: number): string {
  switch (first) {
    case 0x45: // E
      return "Error: ";
    case 0x57: // W
      return "Warning: ";
    case 0x50: // P
      return "Plan: ";
    case 0x4e: // N
      return "No changes.";
    case 0x54: // T
      return "Terraform will perform the following actions:";
    case 0x43: // C
      return "Changes to Outputs:";
    default:
      return "";
  }
}

/**
 * Whether the clean line whose text starts at `first` in `text` and ends before `end` may start
 * with `word`: false only where a character of `word` differs from the text's before an escape
 * sequence (whose ESC stands where the clean line's next character may be anything) is met.
 */
function mayStartWith(text: string, first: number, end: number, word: string): boolean {
  for (let index = 0; index < word.length; index += 1) {
    if (first + index >= end) return false;
    const code = text.charCodeAt(first + index);
    if (code === 0x1b) return true;
    if (code !== word.charCodeAt(index)) return false;
  }
  return true;
}

/**
 * Whether the clean line whose text is in `text` from `first` to `last` may end with `word`:
 * false only where a character differs, read back from `last`, while nothing between `first` and
 * `last` is an escape sequence (read back, the end of one cannot be told from text).
 */
function mayEndWith(text: string, first: number, last: number, word: string): boolean {
  const escape = text.indexOf("\x1b", first);
  if (escape !== -1 && escape < last) return true;
  for (let index = 1; index <= word.length; index += 1) {
    const at = last + 1 - index;
    if (at < first) return true;
    if (text.charCodeAt(at) !== word.charCodeAt(word.length - index)) return false;
  }
  return true;
}

/**
 * Whether the comment line whose text is in `text` from `first` (its `#`) to `end` may be a
 * heading: by `mayBeHeading`, when no escape sequence stands in it to hide what it says.
 */
function mayBeHeadingAt(text: string, first: number, end: number): boolean {
  const escape = text.indexOf("\x1b", first);
  return (escape !== -1 && escape < end) || mayBeHeading(text.slice(first, end));
}

/**
 * Whether the line of `text` that starts at `first - indent` (its `indent` spaces) and ends at
 * `end` can be passed over: read, it would change nothing. `first` is where its first character
 * other than space is (`end` when there is none) and `last` where its last is, not counting the
 * escape sequences it may hold. Any line this cannot decide cheaply is read.
 */
export function passesOver(
  state: PlanTextState,
  scan: LineScan,
  text: string,
  first: number,
  indent: number,
  last: number,
  end: number,
): boolean {
  if (state.diagnostic !== undefined || state.inActions || state.inOutputs || state.afterHeading)
    return false;
  if (first >= end) return true; // a blank line
  const code = text.charCodeAt(first);
  // Tabs and other white space, non-ASCII text (frames, Unicode spaces): read.
  if (code <= 0x20 || code >= 0x7f) return false;
  const heredocEnd = state.heredocEnd;
  if (heredocEnd !== undefined) {
    // Data while further in than its opener, unless it may be the word that ends it.
    return indent >= state.heredocIndent && code !== heredocEnd.charCodeAt(0);
  }
  const comment = code === 0x23; // `#`: a heading, or a comment under one
  const landmark = comment ? "" : landmarkFor(code);
  if (landmark !== "" && mayStartWith(text, first, end, landmark)) return false;
  const lastCode = text.charCodeAt(last);
  // Space at the end is trimmed before a line is read: read it.
  if (lastCode <= 0x20 || lastCode >= 0x7f) return false;
  const lineStart = first - indent;
  if (isWordCharacter(lastCode) && holdsAngle(scan, text, lineStart, end)) return false;
  if (comment && mayBeHeadingAt(text, first, end)) return false;
  if (state.current === undefined) return true;
  // In a resource: its marker line (`resource "type" "name" {`), `# forces replacement`.
  if (lastCode === 0x74 && mayEndWith(text, first, last, "forces replacement")) return false;
  return !holdsBrace(scan, text, lineStart, end);
}
