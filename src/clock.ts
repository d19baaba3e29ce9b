/**
 * What time it is, for everything that decides by time: PLAN_TTL, how long a closed pipeline or a
 * late create is watched, the store's timestamps. Start-up passes one clock down to every part;
 * tests pass one they move themselves instead of rewriting stored times.
 */
export type Clock = () => Date;

/** The machine's own time. */
export const systemClock: Clock = () => new Date();
