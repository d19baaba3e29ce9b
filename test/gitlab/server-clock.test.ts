import { describe, expect, it } from "vitest";
import { byServerClock, createServerClock, MOST_BEHIND_MS } from "../../src/gitlab/server-clock.js";

const ARRIVED = Date.parse("2026-12-07T13:00:00.400Z");

describe("GitLab's clock as its answers' Date headers give it", () => {
  it("moves a look-up's start back by as much as GitLab's clock runs behind, never less", () => {
    const clock = createServerClock();
    clock.observe("Mon, 07 Dec 2026 12:55:00 GMT", ARRIVED);
    // The header's whole seconds make it 5 min 0.4 s at most.
    expect(clock.behindMs()).toBe(300_400);
    expect(byServerClock(clock, "2026-12-07T12:59:00.000Z")).toBe("2026-12-07T12:53:59.600Z");
  });

  it("leaves the start alone when GitLab's clock is ahead, or no answer said", () => {
    const clock = createServerClock();
    expect(byServerClock(clock, "2026-12-07T12:59:00.000Z")).toBe("2026-12-07T12:59:00.000Z");
    clock.observe("Mon, 07 Dec 2026 13:03:00 GMT", ARRIVED);
    expect(clock.behindMs()).toBe(0);
    expect(byServerClock(clock, "2026-12-07T12:59:00.000Z")).toBe("2026-12-07T12:59:00.000Z");
  });

  it("keeps what it knew through an answer without a Date, or with one that is none", () => {
    const clock = createServerClock();
    clock.observe("Mon, 07 Dec 2026 12:59:00 GMT", ARRIVED);
    clock.observe(null, ARRIVED);
    // `Date.parse` reads "1" as the year 2001: only RFC 9110's format counts.
    for (const junk of ["yesterday", "1", "garbage 12", "2026-12-07T12:00:00Z"]) {
      clock.observe(junk, ARRIVED);
    }
    expect(clock.behindMs()).toBe(60_400);
  });

  it("takes the closest of its last readings, so that one slow answer does not widen the window", () => {
    const clock = createServerClock();
    clock.observe("Mon, 07 Dec 2026 12:59:00 GMT", ARRIVED);
    clock.observe("Mon, 07 Dec 2026 12:58:58 GMT", ARRIVED);
    expect(clock.behindMs()).toBe(60_400);
    // Eight answers later, the clock was set right meanwhile: the old readings have gone.
    for (let i = 0; i < 8; i += 1) clock.observe("Mon, 07 Dec 2026 13:00:00 GMT", ARRIVED);
    expect(clock.behindMs()).toBe(400);
  });

  it("moves a window back an hour at most, whatever a clock says", () => {
    const clock = createServerClock();
    clock.observe("Sun, 06 Dec 2026 13:00:00 GMT", ARRIVED);
    expect(clock.behindMs()).toBe(MOST_BEHIND_MS);
  });
});
