import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { createRequestTurns } from "../../src/slack/after-ack.js";

/** A response as the turns see it: one that closes when told to. */
function response() {
  const events = new EventEmitter();
  return { res: events as unknown as ServerResponse, close: () => events.emit("close") };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Whether `promise` has settled, without waiting for it. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await Promise.resolve();
  return done;
}

describe("the turns of Slack requests before the work after an acknowledgement", () => {
  it("lets the work run after one turn when no request came", async () => {
    const turns = createRequestTurns();
    const order: string[] = [];
    // Stands for I/O already waiting: queued before the work asks for its turn.
    setImmediate(() => order.push("request"));
    await turns.afterPending();
    order.push("work");
    expect(order).toEqual(["request", "work"]);
  });

  it("holds the work while a request is unanswered, and lets it run once that is answered", async () => {
    const turns = createRequestTurns();
    const pending = response();
    turns.received(pending.res);
    const work = turns.afterPending();
    for (let i = 0; i < 5; i += 1) await turn();
    expect(await settled(work)).toBe(false);
    pending.close();
    await work;
  });

  it("holds the work while requests keep arriving, turn after turn, until a turn brings none", async () => {
    const turns = createRequestTurns();
    let arrivals = 0;
    let done = false;
    const work = turns.afterPending().then(() => {
      done = true;
    });
    // A burst reaching the bot over ten turns, each request answered within its turn.
    for (let i = 0; i < 10; i += 1) {
      const { res, close } = response();
      turns.received(res);
      arrivals += 1;
      close();
      expect(done).toBe(false);
      await turn();
    }
    await work;
    expect(arrivals).toBe(10);
  });

  it("lets the work run after its longest wait even while a request stays unanswered", async () => {
    const turns = createRequestTurns(30);
    turns.received(response().res);
    const started = performance.now();
    await turns.afterPending();
    expect(performance.now() - started).toBeGreaterThanOrEqual(29);
  });
});
