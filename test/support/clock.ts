import type { Clock } from "../../src/clock.js";

/** A clock a test moves itself: it starts at the machine's time and stands still until moved. */
export interface TestClock {
  now: Clock;
  /** Moves the clock `ms` milliseconds ahead. */
  advance(ms: number): void;
}

export function testClock(start: Date = new Date()): TestClock {
  let at = start.getTime();
  return {
    now: () => new Date(at),
    advance(ms) {
      at += ms;
    },
  };
}
