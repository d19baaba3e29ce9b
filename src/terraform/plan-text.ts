/**
 * Reading the human plan that `terraform plan -no-color` and `terraform show -no-color` print,
 * also when it is wrapped in other output: a GitLab job log, or an Atlantis pull-request comment
 * with markdown around one plan per project.
 *
 * Each resource comes from its heading, `  # <address> will be created` and the like (Terraform's
 * `resourceChangeComment`), refined by the marker line below it (`-/+ resource "type" "name" {`)
 * and by `# forces replacement` inside its body. Headings Terraform prints for drift ("has
 * changed", "has been deleted") and for deferred changes are not planned actions and are skipped.
 * Terraform before 0.12 has no headings: its resources are the `+ address`, `-/+ address (new
 * resource required)` lines under "Terraform will perform the following actions:". A heredoc
 * attribute value (`<<EOT` … `EOT`, a cloud-init file say) is data and is skipped unread.
 *
 * The parser takes one line at a time and keeps only what it reports (resources, counts, error
 * diagnostics of bounded size), so a long job log is read in little memory; given a list that
 * keeps only the first resources, in memory bounded whatever the plan's length.
 */
import type { PlanTextParser, PlanTextResult, ResourceList } from "./plan-summary.js";
import {
  BOX_CONTENT,
  commentTextStart,
  headingPhrase,
  isHeading,
  isSpace,
  isWordCharacter,
  LEGACY_ACTIONS_HEADER,
  LEGACY_RESOURCE,
  mayBeLegacyLine,
  mayBeHeading,
  MOVED_HEADING,
  NO_CHANGES,
  OTHER_HEADING,
  OUTPUTS_HEADER,
  PLAIN_DIAGNOSTIC,
  PLAN_LINE,
} from "./plan-text-lines.js";
import {
  heading,
  legacyResource,
  movedHeading,
  outputsLine,
  planLine,
  resourceLine,
} from "./plan-text-blocks.js";
import {
  createPlanTextState,
  diagnosticLine,
  leaveResource,
  openDiagnostic,
  planTextResult,
  type PlanTextState,
} from "./plan-text-state.js";
import { heredocOpener } from "./plan-text-chars.js";
import { beginScan, createLineScan, passesOver, passRun } from "./plan-text-skip.js";

export * from "./plan-summary.js";
export { isSpace } from "./plan-text-lines.js";

/**
 * Whether the line is skipped as part of a heredoc attribute value, which is data (a cloud-init
 * file, a script): nothing in it is read. A line that opens one is read, and what follows skipped.
 * Its text starts at `start`, after its white space.
 */
function heredocLine(
  state: PlanTextState,
  text: string,
  start: number,
  indent: number | undefined,
): boolean {
  const end = state.heredocEnd;
  if (end !== undefined) {
    // Terraform prints a value further in than the line that opened it: a line printed less far
    // in (a resource's heading, the Plan: line) is no longer data, whatever the value held, and
    // is read, so that a `<<WORD` that never ends cannot hide what follows it. The indentation
    // is the written line's: a part after a carriage return is as far in as its line.
    if (start < text.length && (indent ?? start) < state.heredocIndent) {
      state.heredocEnd = undefined;
      return false;
    }
    const after = start + end.length;
    if (text.startsWith(end, start) && (after === text.length || text.charCodeAt(after) === 0x20)) {
      state.heredocEnd = undefined;
    }
    return true;
  }
  // An opener ends in its word or a comment: most lines end otherwise and are not searched.
  if (isWordCharacter(text.charCodeAt(text.length - 1))) {
    const word = heredocOpener(text);
    if (word !== undefined) {
      state.heredocEnd = word;
      state.heredocIndent = start;
    }
  }
  return false;
}

/**
 * Whether a line whose text starts with this character may open a diagnostic, be a landmark or be
 * a heading: `╷`, `│`, `E`, `W`, `P`, `N`, `T`, `C` or `#`. Most lines of a plan start otherwise.
 */
function mayOpen(first: number): boolean {
  return first < 0x80
    ? first === 0x23 ||
        first === 0x43 ||
        first === 0x45 ||
        first === 0x4e ||
        first === 0x50 ||
        first === 0x54 ||
        first === 0x57
    : first === 0x2502 || first === 0x2577;
}

/** Whether the line opens an error or warning: a frame's top, a cut frame's heading, or plain. */
function diagnosticStart(
  state: PlanTextState,
  text: string,
  start: number,
  first: number,
): boolean {
  if (first === 0x2577 && start === text.length - 1) {
    // `╷`
    openDiagnostic(state, true);
    return true;
  }
  const boxed = first === 0x2502 ? BOX_CONTENT.exec(text) : null; // `│`
  const boxedHeading = boxed === null ? null : PLAIN_DIAGNOSTIC.exec(boxed[1] ?? "");
  if (boxedHeading !== null) {
    // A frame whose top was cut off.
    const kind = boxedHeading[1] === "Error" ? "Error" : "Warning";
    openDiagnostic(state, true, kind, (boxedHeading[2] ?? "").trim());
    return true;
  }
  const plain = first === 0x45 || first === 0x57 ? PLAIN_DIAGNOSTIC.exec(text) : null; // E, W
  if (plain !== null) {
    openDiagnostic(
      state,
      false,
      plain[1] === "Error" ? "Error" : "Warning",
      (plain[2] ?? "").trim(),
    );
    return true;
  }
  return false;
}

/**
 * Whether the line is one of the plan's landmarks outside resource blocks: the `Plan:` line,
 * "No changes.", the actions header of Terraform before 0.12 and its resource lines, and the
 * outputs header and the outputs under it.
 */
function landmarkLine(state: PlanTextState, text: string, start: number, first: number): boolean {
  const plan = first === 0x50 ? PLAN_LINE.exec(text) : null; // P
  if (plan !== null) {
    planLine(state, text, plan);
    return true;
  }
  if (first === 0x4e && NO_CHANGES.test(text)) {
    state.noChangesSeen = true;
    state.current = undefined;
    return true;
  }
  if (first === 0x54 && LEGACY_ACTIONS_HEADER.test(text)) {
    state.inActions = true;
    return true;
  }
  // A heading (`#`) and a marker line (`... {`) are not shaped like one: not run through it.
  if (
    state.inActions &&
    start <= 2 &&
    mayBeLegacyLine(text.charCodeAt(start), text.charCodeAt(text.length - 1))
  ) {
    const legacy = LEGACY_RESOURCE.exec(text);
    if (legacy !== null) {
      legacyResource(state, legacy[1] ?? "", legacy[2] ?? "", legacy[3] ?? "");
      return true;
    }
  }
  if (first === 0x43 && OUTPUTS_HEADER.test(text)) {
    state.inOutputs = true;
    leaveResource(state);
    return true;
  }
  return state.inOutputs && outputsLine(state, text, start, start === text.length);
}

/**
 * Whether the line is a heading: a resource's, a move's, or one that describes something other
 * than a planned action (drift, deferrals), which ends the resource before it.
 */
function headingLine(state: PlanTextState, text: string): boolean {
  if (!mayBeHeading(text)) return false;
  const from = commentTextStart(text);
  if (from === -1) return false;
  const phrase = headingPhrase(text, from);
  if (phrase !== undefined) {
    heading(state, text.slice(from, text.length - phrase.length - 1), phrase);
    return true;
  }
  const moved = MOVED_HEADING.exec(text);
  if (moved?.[2] !== undefined) {
    movedHeading(state, moved[1] ?? "", moved[2]);
    return true;
  }
  if (OTHER_HEADING.test(text)) {
    leaveResource(state);
    return true;
  }
  return false;
}

/**
 * One line, without its line end; `indent` is the written line's indentation when this is a part
 * of it after a carriage return.
 */
function readLine(state: PlanTextState, raw: string, indent?: number): void {
  // trimEnd also drops the `\r` of a `\r\n` line end; most lines end in something else.
  const text = isSpace(raw.charCodeAt(raw.length - 1)) ? raw.trimEnd() : raw;
  if (state.diagnostic !== undefined && diagnosticLine(state, text)) return;
  // The line patterns are anchored at the start, most after optional indentation: the first
  // character that is not space decides which of them can match at all, so most lines of a plan
  // (attributes, runner output) are ruled out without running them. Where the text starts is
  // kept as an index, found without a copy of the rest (`trimStart`'s) to collect.
  let start = 0;
  while (isSpace(text.charCodeAt(start))) start += 1;
  if (heredocLine(state, text, start, indent)) return;

  const first = text.charCodeAt(start);
  if (mayOpen(first) || state.inActions || state.inOutputs) {
    if (diagnosticStart(state, text, start, first)) return;
    if (landmarkLine(state, text, start, first)) return;
  }

  // Headings and the `# (reason)` comments under them are comments: they start with `#`.
  const comment = first === 0x23;
  if (comment && headingLine(state, text)) return;
  const current = state.current;
  if (current !== undefined) resourceLine(state, current, text, start, comment);
}

/**
 * Reads one line into `state`, as a parser over it reads each line the trace cleaner hands out (no
 * newline, no carriage return).
 */
export function readPlanLine(state: PlanTextState, line: string): void {
  readLine(state, line);
}

/**
 * A line as the program wrote it. A carriage return inside it (a progress line drawn over a
 * heading) hides text from a terminal, not from Terraform: each part is read as a line, so a
 * destroy is a destroy whatever the terminal would show.
 */
function readPhysicalLine(state: PlanTextState, raw: string): void {
  const cr = raw.indexOf("\r");
  if (cr === -1 || cr === raw.length - 1) {
    readLine(state, raw);
    return;
  }
  const indent = raw.length - raw.trimStart().length;
  for (const part of raw.replace(/\r+$/, "").split(/\r+/)) readLine(state, part, indent);
}

/**
 * A parser whose resources go to `resources`: every one unless told otherwise (a reader that
 * needs only some keeps memory bounded whatever the plan's length).
 */
export function createPlanTextParser(resources?: ResourceList): PlanTextParser {
  const state = createPlanTextState(resources);
  const scan = createLineScan();
  return {
    push(chunk) {
      // Usually one line; several when a whole text is given (`parsePlanText`).
      let from = 0;
      for (let end = chunk.indexOf("\n"); end !== -1; end = chunk.indexOf("\n", from)) {
        readPhysicalLine(state, chunk.slice(from, end));
        from = end + 1;
      }
      readPhysicalLine(state, from === 0 ? chunk : chunk.slice(from));
    },
    pushLines(lines) {
      for (const line of lines) readLine(state, line);
    },
    pushLine(line) {
      readLine(state, line);
    },
    begin: () => {
      beginScan(scan);
    },
    passes: (text, first, indent, last, end) =>
      passesOver(state, scan, text, first, indent, last, end),
    passRun: (text, from, stop) => passRun(state, scan, text, from, stop),
    result: () => planTextResult(state),
  };
}

/**
 * Reads a whole plan text. A last line without its newline may have been cut short, and a cut
 * heading can read as another one ("must be replaced" of "must be replaced, but the existing
 * object will not be destroyed", or "has moved to" a shorter address): a heading there is left
 * out, so only resources whose heading line is complete are reported.
 */
export function parsePlanText(text: string): PlanTextResult {
  const parser = createPlanTextParser();
  const lastLine = text.lastIndexOf("\n") + 1;
  const cutHeading = mayBeCutHeading(text.slice(lastLine));
  parser.push(cutHeading ? text.slice(0, Math.max(0, lastLine - 1)) : text);
  return parser.result();
}

/** A text's last line, without its newline, that reads as a heading and may be one cut short. */
export function mayBeCutHeading(lastLine: string): boolean {
  const last = lastLine.trimEnd();
  return isHeading(last) || MOVED_HEADING.test(last);
}
