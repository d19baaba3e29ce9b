/**
 * Which lines the plan text reader can pass over unread, decided from a few characters of the
 * line where it stands in a longer text (a chunk of a job log), without cutting it out: reading
 * such a line would change nothing in what the reader keeps. Most lines of a long plan log are
 * these: attributes inside resource blocks, heredoc values, the runner's output.
 */
import { isWordCharacter } from "./plan-text-lines.js";
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
 * The second letter of each landmark whose first letter is this one (`Error:`, `Warning:`,
 * `Plan:`, `No changes.`, `Terraform will perform`, `Changes to Outputs:`); 0 for any other.
 */
function landmarkSecond(first: number): number {
  switch (first) {
    case 0x45: // E
      return 0x72; // r
    case 0x57: // W
      return 0x61; // a
    case 0x50: // P
      return 0x6c; // l
    case 0x4e: // N
      return 0x6f; // o
    case 0x54: // T
      return 0x65; // e
    case 0x43: // C
      return 0x68; // h
    default:
      return 0;
  }
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
  if (code === 0x23) return false; // `#`: a heading or a comment under one
  const second = landmarkSecond(code);
  if (second !== 0) {
    const next = text.charCodeAt(first + 1);
    if (next === second || next === 0x1b) return false;
  }
  const lastCode = text.charCodeAt(last);
  // Space at the end is trimmed before a line is read: read it.
  if (lastCode <= 0x20 || lastCode >= 0x7f) return false;
  const lineStart = first - indent;
  if (isWordCharacter(lastCode) && holdsAngle(scan, text, lineStart, end)) return false;
  if (state.current === undefined) return true;
  // In a resource: its marker line (`resource "type" "name" {`), `# forces replacement`.
  return lastCode !== 0x74 && !holdsBrace(scan, text, lineStart, end);
}
