/**
 * How far GitLab's clock runs behind the bot's, read from the `Date` header of its answers.
 *
 * The bot looks a pipeline up by when it asked for it (a create whose answer was lost, the late
 * pipelines it watches for): by its own clock, where GitLab stamps `created_at` by GitLab's. With
 * GitLab's clock minutes behind, a pipeline GitLab did create looks older than the look-up's
 * window, is not found, and the request is failed, or started a second time, while its pipeline
 * runs. A clock ahead of the bot's only stamps pipelines later, and needs nothing.
 *
 * The header gives whole seconds, and the time the answer was made, not read: what it says is
 * never later than GitLab's clock at the answer's arrival, so `arrival - date` is at least how far
 * behind GitLab runs, never less. The window moves back by that much: never too little.
 */
export interface ServerClock {
  /** An answer arrived at `arrivedAt` (the bot's clock, ms) with this `Date` header. */
  observe(dateHeader: string | null, arrivedAt: number): void;
  /** How many milliseconds GitLab's clock runs behind the bot's at most, as last seen; 0 if not. */
  behindMs(): number;
}

export function createServerClock(): ServerClock {
  let behind = 0;
  return {
    observe(dateHeader, arrivedAt) {
      if (dateHeader === null) return;
      const date = Date.parse(dateHeader);
      if (Number.isNaN(date)) return;
      behind = Math.max(0, arrivedAt - date);
    },
    behindMs: () => behind,
  };
}

/** `iso` (the bot's clock) moved back by how far GitLab's clock runs behind: GitLab's time then. */
export function byServerClock(clock: ServerClock, iso: string): string {
  const behind = clock.behindMs();
  return behind === 0 ? iso : new Date(Date.parse(iso) - behind).toISOString();
}
