/**
 * The parts of a plan the text reader reads into its state once it knows what a line is: the
 * `Plan:` line, resource headings and the blocks under them, the resources of Terraform before
 * 0.12, and output changes.
 */
import type { PlanCounts, PlanResource } from "./plan-summary.js";
import {
  DEPOSED,
  detached,
  HEADING_PHRASES,
  LEGACY_SYMBOLS,
  OUTPUT_ENTRY,
  OUTPUT_SYMBOLS,
  REASON_COMMENT,
  WARNING_COMMENT,
  type ResourceState,
} from "./plan-text-lines.js";
import {
  attributeName,
  forcesReplacement,
  holdsTypeAndName,
  markerReplaces,
  readMarker,
} from "./plan-text-chars.js";
import { addResource, leaveResource, type PlanTextState } from "./plan-text-state.js";

/**
 * A `Plan:` line, added to the counts; one that repeats the one before with no resource between
 * them (Atlantis prints a plan again) is counted apart and not added.
 */
export function planLine(state: PlanTextState, line: string, match: RegExpExecArray): void {
  leaveResource(state);
  state.inOutputs = false;
  state.inActions = false;
  const text = line.trim();
  if (state.planLines > 0 && text === state.lastPlanLine && state.headingsSincePlanLine === 0) {
    state.repeatedPlanLines += 1;
    return;
  }
  const [, importing, add, change, destroy, forget] = match;
  const sum: PlanCounts = state.counts ?? { add: 0, change: 0, destroy: 0 };
  sum.add += Number(add);
  sum.change += Number(change);
  sum.destroy += Number(destroy);
  if (importing !== undefined) sum.import = (sum.import ?? 0) + Number(importing);
  if (forget !== undefined) sum.forget = (sum.forget ?? 0) + Number(forget);
  state.counts = sum;
  state.planLines += 1;
  state.lastPlanLine = text;
  state.headingsSincePlanLine = 0;
}

/** A resource heading, `# <address> will be created` and the like. */
export function heading(state: PlanTextState, rawAddress: string, phrase: string): void {
  const meaning = HEADING_PHRASES[phrase];
  if (meaning === undefined) return;
  state.headingsSincePlanLine += 1;
  // A deposed object's address ends with `)`; most end otherwise and are not searched.
  const deposed = rawAddress.endsWith(")") ? DEPOSED.exec(rawAddress) : null;
  // Its text is cut from the log, and copied out only if the resource is kept (`addResource`).
  const address = deposed?.[1] ?? rawAddress;
  if (meaning.action === "forget") {
    state.forgotten.push(detached(address));
    leaveResource(state);
    return;
  }
  const resource: PlanResource = { address, action: meaning.action };
  if (deposed?.[2] !== undefined) resource.deposed = deposed[2];
  if (phrase === "will be imported") resource.importing = true;
  const read: ResourceState = { resource, comments: [], forcedBy: [] };
  if (meaning.reason !== undefined) read.headingReason = meaning.reason;
  addResource(state, read);
  state.current = read;
  state.afterHeading = true;
}

/** A `# <address> has moved to <address>` heading: a no-op with where it moved from. */
export function movedHeading(state: PlanTextState, from: string, to: string): void {
  state.headingsSincePlanLine += 1;
  const read: ResourceState = {
    resource: { address: to, action: "no-op" },
    comments: [`moved from ${from}`],
    forcedBy: [],
  };
  addResource(state, read);
  state.current = read;
  state.afterHeading = true;
}

/** A resource line of Terraform before 0.12, with its `(tainted)`-like notes. */
export function legacyResource(
  state: PlanTextState,
  symbol: string,
  rawAddress: string,
  notes: string,
): void {
  const action = LEGACY_SYMBOLS[symbol];
  if (action === undefined) return;
  state.headingsSincePlanLine += 1;
  const resource: PlanResource = { address: rawAddress, action };
  if (symbol === "-/+") resource.replaceOrder = "delete-first";
  if (symbol === "+/-") resource.replaceOrder = "create-first";
  const read: ResourceState = { resource, comments: [], forcedBy: [] };
  if (notes.includes("(tainted)")) read.headingReason = "tainted";
  if (notes.includes("(deposed)")) resource.deposed = "deposed";
  addResource(state, read);
  // Its attributes follow as `name: "old" => "new"` lines, which are not read.
  leaveResource(state);
}

/**
 * A line under "Changes to Outputs:"; true when it has been read as part of them. The list ends
 * at a blank line or at text that is not indented, which is then read as any other line.
 */
export function outputsLine(
  state: PlanTextState,
  text: string,
  start: number,
  blank: boolean,
): boolean {
  const entry = OUTPUT_ENTRY.exec(text);
  if (entry !== null) {
    const action = OUTPUT_SYMBOLS[entry[1] ?? ""];
    if (action !== undefined && entry[2] !== undefined)
      state.outputChanges.push({ name: detached(entry[2]), action });
    return true;
  }
  if (!blank && start > 0) return true;
  state.inOutputs = false;
  return blank;
}

/**
 * `list` with `item` added. A first item makes a list of one, where a push into an empty list
 * makes room for seventeen: a resource keeps its reasons to the end of the log, and most have one.
 */
function added(list: string[], item: string): string[] {
  if (list.length === 0) return [item];
  list.push(item);
  return list;
}

/**
 * The marker line under a heading (`-/+ resource "type" "name" {`, its text from `start`), which
 * may give the order.
 */
function marker(read: ResourceState, text: string, start: number): void {
  const resource = read.resource;
  if (markerReplaces(text, start)) {
    resource.action = "replace";
    resource.replaceOrder = text.charCodeAt(start) === 0x2d ? "delete-first" : "create-first";
  }
  // Any other marker agrees with its heading, which is the more explicit of the two; a replace
  // from the heading is never downgraded.
}

/**
 * A line of the resource being read: a `# (reason)` comment under its heading, its marker line,
 * or an attribute of its body that `# forces replacement`.
 */
export function resourceLine(
  state: PlanTextState,
  current: ResourceState,
  text: string,
  start: number,
  comment: boolean,
): void {
  if (state.afterHeading && comment) {
    const reason = (REASON_COMMENT.exec(text) ?? WARNING_COMMENT.exec(text))?.[1];
    if (reason !== undefined) {
      if (/^imported from |^will be imported first$/.test(reason))
        current.resource.importing = true;
      current.comments = added(current.comments, reason);
      return;
    }
  }
  const span = state.markerSpan;
  if (readMarker(text, start, span)) {
    if (state.afterHeading && holdsTypeAndName(current.resource.address, text, span)) {
      marker(current, text, start);
    }
    state.afterHeading = false;
    return;
  }
  state.afterHeading = false;
  if (
    text.charCodeAt(text.length - 1) === 0x74 && // `t`
    forcesReplacement(text)
  ) {
    current.forcedBy = added(current.forcedBy, attributeName(text, start));
    if (current.resource.action !== "replace") current.resource.action = "replace";
  }
}
