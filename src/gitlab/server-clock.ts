/**
 * How far GitLab's clock runs behind the bot's, read from the `Date` header of its answers.
 *
 * The bot looks a pipeline up by when it asked for it (a create whose answer was lost, the late
 * pipelines it watches for): by its own clock, where GitLab stamps `created_at` by GitLab's. With
 * GitLab's clock minutes behind, a pipeline GitLab did create looks older than the look-up's
 * window, is not found, and the request is failed while its pipeline runs. A clock ahead of the
 * bot's only stamps pipelines later, and needs nothing.
 *
 * The header gives whole seconds, and the time the answer was made, not read: what it says is
 * never later than GitLab's clock at the answer's arrival, so `arrival - date` is at least how far
 * behind GitLab runs, never less. Of the last readings the smallest is the closest; the window
 * moves back by that much, never too little, and never by more than `MOST_BEHIND_MS`.
 */
export interface ServerClock {
  /**
   * GitLab answered, at `arrivedAt` (the bot's clock, ms), with this `Date` header. Only its own
   * successful answers count: a proxy's error page is dated by the proxy's clock.
   */
  observe(dateHeader: string | null, arrivedAt: number): void;
  /** How many milliseconds GitLab's clock runs behind the bot's at most, as last seen; 0 if not. */
  behindMs(): number;
}

/** Readings kept: a few answers' worth, so that one slow answer does not widen the window. */
const READINGS = 8;

/**
 * The most the window moves back: a clock an hour behind is a broken clock, and a window
 * reaching further back would list many pipelines to look through (and, without
 * VMBOT_REQUEST_ID, could take another request's for this one's).
 */
export const MOST_BEHIND_MS = 60 * 60_000;

/** RFC 9110's preferred date format, the one GitLab's web server sends: nothing looser. */
const IMF_FIXDATE =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

export function createServerClock(): ServerClock {
  const readings: number[] = [];
  return {
    observe(dateHeader, arrivedAt) {
      if (dateHeader === null || !IMF_FIXDATE.test(dateHeader)) return;
      const date = Date.parse(dateHeader);
      if (Number.isNaN(date)) return;
      readings.push(arrivedAt - date);
      if (readings.length > READINGS) readings.shift();
    },
    behindMs: () =>
      readings.length === 0 ? 0 : Math.min(MOST_BEHIND_MS, Math.max(0, Math.min(...readings))),
  };
}

/** `iso` (the bot's clock) moved back by how far GitLab's clock runs behind: GitLab's time then. */
export function byServerClock(clock: ServerClock, iso: string): string {
  const behind = clock.behindMs();
  return behind === 0 ? iso : new Date(Date.parse(iso) - behind).toISOString();
}
