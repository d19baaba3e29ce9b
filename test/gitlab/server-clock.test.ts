import { describe, expect, it } from "vitest";
import { byServerClock, createServerClock } from "../../src/gitlab/server-clock.js";

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

  it("keeps what it last knew through an answer without a Date, or with one that is none", () => {
    const clock = createServerClock();
    clock.observe("Mon, 07 Dec 2026 12:59:00 GMT", ARRIVED);
    clock.observe(null, ARRIVED);
    clock.observe("yesterday", ARRIVED);
    expect(clock.behindMs()).toBe(60_400);
  });
});
