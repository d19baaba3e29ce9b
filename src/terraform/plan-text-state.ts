/**
 * What the plan text reader keeps between lines, the error and warning diagnostics it reads into
 * it, and the result it reports from it. `plan-text.ts` decides which line is which.
 */
import {
  countResource,
  countsMismatch,
  everyResource,
  noCounts,
  type DerivedCounts,
  type OutputChange,
  type PlanCounts,
  type PlanDiagnostic,
  type PlanResource,
  type PlanTextResult,
  type ResourceList,
} from "./plan-summary.js";
import { createMarkerSpan, type MarkerSpan } from "./plan-text-chars.js";
import {
  BOX_CONTENT,
  detached,
  finishDiagnostic,
  isHeading,
  MAX_DETAIL_CHARS,
  MAX_DETAIL_LINES,
  NO_CHANGES,
  OUTPUTS_HEADER,
  PLAIN_DIAGNOSTIC,
  PLAN_LINE,
  resourceReason,
  UNFRAMED_BULLET,
  type DiagnosticState,
  type ResourceState,
} from "./plan-text-lines.js";

export interface PlanTextState {
  /** Where each resource goes once read whole. */
  resources: ResourceList;
  /** The resource read last, which its block may still change: not yet in `resources`. */
  last: ResourceState | undefined;
  /** Counts of the resources in `resources`, those it leaves out included. */
  counted: DerivedCounts;
  errors: PlanDiagnostic[];
  outputChanges: OutputChange[];
  /** Addresses that leave Terraform's state without being destroyed. */
  forgotten: string[];
  /** The resource whose heading or body is being read. */
  current: ResourceState | undefined;
  /** Between a heading and its marker line, where `# (reason)` comments belong. */
  afterHeading: boolean;
  /** Under "Changes to Outputs:". */
  inOutputs: boolean;
  diagnostic: DiagnosticState | undefined;
  noChangesSeen: boolean;
  counts: PlanCounts | undefined;
  planLines: number;
  repeatedPlanLines: number;
  lastPlanLine: string | undefined;
  headingsSincePlanLine: number;
  /** Under "Terraform will perform the following actions:" until the `Plan:` line. */
  inActions: boolean;
  /** The word that ends the heredoc value being skipped. */
  heredocEnd: string | undefined;
  /** The indentation of the line that opened it: its value is printed further in, never less. */
  heredocIndent: number;
  /** Where the last marker line's type and name were: written over by the next. */
  markerSpan: MarkerSpan;
}

export function createPlanTextState(resources: ResourceList = everyResource()): PlanTextState {
  // Every property is set here, so the state keeps one shape from the first line to the last.
  return {
    resources,
    last: undefined,
    counted: noCounts(),
    errors: [],
    outputChanges: [],
    forgotten: [],
    current: undefined,
    afterHeading: false,
    inOutputs: false,
    diagnostic: undefined,
    noChangesSeen: false,
    counts: undefined,
    planLines: 0,
    repeatedPlanLines: 0,
    lastPlanLine: undefined,
    headingsSincePlanLine: 0,
    inActions: false,
    heredocEnd: undefined,
    heredocIndent: 0,
    markerSpan: createMarkerSpan(),
  };
}

/**
 * A resource begins, from its heading: the one before it is read whole (only the resource being
 * read changes), and is counted and handed to the list.
 */
export function addResource(state: PlanTextState, read: ResourceState): void {
  const before = state.last;
  if (before !== undefined) {
    const listed = listedResource(before.resource, resourceReason(before));
    countResource(state.counted, listed);
    state.resources.add(listed, () => detachedResource(listed));
  }
  state.last = read;
}

/** No resource is being read any more: its heading and body have ended. */
export function leaveResource(state: PlanTextState): void {
  state.current = undefined;
  state.afterHeading = false;
}

export function closeDiagnostic(state: PlanTextState): void {
  if (state.diagnostic?.kind === "Error") state.errors.push(finishDiagnostic(state.diagnostic));
  state.diagnostic = undefined;
}

function addDetail(diagnostic: DiagnosticState, text: string): void {
  if (diagnostic.truncated) return;
  if (
    diagnostic.detail.length >= MAX_DETAIL_LINES ||
    diagnostic.chars + text.length > MAX_DETAIL_CHARS
  ) {
    diagnostic.truncated = true;
    return;
  }
  diagnostic.detail.push(text);
  diagnostic.chars += text.length + 1;
}

export function openDiagnostic(
  state: PlanTextState,
  framed: boolean,
  kind?: "Error" | "Warning",
  summary = "",
): void {
  closeDiagnostic(state);
  leaveResource(state);
  state.inOutputs = false;
  const diagnostic: DiagnosticState = {
    framed,
    summary,
    detail: [],
    chars: 0,
    truncated: false,
    sawDetailText: false,
    afterBlank: false,
    introduces: summary.endsWith(":"),
  };
  if (kind !== undefined) diagnostic.kind = kind;
  state.diagnostic = diagnostic;
}

/** A line inside a framed diagnostic; false when the frame has ended without `╵`. */
function framedLine(state: PlanTextState, diagnostic: DiagnosticState, line: string): boolean {
  const trimmed = line.trim();
  if (trimmed === "╵") {
    closeDiagnostic(state);
    return true;
  }
  if (trimmed === "╷") {
    openDiagnostic(state, true);
    return true;
  }
  const content = BOX_CONTENT.exec(line);
  if (content === null) {
    closeDiagnostic(state);
    return false;
  }
  const text = content[1] ?? "";
  const heading = diagnostic.kind === undefined ? PLAIN_DIAGNOSTIC.exec(text) : null;
  if (heading !== null) {
    diagnostic.kind = heading[1] === "Error" ? "Error" : "Warning";
    diagnostic.summary = (heading[2] ?? "").trim();
  } else if (diagnostic.kind !== undefined) {
    addDetail(diagnostic, text.trimEnd());
  }
  return true;
}

/**
 * A line inside an unframed diagnostic (Terraform before 0.15); false when it has ended. The
 * diagnostic runs on over blank lines while what follows is indented, a bullet (`* x: error`),
 * introduced by a line ending in `:`, or its first paragraph of text; the next paragraph of
 * plain text after a blank line is something else.
 */
function unframedLine(state: PlanTextState, diagnostic: DiagnosticState, line: string): boolean {
  if (line.trim() === "") {
    diagnostic.afterBlank = true;
    addDetail(diagnostic, "");
    return true;
  }
  if (
    diagnostic.afterBlank &&
    diagnostic.sawDetailText &&
    !diagnostic.introduces &&
    !/^\s/.test(line) &&
    !UNFRAMED_BULLET.test(line)
  ) {
    closeDiagnostic(state);
    return false;
  }
  diagnostic.afterBlank = false;
  if (
    PLAIN_DIAGNOSTIC.test(line) ||
    line.trim() === "╷" ||
    PLAN_LINE.test(line) ||
    isHeading(line) ||
    NO_CHANGES.test(line) ||
    OUTPUTS_HEADER.test(line)
  ) {
    closeDiagnostic(state);
    return false;
  }
  if (!/^\s/.test(line)) diagnostic.sawDetailText = true;
  diagnostic.introduces = line.endsWith(":");
  addDetail(diagnostic, line);
  return true;
}

/**
 * A line while a diagnostic is open: true when it belongs to the diagnostic, false when the
 * diagnostic has ended (or there is none) and the line is to be read as any other.
 */
export function diagnosticLine(state: PlanTextState, line: string): boolean {
  const diagnostic = state.diagnostic;
  if (diagnostic === undefined) return false;
  return diagnostic.framed
    ? framedLine(state, diagnostic, line)
    : unframedLine(state, diagnostic, line);
}

/** The notes for a person about how the counts and the resources were read. */
function resultNotes(state: PlanTextState): string[] {
  const { planLines, repeatedPlanLines } = state;
  const notes: string[] = [];
  if (planLines > 1) {
    notes.push(
      `Found ${planLines} "Plan:" lines (one per project or run); the counts are their sum.`,
    );
  }
  if (repeatedPlanLines > 0) {
    notes.push(
      `Skipped ${repeatedPlanLines} "Plan:" line${repeatedPlanLines === 1 ? "" : "s"} that repeated the one before with no resources in between.`,
    );
  }
  for (const address of state.forgotten) {
    notes.push(`${address} leaves Terraform's state but is not destroyed; it is not listed.`);
  }
  return notes;
}

/**
 * A copy of a resource as the result lists it, with its reason. Built from one literal, its other
 * properties added in one order, rather than spread: V8 gives every object made by a spread with
 * more properties (`{ ...resource, reason }`) a hidden class of its own, a few hundred bytes and
 * some microseconds each, and leaves code reading thousands of such objects looking each property
 * up as in a dictionary.
 */
function listedResource(resource: PlanResource, reason: string | undefined): PlanResource {
  const listed: PlanResource = { address: resource.address, action: resource.action };
  if (resource.replaceOrder !== undefined) listed.replaceOrder = resource.replaceOrder;
  if (reason !== undefined) listed.reason = reason;
  if (resource.deposed !== undefined) listed.deposed = resource.deposed;
  if (resource.importing !== undefined) listed.importing = resource.importing;
  return listed;
}

/**
 * A listed resource for keeping: its text is cut from the log's lines until then, and copied out
 * (see `detached`) only for the resources a list keeps.
 */
function detachedResource(listed: PlanResource): PlanResource {
  listed.address = detached(listed.address);
  if (listed.reason !== undefined) listed.reason = detached(listed.reason);
  if (listed.deposed !== undefined) listed.deposed = detached(listed.deposed);
  return listed;
}

/** What has been read so far; the state is left as it is, so reading can go on. */
export function planTextResult(state: PlanTextState): PlanTextResult {
  const { last } = state;
  const lastListed =
    last === undefined
      ? undefined
      : detachedResource(listedResource(last.resource, resourceReason(last)));
  const { resources, omitted } = state.resources.list(lastListed);
  const allErrors = [...state.errors];
  if (state.diagnostic?.kind === "Error") allErrors.push(finishDiagnostic(state.diagnostic));
  const derivedCounts = { ...state.counted };
  if (lastListed !== undefined) countResource(derivedCounts, lastListed);
  const changing = derivedCounts.add + derivedCounts.change + derivedCounts.destroy;
  const { counts, planLines } = state;
  const result: PlanTextResult = {
    resources,
    counts: counts === undefined ? undefined : { ...counts },
    derivedCounts,
    noChanges: state.noChangesSeen && planLines === 0 && changing === 0,
    errors: allErrors,
    outputChanges: [...state.outputChanges],
    notes: resultNotes(state),
    planLines,
  };
  if (omitted !== undefined) result.omitted = { ...omitted, outputChanges: 0, notes: 0 };
  const mismatch = countsMismatch(
    result.counts,
    derivedCounts,
    planLines > 1 ? `The sum of the "Plan:" lines` : `The "Plan:" line`,
  );
  if (mismatch !== undefined) result.mismatch = mismatch;
  return result;
}
