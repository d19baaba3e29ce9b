/**
 * The lines of a human plan the text reader recognises, and the small pure pieces it is built
 * from: `plan-text.ts` reads a plan with them.
 */
import type { PlanDiagnostic, PlanResource, ResourceAction } from "./plan-summary.js";

export const HEADING_PHRASES: Record<
  string,
  { action: ResourceAction | "forget"; reason?: string }
> = {
  "will be created": { action: "create" },
  "will be read during apply": { action: "read" },
  "will be updated in-place": { action: "update" },
  "will be destroyed": { action: "delete" },
  "must be replaced": { action: "replace" },
  "is tainted, so must be replaced": { action: "replace", reason: "tainted" },
  "will be replaced, as requested": { action: "replace", reason: "replacement requested" },
  "will be replaced due to changes in replace_triggered_by": {
    action: "replace",
    reason: "due to changes in replace_triggered_by",
  },
  // Terraform counts this as an add: the old object stays, unmanaged (`destroy = false`).
  "must be replaced, but the existing object will not be destroyed": {
    action: "create",
    reason: "replacement; the existing object will not be destroyed",
  },
  "will be imported": { action: "no-op" },
  "will no longer be managed by Terraform, but will not be destroyed": { action: "forget" },
  "will be removed from Terraform state, but will not be destroyed": { action: "forget" },
};

/** The heading phrases, longest first: where one ends another, a heading holds the longer. */
const PHRASES_LONGEST_FIRST = Object.keys(HEADING_PHRASES).sort((a, b) => b.length - a.length);

/**
 * Where the text of a comment line (`  # ...`) starts, after its indentation (white space as
 * `\s` reads it), `#` and one space; -1 when the line does not start so.
 */
export function commentTextStart(text: string): number {
  let at = 0;
  while (isSpace(text.charCodeAt(at))) at += 1;
  return text.charCodeAt(at) === 0x23 && text.charCodeAt(at + 1) === 0x20 ? at + 2 : -1;
}

/**
 * The phrase of the heading `text` (`  # <address> will be created`) whose address starts at
 * `from` (its `commentTextStart`); undefined when the line is no heading. What the pattern
 * `^\s*# (.+?) (<the phrases, longest first>)$` reads, without its backtracking: its lazy address
 * stops at the first place where a space and a whole phrase end the line, which is before the
 * longest phrase the line ends with, if that leaves an address of at least one character; `.`
 * takes no line terminator into the address.
 */
export function headingPhrase(text: string, from: number): string | undefined {
  for (const phrase of PHRASES_LONGEST_FIRST) {
    const space = text.length - phrase.length - 1;
    if (space <= from || text.charCodeAt(space) !== 0x20 || !text.endsWith(phrase)) continue;
    // A shorter phrase leaves a longer address, holding the same line terminator.
    return lineHoldsTerminator(text, from, space) ? undefined : phrase;
  }
  return undefined;
}

const LINE_TERMINATORS = ["\n", "\r", "\u2028", "\u2029"];

/**
 * `holdsLineTerminator` of text that is one line, searched for each terminator by a call: faster
 * than a loop over the characters, and the search ends with the line.
 */
function lineHoldsTerminator(line: string, from: number, to: number): boolean {
  for (const terminator of LINE_TERMINATORS) {
    const at = line.indexOf(terminator, from);
    if (at !== -1 && at < to) return true;
  }
  return false;
}

/** Whether the text from `from` to `to` holds a line terminator, which `.` does not match. */
export function holdsLineTerminator(text: string, from: number, to: number): boolean {
  for (let at = from; at < to; at += 1) {
    const code = text.charCodeAt(at);
    if (code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029) return true;
  }
  return false;
}

/** Whether the line is a heading, `  # <address> <phrase>`, as `headingPhrase` reads it. */
export function isHeading(text: string): boolean {
  const from = commentTextStart(text);
  return from !== -1 && headingPhrase(text, from) !== undefined;
}

export const MOVED_HEADING = /^\s*# (.+?) has moved to (.+)$/;
/**
 * The last characters a heading can end with, but for a move's and an action's
 * (`has moved to <address>`, `will be invoked ...`), which end anywhere: the last character of
 * each phrase, and `d` for drift and deferrals (`has changed`, `has been deleted`, `was deferred`).
 */
const HEADING_ENDS = new Set(
  Object.keys(HEADING_PHRASES)
    .map((phrase) => phrase.charCodeAt(phrase.length - 1))
    .concat("d".charCodeAt(0)),
);

/**
 * Whether a comment line (`# ...`, without trailing space) may be a heading: most comments under
 * a heading (`# (3 unchanged attributes hidden)`) end otherwise and are not run through the
 * heading patterns.
 */
export function mayBeHeading(text: string): boolean {
  return (
    mayEndHeading(text.charCodeAt(text.length - 1)) ||
    text.includes(" has moved to ") ||
    text.includes(" will be invoked")
  );
}

/** Whether a heading that is not a move's or an action's may end with this character. */
export function mayEndHeading(code: number): boolean {
  return HEADING_ENDS.has(code);
}
/** Headings that describe something other than a planned action: drift, deferrals, actions. */
export const OTHER_HEADING =
  /^\s*# \S.* (?:has changed|has been deleted|was deferred|will be invoked(?: .*)?)$/;
export const DEPOSED = /^(.+) \(deposed object ([^)\s]+)\)$/;
export const REASON_COMMENT = /^\s*#\s*\((.+)\)$/;
export const WARNING_COMMENT = /^\s*#\s*Warning: (.+)$/;
export const PLAN_LINE =
  /^\s*Plan: (?:(\d+) to import, )?(\d+) to add, (\d+) to change, (\d+) to destroy(?:, (\d+) to forget)?\./;
export const NO_CHANGES = /^\s*No changes\./;
export const OUTPUTS_HEADER = /^\s*Changes to Outputs:\s*$/;
export const OUTPUT_ENTRY = /^ {0,2}([+~-]) +([^\s=]+) *=(?: |$)/;
export const PLAIN_DIAGNOSTIC = /^(Error|Warning): (.*)$/;
export const BOX_CONTENT = /^\s*│ ?(.*)$/;
export const UNFRAMED_BULLET = /^[*-] /;
/**
 * A resource line of Terraform before 0.12, under "Terraform will perform the following actions:":
 * `  + aws_instance.web`, `-/+ aws_instance.db (tainted) (new resource required)`, ` <= data.x.y`.
 */
export const LEGACY_RESOURCE =
  /^ {0,2}(-\/\+|\+\/-|<=|[+~-]) ([A-Za-z][\w-]*(?:\[[^\]]*\])?(?:\.[\w-]+(?:\[[^\]]*\])?)+)((?: \([^)]*\))*)$/;
/**
 * Whether a line whose text starts with `first` and ends with `last` may be what `LEGACY_RESOURCE`
 * matches: it starts with a symbol (`-`, `+`, `~`, `<`) and ends as an address or a note does (a
 * word character, `-`, `]` or `)`).
 */
export function mayBeLegacyLine(first: number, last: number): boolean {
  if (first !== 0x2d && first !== 0x2b && first !== 0x7e && first !== 0x3c) return false;
  return isWordCharacter(last) || last === 0x2d || last === 0x5d || last === 0x29;
}
export const LEGACY_ACTIONS_HEADER = /^\s*Terraform will perform the following actions:\s*$/;

export const MAX_DETAIL_LINES = 200;
export const MAX_DETAIL_CHARS = 10_000;

export const LEGACY_SYMBOLS: Record<string, ResourceAction> = {
  "+": "create",
  "-": "delete",
  "~": "update",
  "<=": "read",
  "-/+": "replace",
  "+/-": "replace",
};

export const OUTPUT_SYMBOLS: Record<string, ResourceAction> = {
  "+": "create",
  "-": "delete",
  "~": "update",
};

export interface ResourceState {
  resource: PlanResource;
  headingReason?: string;
  comments: string[];
  forcedBy: string[];
}

export interface DiagnosticState {
  framed: boolean;
  kind?: "Error" | "Warning";
  summary: string;
  detail: string[];
  chars: number;
  truncated: boolean;
  /** Unframed only: a paragraph of detail text has been read. */
  sawDetailText: boolean;
  /** Unframed only: the line before was blank. */
  afterBlank: boolean;
  /** Unframed only: the last line with text ended with `:`, introducing what follows. */
  introduces: boolean;
}

/** `[A-Za-z0-9_]`, by character code: cheaper per line than a pattern. */
export function isWordCharacter(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 95
  );
}

/**
 * Whether a character is white space as `trim` and the patterns' `\s` read it: ASCII space, tab
 * and line ends, no-break and other Unicode spaces, line and paragraph separators, and the BOM.
 */
export function isSpace(code: number): boolean {
  if (code <= 32) return code === 32 || (code >= 9 && code <= 13);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/**
 * A copy of text read from a line, for keeping. A substring shares its parent's memory, and each
 * line is a piece of a chunk of the log: keeping an address as it was cut out would keep that
 * whole chunk alive, and over a long log nearly every chunk.
 */
export function detached(text: string): string {
  // The joined string is laid out anew when it is cut, and the cut shares that copy, not the
  // line: a copy made many times faster than `structuredClone`'s, which goes through a
  // serializer.
  return ` ${text}`.slice(1);
}

export function finishDiagnostic(state: DiagnosticState): PlanDiagnostic {
  const lines = [...state.detail];
  while (lines.length > 0 && lines[0]?.trim() === "") lines.shift();
  while (lines.length > 0 && lines[lines.length - 1]?.trim() === "") lines.pop();
  if (state.truncated) lines.push("…");
  return { summary: detached(state.summary), detail: detached(lines.join("\n")) };
}

export function resourceReason(state: ResourceState): string | undefined {
  const { headingReason, comments, forcedBy } = state;
  // Most resources have no reason, and most replaced ones one attribute that forces it: no
  // lists built for them.
  if (comments.length === 0 && forcedBy.length === 0) return headingReason;
  if (headingReason === undefined && comments.length === 0 && forcedBy.length === 1) {
    const name = forcedBy[0] ?? "";
    return name === "" ? "forces replacement" : `${name} forces replacement`;
  }
  const parts = [...(headingReason === undefined ? [] : [headingReason]), ...comments];
  if (forcedBy.length > 0) {
    const named = forcedBy.filter((name) => name !== "");
    parts.push(
      named.length > 0
        ? `${[...new Set(named)].join(", ")} forces replacement`
        : "forces replacement",
    );
  }
  return parts.length > 0 ? parts.join("; ") : undefined;
}
