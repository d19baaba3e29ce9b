import { describe, expect, it } from "vitest";
import { createScheduler } from "../../src/tracker/scheduler.js";

/** A pass that waits for the test to let it finish, counting how often it started. */
function gatedPass() {
  const gates: (() => void)[] = [];
  const pass = () =>
    new Promise<void>((resolve) => {
      gates.push(resolve);
    });
  return { pass, gates };
}

describe("the tracker's scheduler", () => {
  it("runs one more pass after the one running, however many ticks came meanwhile", async () => {
    const { pass, gates } = gatedPass();
    const scheduler = createScheduler(pass, 3_600_000);
    const first = scheduler.tick();
    const second = scheduler.tick();
    const third = scheduler.tick();
    expect(gates).toHaveLength(1);
    gates[0]!();
    await second;
    await third;
    // The first tick runs the pass again, for what the others asked for, and waits for it.
    await Promise.resolve();
    expect(gates).toHaveLength(2);
    gates[1]!();
    await first;
    expect(gates).toHaveLength(2);
    await scheduler.stop();
  });

  it("waits, on stop, for the pass in progress, and runs no other", async () => {
    const { pass, gates } = gatedPass();
    const scheduler = createScheduler(pass, 3_600_000);
    const ticked = scheduler.tick();
    let stopped = false;
    const stopping = scheduler.stop().then(() => {
      stopped = true;
    });
    // Stopped: a tick asked for during the pass joins it and runs no other.
    const during = scheduler.tick();
    await Promise.resolve();
    expect(stopped).toBe(false);
    gates[0]!();
    await stopping;
    await ticked;
    await during;
    expect(stopped).toBe(true);
    expect(gates).toHaveLength(1);
  });
});
