/**
 * Which lines the plan text reader can pass over unread, decided from a few characters of the
 * line where it stands in a longer text (a chunk of a job log), without cutting it out: reading
 * such a line would change nothing in what the reader reports. Most lines of a long plan log are
 * these: attributes inside resource blocks, heredoc values, the runner's output. A line passed
 * over that would have ended something the reader was in (the comments under a heading, a
 * heredoc value) ends it here, as reading it would have.
 */
import { heredocOpenerIn, markerReplaces } from "./plan-text-chars.js";
import { isWordCharacter, mayBeLegacyLine, mayEndHeading } from "./plan-text-lines.js";
import type { PlanTextState } from "./plan-text-state.js";

/**
 * Where the next `<` and ESC of the text being read are: each found by one search that moves on
 * with the lines, never by a search per line. -2: not searched yet; -1: none left.
 */
export interface LineScan {
  angle: number;
  escape: number;
}

export function createLineScan(): LineScan {
  return { angle: -2, escape: -2 };
}

export function beginScan(scan: LineScan): void {
  scan.angle = -2;
  scan.escape = -2;
}

/** Whether the line from `from` to `end` holds a `<`. */
function holdsAngle(scan: LineScan, text: string, from: number, end: number): boolean {
  if (scan.angle !== -1 && scan.angle < from) scan.angle = text.indexOf("<", from);
  return scan.angle !== -1 && scan.angle < end;
}

/** Whether the line from `from` to `end` holds an ESC. */
function holdsEscape(scan: LineScan, text: string, from: number, end: number): boolean {
  if (scan.escape !== -1 && scan.escape < from) scan.escape = text.indexOf("\x1b", from);
  return scan.escape !== -1 && scan.escape < end;
}

const FORCES = "forces replacement";
const MOVED = " has moved to ";
const INVOKED = " will be invoked";

/**
 * `isControl`'s characters, for a search of a comment or an opener: one native call searches a
 * line faster than a loop over its characters (a comment 1.04–1.16× the time by the loop).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\x00-\x1f\x7f]/;

/**
 * Whether a character is a control character: one the cleaner may remove from the line it makes
 * (all but tab, newline, carriage return and ESC), which the rules read as one that may be
 * anything, so that no line is passed over for what it only seems to say.
 */
const isControl = (code: number) => code < 0x20 || code === 0x7f;

/** Whether the text from `from` to `end` holds a control character. */
function holdsControl(text: string, from: number, end: number): boolean {
  for (let at = from; at < end; at += 1) if (isControl(text.charCodeAt(at))) return true;
  return false;
}

/**
 * Whether the text from `from` to `end` may hold ` has moved to ` or ` will be invoked`: what
 * `mayBeHeading` searches a comment for, or a control character that may hide them. The comment
 * is cut out (a slice, not a copy) and searched: a search of the text would go on past the line's
 * end to the end of the chunk, and a call searches faster than a loop over the characters.
 */
function holdsHeadingWords(text: string, from: number, end: number): boolean {
  const comment = text.slice(from, end);
  return comment.includes(MOVED) || comment.includes(INVOKED) || CONTROL.test(comment);
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
 * sequence or a control character (which stand where the clean line's next character may be
 * anything) is met.
 */
function mayStartWith(text: string, first: number, end: number, word: string): boolean {
  for (let index = 0; index < word.length; index += 1) {
    if (first + index >= end) return false;
    const code = text.charCodeAt(first + index);
    if (isControl(code)) return true;
    if (code !== word.charCodeAt(index)) return false;
  }
  return true;
}

/**
 * Whether the clean line whose text is in `text` from `first` to `last` may end with `word`:
 * false only where a character differs, read back from `last`, while nothing between `first` and
 * `last` is an escape sequence (read back, the end of one cannot be told from text).
 */
function mayEndWith(
  scan: LineScan,
  text: string,
  first: number,
  last: number,
  word: string,
): boolean {
  return holdsEscape(scan, text, first, last) || plainMayEndWith(text, first, last, word);
}

/**
 * `mayEndWith` of a line that holds no escape sequence: compared in one call where the line is as
 * long as the word (a call compares faster than a loop over the characters), else by characters;
 * a control character where they differ may stand for any.
 */
function plainMayEndWith(text: string, first: number, last: number, word: string): boolean {
  const from = last + 1 - word.length;
  if (from >= first) return text.startsWith(word, from) || holdsControl(text, from, last + 1);
  for (let index = 1; index <= word.length; index += 1) {
    const at = last + 1 - index;
    if (at < first) return true;
    const code = text.charCodeAt(at);
    if (code !== word.charCodeAt(word.length - index)) return isControl(code);
  }
  return true;
}

/**
 * Whether the comment line whose text is in `text` from `first` (its `#`) to `end` may be a
 * heading: by `mayBeHeading`, when no escape sequence stands in it to hide what it says.
 */
function mayBeHeadingAt(scan: LineScan, text: string, first: number, end: number): boolean {
  return holdsEscape(scan, text, first, end) || plainMayBeHeading(text, first, end);
}

/**
 * `mayBeHeading` of the comment from `first` to `end`, which holds no escape sequence, read where
 * it stands rather than cut out.
 */
function plainMayBeHeading(text: string, first: number, end: number): boolean {
  return mayEndHeading(text.charCodeAt(end - 1)) || holdsHeadingWords(text, first, end);
}

/** Whether every line is to be read as things stand: in a diagnostic or the outputs list. */
function readsEveryLine(state: PlanTextState): boolean {
  return state.diagnostic !== undefined || state.inOutputs;
}

/**
 * Whether a line indented `indent` spaces, whose text starts with `code` and ends with `last`, is
 * to be read because it may be a resource line of Terraform before 0.12 (`  + aws_instance.web`,
 * indented two spaces at most, starting with a symbol and ending as an address or a note does).
 * Under "Terraform will perform the following actions:", which every plan prints, until its
 * `Plan:` line: a line further in (an attribute, a heredoc's value, a block's end) or shaped
 * otherwise (a heading, a marker line ending in `{`) is passed over by the rules for any other
 * line. Reading every line there read nearly all of a plan's.
 */
const mayBeLegacyResource = (state: PlanTextState, indent: number, code: number, last: number) =>
  state.inActions && indent <= 2 && mayBeLegacyLine(code, last);

/**
 * Whether nothing more the block of the resource being read says can change what is reported: it
 * is a replacement (no line of its block changes that) and the list will not keep it, so its
 * reasons (`# forces replacement`) and its order (`-/+`, `+/-`) are never shown.
 */
function settled(state: PlanTextState): boolean {
  const resource = state.current?.resource;
  return resource?.action === "replace" && !state.resources.keeps(resource);
}

/**
 * Under a heading, before its marker line: whether a line the rules for any other line pass over,
 * whose text starts at `first` and is not a comment, ends the heading's comments unread, as
 * reading it would. A marker line that replaces (`-/+`, `+/-`) is read unless the resource is
 * settled: it makes the resource a replacement and gives the order.
 */
function endsComments(state: PlanTextState, text: string, first: number, end: number): boolean {
  if (mayReplace(text, first, end) && !settled(state)) return false;
  state.afterHeading = false;
  return true;
}

/**
 * A blank line, passed over: under a heading, outside a heredoc, it ends the heading's comments,
 * as reading it would.
 */
function passesBlank(state: PlanTextState): boolean {
  if (state.afterHeading && state.heredocEnd === undefined) state.afterHeading = false;
  return true;
}

/**
 * A line of a heredoc value, whose text starts with `code` at `first` after `indent` spaces:
 * whether it is data, or ends the value with its word (then ended here, as reading it would end
 * it). One less far in than its opener is read, as is one under a heading's comments.
 */
function passesHeredoc(
  state: PlanTextState,
  word: string,
  text: string,
  first: number,
  indent: number,
  end: number,
): boolean {
  if (state.afterHeading || indent < state.heredocIndent) return false;
  if (text.charCodeAt(first) !== word.charCodeAt(0)) return true;
  const after = first + word.length;
  if (after > end || !text.startsWith(word, first)) return false;
  if (after !== end && text.charCodeAt(after) !== 0x20) return false;
  state.heredocEnd = undefined;
  return true;
}

/**
 * Whether the line of `text` that starts at `first - indent` (its `indent` spaces) and ends at
 * `end` can be passed over: read, it would change nothing reported. `first` is where its first
 * character other than space is (`end` when there is none) and `last` where its last is, not
 * counting the escape sequences it may hold. Any line this cannot decide cheaply is read. A line
 * with no escape sequence is decided as in a run (`passRun`).
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
  if (readsEveryLine(state)) return false;
  if (first >= end) return passesBlank(state);
  const lineStart = first - indent;
  // The text before `lineStart`, if any, is escape sequences: the clean line is the rest.
  if (!holdsEscape(scan, text, lineStart, end))
    return passesPlain(state, scan, text, lineStart, first, end);
  if (state.afterHeading) return false;
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
  if (mayBeLegacyResource(state, indent, code, lastCode)) return false;
  if (isWordCharacter(lastCode) && holdsAngle(scan, text, lineStart, end)) return false;
  if (comment && mayBeHeadingAt(scan, text, first, end)) return false;
  if (state.current === undefined) return true;
  // In a resource: `# forces replacement`, unless nothing it says can show.
  return !(lastCode === 0x74 && mayEndWith(scan, text, first, last, FORCES) && !settled(state));
}

/**
 * Whether the plain line of `text` from `start` to `end` (no escape sequence, no carriage return)
 * whose first character other than space is at `first` (`first < end`) can be passed over, while
 * no diagnostic or outputs list is being read. What reading it would end (a heredoc value with its
 * word, the comments under a heading) is ended.
 */
function passesPlain(
  state: PlanTextState,
  scan: LineScan,
  text: string,
  start: number,
  first: number,
  end: number,
): boolean {
  const code = text.charCodeAt(first);
  if (code <= 0x20 || code >= 0x7f) return false;
  const heredocEnd = state.heredocEnd;
  if (heredocEnd !== undefined)
    return passesHeredoc(state, heredocEnd, text, first, first - start, end);
  const comment = code === 0x23;
  if (!comment && mayBeLandmark(text, code, first, end)) return false;
  const lastCode = text.charCodeAt(end - 1);
  if (lastCode <= 0x20 || lastCode >= 0x7f) return false;
  if (mayBeLegacyResource(state, first - start, code, lastCode)) return false;
  // Ending in a word with a `<` before it, it may open a heredoc.
  const opens = isWordCharacter(lastCode) && holdsAngle(scan, text, start, end);
  // Under a heading, a comment may be its reason: read.
  if (comment) return !opens && !state.afterHeading && !plainMayBeHeading(text, first, end);
  if (state.current !== undefined) {
    if (lastCode === 0x74 && !settled(state) && plainMayEndWith(text, first, end - 1, FORCES))
      return false;
    if (state.afterHeading) return !opens && endsComments(state, text, first, end);
  }
  return !opens || opensHeredoc(state, text, start, first, end);
}

/**
 * Whether the line whose text starts at `first` and ends before `end` may be a marker line that
 * replaces: one by its symbol, or one whose `-` or `+` a control character follows.
 */
function mayReplace(text: string, first: number, end: number): boolean {
  if (markerReplaces(text, first)) return true;
  const code = text.charCodeAt(first);
  return (
    (code === 0x2d || code === 0x2b) && holdsControl(text, first + 1, Math.min(first + 3, end))
  );
}

/**
 * A line that may open a heredoc and that reading would change in nothing else: the heredoc it
 * opens, if it opens one, is opened here (its value is further in than the line), as reading it
 * would open it. One holding a control character, which may hide or make an opener, is read.
 */
function opensHeredoc(
  state: PlanTextState,
  text: string,
  start: number,
  first: number,
  end: number,
): boolean {
  if (CONTROL.test(text.slice(start, end))) return false;
  const word = heredocOpenerIn(text, start, end);
  if (word !== undefined) {
    state.heredocEnd = word;
    state.heredocIndent = first - start;
  }
  return true;
}

/** Whether the plain line whose text is from `first` to `end` may start like a landmark. */
function mayBeLandmark(text: string, code: number, first: number, end: number): boolean {
  // Most lines start with none of the landmarks' letters.
  if (code < 0x43 || code > 0x57) return false;
  const landmark = landmarkFor(code);
  return landmark !== "" && mayStartWith(text, first, end, landmark);
}

/**
 * Passes over the lines of `text` from `from` on while `passesOver` would pass each over, every
 * one of them a line whose newline stands before `stop`, where the text from `from` to `stop`
 * holds no escape sequence and no carriage return. Returns where the first line not passed over
 * starts: `from` when none was passed over.
 *
 * The same rules as `passesOver`, for lines known to be plain, in one loop over the newlines: a
 * long log's lines are mostly of such runs, and a call per line costs more than the rules.
 */
export function passRun(
  state: PlanTextState,
  scan: LineScan,
  text: string,
  from: number,
  stop: number,
): number {
  if (readsEveryLine(state)) return from;
  let start = from;
  for (let end = text.indexOf("\n", start); end !== -1 && end < stop;) {
    let first = start;
    // The newline at `end` ends the indentation.
    while (text.charCodeAt(first) === 0x20) first += 1;
    if (first < end ? !passesPlain(state, scan, text, start, first, end) : !passesBlank(state))
      return start;
    start = end + 1;
    end = text.indexOf("\n", start);
  }
  return start;
}
