import type { PlanReviewRecord } from "../requests/records.js";
import { truncate } from "../slack/mrkdwn.js";
import type { PlanResource, ResourceList } from "../terraform/plan-text.js";
import {
  destroys,
  isListedChange,
  LISTED_RESOURCES,
  NAMED_DESTROYS,
  SHOWN_NOTES,
} from "./plan-message.js";

/**
 * What a plan's message needs of it, and nothing more: the store keeps a review for as long as
 * its request lives and reads it back on every pass, so a plan of 40,000 resources must not
 * become a row of megabytes. Counts (Terraform's and those worked out from every resource) are
 * kept whole; of each list, the first ones the message shows, with how many were left out.
 */

/** A plan with no more resources than this is kept whole. */
export const KEPT_RESOURCES = 50;

/** The first resources with a change and the first destroyed ones: what the message names. */
const KEPT_CHANGES = LISTED_RESOURCES;
const KEPT_DESTROYS = 2 * NAMED_DESTROYS;
const KEPT_OUTPUTS = LISTED_RESOURCES;
const KEPT_NOTES = 2 * SHOWN_NOTES;
/** Error diagnostics are not in the message; the first few are kept for whoever reads the row. */
const KEPT_ERRORS = 5;

/** No text kept is longer than this: the message cuts addresses and reasons shorter still. */
const KEPT_CHARS = 1_000;

/** A plan as a request's review keeps it (a plan reader's result is one too). */
type StoredPlan = PlanReviewRecord["plan"];

const short = (text: string) => truncate(text, KEPT_CHARS);

function keptResource(resource: PlanResource): PlanResource {
  return {
    ...resource,
    address: short(resource.address),
    ...(resource.reason === undefined ? {} : { reason: short(resource.reason) }),
    ...(resource.deposed === undefined ? {} : { deposed: short(resource.deposed) }),
  };
}

/**
 * Of resources offered in the plan's order, the ones the message names (`kept`), and how many with
 * a change and destroying it leaves out.
 */
interface Keeper {
  kept: PlanResource[];
  seen: { changing: number; destroying: number };
  omitted: { changing: number; destroying: number };
}

const newKeeper = (): Keeper => ({
  kept: [],
  seen: { changing: 0, destroying: 0 },
  omitted: { changing: 0, destroying: 0 },
});

const copyOf = (keeper: Keeper): Keeper => ({
  kept: [...keeper.kept],
  seen: { ...keeper.seen },
  omitted: { ...keeper.omitted },
});

/** Whether the keeper, offered this resource now, keeps it. */
function keeps(keeper: Keeper, resource: Readonly<PlanResource>): boolean {
  const { seen } = keeper;
  return (
    (isListedChange(resource) && seen.changing < KEPT_CHANGES) ||
    (destroys(resource) && seen.destroying < KEPT_DESTROYS)
  );
}

/** Offers a resource read whole: `copy` makes what is kept of it. */
function offer(keeper: Keeper, resource: Readonly<PlanResource>, copy: () => PlanResource): void {
  const { seen, omitted } = keeper;
  const changing = isListedChange(resource);
  const destroying = destroys(resource);
  const keep = keeps(keeper, resource);
  if (changing) seen.changing += 1;
  if (destroying) seen.destroying += 1;
  if (keep) keeper.kept.push(keptResource(copy()));
  else {
    if (changing) omitted.changing += 1;
    if (destroying) omitted.destroying += 1;
  }
}

/** The resources the message names, and how many with a change and destroying it leaves out. */
function keptResources(resources: readonly PlanResource[]) {
  const keeper = newKeeper();
  for (const resource of resources) offer(keeper, resource, () => resource);
  return keeper;
}

/**
 * A plan reader's list of resources that keeps what `keptForMessage` keeps of them: a plan's first
 * resources whole while there are no more than `KEPT_RESOURCES`, else the ones the message names
 * and how many it leaves out. A plan of any length is read in the same little memory, and
 * `keptForMessage` of the reader's result is what it would be of the whole plan.
 */
export function messageResources(): ResourceList {
  let whole: PlanResource[] | undefined = [];
  const keeper = newKeeper();
  return {
    add(resource, copy) {
      if (whole === undefined) {
        offer(keeper, resource, copy);
        return;
      }
      const listed = copy();
      whole.push(listed);
      if (whole.length > KEPT_RESOURCES) whole = undefined;
      offer(keeper, listed, () => listed);
    },
    // While the plan may still be kept whole, any resource may be; after, the keeper decides.
    keeps: (resource) => whole !== undefined || keeps(keeper, resource),
    list(last) {
      if (whole !== undefined && whole.length + (last === undefined ? 0 : 1) <= KEPT_RESOURCES)
        return { resources: last === undefined ? [...whole] : [...whole, last] };
      const ahead = last === undefined ? keeper : copyOf(keeper);
      if (last !== undefined) offer(ahead, last, () => last);
      return { resources: [...ahead.kept], omitted: { ...ahead.omitted } };
    },
  };
}

/** Whether every list of the plan is short enough to be kept whole. */
function small(plan: StoredPlan): boolean {
  return (
    plan.omitted === undefined &&
    plan.resources.length <= KEPT_RESOURCES &&
    plan.outputChanges.length <= KEPT_OUTPUTS &&
    plan.notes.length <= KEPT_NOTES &&
    plan.errors.length <= KEPT_ERRORS &&
    [...plan.resources.map((r) => r.address), ...plan.notes].every((t) => t.length <= KEPT_CHARS)
  );
}

/**
 * The plan as its request keeps it: whole when it is small; else its counts, its first resources
 * with a change and its first destroyed ones (in the plan's order), its first output changes and
 * notes, and how many of each were left out (`omitted`), so the message still says "and N more"
 * and "This plan destroys N resources" with the plan's own figures.
 */
export function keptForMessage(plan: StoredPlan): StoredPlan {
  if (small(plan)) return plan;
  const { kept, omitted } = keptResources(plan.resources);
  const before = plan.omitted;
  return {
    resources: kept,
    ...(plan.counts === undefined ? {} : { counts: plan.counts }),
    derivedCounts: plan.derivedCounts,
    noChanges: plan.noChanges,
    errors: plan.errors
      .slice(0, KEPT_ERRORS)
      .map((error) => ({ summary: short(error.summary), detail: short(error.detail) })),
    ...(plan.mismatch === undefined ? {} : { mismatch: short(plan.mismatch) }),
    outputChanges: plan.outputChanges
      .slice(0, KEPT_OUTPUTS)
      .map((output) => ({ ...output, name: short(output.name) })),
    notes: plan.notes.slice(0, KEPT_NOTES).map(short),
    omitted: {
      changing: omitted.changing + (before?.changing ?? 0),
      destroying: omitted.destroying + (before?.destroying ?? 0),
      outputChanges:
        Math.max(0, plan.outputChanges.length - KEPT_OUTPUTS) + (before?.outputChanges ?? 0),
      notes: Math.max(0, plan.notes.length - KEPT_NOTES) + (before?.notes ?? 0),
    },
  };
}
