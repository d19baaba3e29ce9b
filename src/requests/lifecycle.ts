/**
 * A request's life: its statuses and the one table of moves between them. Every status change
 * goes through the store's conditional transition, which refuses a move this table does not list.
 * Nothing here depends on the store, the tracker or Slack: they all build on it.
 */

export const REQUEST_STATUSES = [
  "queued",
  "planning",
  "awaiting_approval",
  "applying",
  "configuring",
  "ready",
  "failed",
  "rejected",
  "expired",
  "canceled",
  "withdrawn",
] as const;
export type RequestStatus = (typeof REQUEST_STATUSES)[number];

/** Statuses the tracker no longer follows (a failed request may still be retried from Slack). */
export const FINAL_STATUSES: readonly RequestStatus[] = [
  "ready",
  "failed",
  "rejected",
  "expired",
  "canceled",
  "withdrawn",
];

/**
 * From each status, the statuses a request may move to. A move to the same status rewrites the
 * request under a status guard (its stage keeps its start): listed only where the bot does that.
 */
export const TRANSITIONS: Readonly<Record<RequestStatus, readonly RequestStatus[]>> = {
  // The pipeline's plan job runs, or has planned already; the message or pipeline could not be
  // made; the requester withdrew. A destroy request has no plan: its destroy job waits (awaiting
  // approval), someone played it in GitLab first, or vmbot plays it without approval at a lease's
  // end (applying).
  queued: ["planning", "awaiting_approval", "applying", "failed", "withdrawn"],
  planning: ["awaiting_approval", "failed", "withdrawn"],
  // Approved (here or by playing the job in GitLab), rejected, withdrawn, expired after PLAN_TTL,
  // the apply job stopped in GitLab, or the pipeline deleted; an approval recorded while the
  // policy's rule still needs more (the message shows who has approved).
  awaiting_approval: [
    "awaiting_approval",
    "applying",
    "rejected",
    "withdrawn",
    "expired",
    "canceled",
    "failed",
  ],
  // "Checking with GitLab" shown or cleared; the approval given back when nothing started; the
  // plan run again in GitLab; the apply job's end; the pipeline canceled before the play.
  applying: [
    "applying",
    "awaiting_approval",
    "planning",
    "configuring",
    "ready",
    "failed",
    "canceled",
  ],
  configuring: ["ready", "failed"],
  // Retry configure; Plan again records the request it started.
  failed: ["configuring", "failed"],
  ready: [],
  rejected: [],
  expired: [],
  canceled: [],
  withdrawn: [],
};

/** Whether the table lets a request in `from` move to `to`. */
export function canMove(from: RequestStatus, to: RequestStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** A move the transition table does not list: a mistake in the bot, never a lost race. */
export class TransitionError extends Error {
  override name = "TransitionError";
  constructor(
    readonly from: readonly RequestStatus[],
    readonly to: RequestStatus,
  ) {
    super(`a request cannot move from ${from.join(" or ")} to ${to}`);
  }
}

/** Throws TransitionError unless every status in `from` may move to `to`. */
export function checkMove(from: readonly RequestStatus[], to: RequestStatus): void {
  const refused = from.filter((status) => !canMove(status, to));
  if (refused.length > 0) throw new TransitionError(refused, to);
}
