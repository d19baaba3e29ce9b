import { describe, expect, it } from "vitest";
import { createRequestTurns } from "../../src/slack/after-ack.js";
import { createLane } from "../../src/slack/lane.js";

/** A task that records how many ran at once and finishes when `release` is called. */
function gate() {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  return { done, release };
}

describe("a lane for follow-up work", () => {
  it("runs at most its width at once, the rest in the order they came", async () => {
    const lane = createLane(2, createRequestTurns());
    const gates = Array.from({ length: 5 }, gate);
    const started: number[] = [];
    let running = 0;
    let most = 0;
    const runs = gates.map((g, i) =>
      lane(async () => {
        started.push(i);
        most = Math.max(most, ++running);
        await g.done;
        running--;
        return i;
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1]);
    for (const g of gates) g.release();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3, 4]);
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(most).toBe(2);
  });

  it("starts a task only after the work already waiting for the event loop has had its turn", async () => {
    const lane = createLane(1, createRequestTurns());
    const order: string[] = [];
    // Stands for a request already received: its callback is queued before the task is given.
    setImmediate(() => order.push("request"));
    const run = lane(() => {
      order.push("task");
      return Promise.resolve();
    });
    await Promise.resolve();
    expect(order).toEqual([]);
    await run;
    expect(order).toEqual(["request", "task"]);
  });

  it("passes a failure on and frees its place for the next task", async () => {
    const lane = createLane(1, createRequestTurns());
    const failed = lane(() => Promise.reject(new Error("views.update refused")));
    const next = lane(() => Promise.resolve("updated"));
    await expect(failed).rejects.toThrow("views.update refused");
    await expect(next).resolves.toBe("updated");
  });
});
