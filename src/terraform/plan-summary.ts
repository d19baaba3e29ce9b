/**
 * What a plan reader returns, the same from the text and the JSON: resources, counts, diagnostics
 * and output changes, and how counts are derived and compared.
 */

export type ResourceAction = "create" | "update" | "delete" | "replace" | "read" | "no-op";

/** `delete-first` is Terraform's `-/+` (the default), `create-first` its `+/-`. */
export type ReplaceOrder = "delete-first" | "create-first";

export interface PlanResource {
  address: string;
  action: ResourceAction;
  replaceOrder?: ReplaceOrder;
  /** Why, in Terraform's words: "because x.y is not in configuration", "disk forces replacement". */
  reason?: string;
  /** The deposed object's key, for the leftover of an interrupted create-before-destroy. */
  deposed?: string;
  /** The resource is imported by this plan (Terraform 1.5+ import blocks). */
  importing?: boolean;
}

/** Terraform's own counts, as on its `Plan:` line. */
export interface PlanCounts {
  add: number;
  change: number;
  destroy: number;
  import?: number;
  forget?: number;
}

/** Counts worked out from the resources; a replace is one add and one destroy, as Terraform counts. */
export interface DerivedCounts {
  add: number;
  change: number;
  destroy: number;
  replace: number;
  import: number;
}

export interface PlanDiagnostic {
  summary: string;
  detail: string;
}

export interface OutputChange {
  name: string;
  action: ResourceAction;
}

/** What both plan readers (text and JSON) report. */
export interface PlanSummary {
  resources: PlanResource[];
  /** From Terraform's `Plan:` line(s); undefined when there is none. */
  counts: PlanCounts | undefined;
  derivedCounts: DerivedCounts;
  /** Terraform said "No changes." and nothing else in the input plans a change. */
  noChanges: boolean;
  errors: PlanDiagnostic[];
  /** A sentence for a person when the counts and the resources disagree. */
  mismatch?: string;
  outputChanges: OutputChange[];
  /** Things a reader should know about how the result was put together. */
  notes: string[];
  /** How many of each list were left out, when only their first ones were kept (a stored review). */
  omitted?: OmittedCounts;
}

/** What a plan kept for its message leaves out of its lists (`PlanSummary.omitted`). */
export interface OmittedCounts {
  /** Resources with a change (listed in the message) left out of `resources`. */
  changing: number;
  /** Of those, how many destroy (delete or replace). */
  destroying: number;
  outputChanges: number;
  notes: number;
}

/**
 * Where a plan reader puts each resource once it has read it whole, in the plan's order: a list
 * that keeps them all (`everyResource`), or one that keeps only what the result's reader needs,
 * so that a plan of 100,000 resources is not held in memory to show its first ten.
 */
export interface ResourceList {
  /**
   * A resource read whole, as the result lists it. Its text is still part of the log's: what is
   * kept is `copy()`, called once at most, for a resource kept.
   */
  add(resource: Readonly<PlanResource>, copy: () => PlanResource): void;
  /**
   * Whether a resource like this one (its action and import as they stand), added now, may be
   * kept: false once the list has stopped keeping resources like it, never to keep them again. A
   * reader passes over what only a kept resource would show (its reasons, its replacement order).
   */
  keeps(resource: Readonly<PlanResource>): boolean;
  /**
   * The resources kept, with `last` (the one still being read) as if it had been added, and how
   * many of those with a change were left out; the list itself is left as it is.
   */
  list(last: PlanResource | undefined): KeptResources;
}

export interface KeptResources {
  resources: PlanResource[];
  /** Left out of `resources`; undefined when nothing was. */
  omitted?: Pick<OmittedCounts, "changing" | "destroying">;
}

/** A list that keeps every resource. */
export function everyResource(): ResourceList {
  const resources: PlanResource[] = [];
  return {
    add(_resource, copy) {
      resources.push(copy());
    },
    keeps: () => true,
    list: (last) => ({ resources: last === undefined ? [...resources] : [...resources, last] }),
  };
}

export interface PlanTextResult extends PlanSummary {
  /** How many `Plan:` lines were counted (several projects give several). */
  planLines: number;
}

export interface PlanTextParser {
  /** Feeds one line of output (a trailing `\r` is ignored). */
  push(line: string): void;
  /**
   * Feeds lines that hold no newline and no carriage return, as the trace cleaner hands them out:
   * what `push` does with each, without searching each for line ends first.
   */
  pushLines(lines: readonly string[]): void;
  /** One line as `pushLines` takes each: no newline, no carriage return. */
  pushLine(line: string): void;
  /** A longer text begins (a chunk of a log), whose lines `passes` is then asked about. */
  begin(text: string): void;
  /**
   * Whether a line of the text last begun, from `first - indent` to `end`, can be passed over
   * unread, decided without cutting it out: `first` is where its first character other than space
   * is (`end` for a blank line), after `indent` spaces, and `last` where its last character is.
   * Escape sequences may stand between, and are not counted. A line passed over is one that,
   * pushed, would change nothing the parser reports; what pushing it would begin or end (a heredoc
   * value, the comments under a heading) passing it begins or ends. Any other is to be pushed.
   */
  passes(text: string, first: number, indent: number, last: number, end: number): boolean;
  /**
   * Passes over the lines of the text last begun from `from` on, as `passes` would pass each
   * over, while each ends with a newline before `stop`; the text from `from` to `stop` is to hold
   * no escape sequence and no carriage return. Returns where the first line not passed over
   * starts (`from` when none was): a line there that ends before `stop` is one `passes` would
   * not pass over.
   */
  passRun(text: string, from: number, stop: number): number;
  /** What has been read so far; may be called at any time. */
  result(): PlanTextResult;
}

/** No resources counted yet. */
export const noCounts = (): DerivedCounts => ({
  add: 0,
  change: 0,
  destroy: 0,
  replace: 0,
  import: 0,
});

/** Adds one resource to `counts`: a replace adds one and destroys one. */
export function countResource(counts: DerivedCounts, resource: PlanResource): void {
  if (resource.importing === true) counts.import += 1;
  switch (resource.action) {
    case "create":
      counts.add += 1;
      break;
    case "update":
      counts.change += 1;
      break;
    case "delete":
      counts.destroy += 1;
      break;
    case "replace":
      counts.add += 1;
      counts.destroy += 1;
      counts.replace += 1;
      break;
    case "read":
    case "no-op":
      break;
  }
}

/** Counts from the resources. */
export function deriveCounts(resources: readonly PlanResource[]): DerivedCounts {
  const counts = noCounts();
  for (const resource of resources) countResource(counts, resource);
  return counts;
}

/** `1 to import, 2 to add, 0 to change, 1 to destroy`, as Terraform words it. */
export function describeCounts(
  counts: { add: number; change: number; destroy: number },
  importing?: number,
): string {
  const head = importing !== undefined && importing > 0 ? `${importing} to import, ` : "";
  return `${head}${counts.add} to add, ${counts.change} to change, ${counts.destroy} to destroy`;
}

/** A sentence when Terraform's counts and the listed resources disagree; undefined when they agree. */
export function countsMismatch(
  counts: PlanCounts | undefined,
  derived: DerivedCounts,
  countsSource: string,
): string | undefined {
  if (counts === undefined) {
    if (derived.add + derived.change + derived.destroy === 0) return undefined;
    return `Resources with changes were listed (${describeCounts(derived)}) but no "Plan:" line was found; the output may have been cut short.`;
  }
  const importDiffers = counts.import !== undefined && counts.import !== derived.import;
  if (
    counts.add === derived.add &&
    counts.change === derived.change &&
    counts.destroy === derived.destroy &&
    !importDiffers
  ) {
    return undefined;
  }
  const shown = (c: { add: number; change: number; destroy: number }, importing?: number) =>
    describeCounts(c, counts.import === undefined ? undefined : importing);
  return `${countsSource} says ${shown(counts, counts.import)}, but the resources listed add up to ${shown(derived, derived.import)}.`;
}
