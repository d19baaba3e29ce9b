/**
 * What time it is, for everything that decides by time: PLAN_TTL, how long a closed pipeline or a
 * late create is watched, the store's timestamps. Start-up passes one clock down to every part;
 * tests pass one they move themselves instead of rewriting stored times.
 */
export type Clock = () => Date;

/** The machine's own time. */
export const systemClock: Clock = () => new Date();

/**
 * Runs work later: `after` returns a function that cancels it. Start-up uses the machine's timers;
 * tests pass one that records what was asked for and fires it when they choose.
 */
export interface Scheduler {
  after(delayMs: number, work: () => void): () => void;
}

/** Node's timers, never keeping the process alive on their own. */
export const systemScheduler: Scheduler = {
  after(delayMs, work) {
    const timer = setTimeout(work, delayMs);
    timer.unref();
    return () => {
      clearTimeout(timer);
    };
  },
};

/** Milliseconds since the epoch by `clock`, for code that measures ages. */
export const millisOf = (clock: Clock) => (): number => clock().getTime();
