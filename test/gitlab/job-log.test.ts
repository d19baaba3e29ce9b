import { describe, expect, it } from "vitest";
import { LOG_PIECE_BYTES, streamCapped } from "../../src/gitlab/job-log.js";

/** A body that hands over `chunks` as the network would. */
function body(chunks: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

describe("reading a job's log as a stream", () => {
  it("hands on a 64 KB chunk in pieces, letting other work run between them", async () => {
    const chunk = new TextEncoder().encode("a".repeat(4 * LOG_PIECE_BYTES));
    const events: string[] = [];
    await streamCapped(body([chunk]), 1024 * 1024, (text) => {
      events.push(`piece of ${String(text.length)}`);
      // Work waiting on the event loop (a health check, a click) runs before the next piece.
      if (events.length === 1) setImmediate(() => events.push("other work"));
    });
    expect(events).toEqual([
      `piece of ${String(LOG_PIECE_BYTES)}`,
      "other work",
      `piece of ${String(LOG_PIECE_BYTES)}`,
      `piece of ${String(LOG_PIECE_BYTES)}`,
      `piece of ${String(LOG_PIECE_BYTES)}`,
    ]);
  });

  it("keeps a character cut between two pieces whole, and stops at the cap", async () => {
    // "é" is two bytes: the first piece ends in the middle of one.
    const text = `${"a".repeat(LOG_PIECE_BYTES - 1)}é${"b".repeat(100)}`;
    const parts: string[] = [];
    const { truncated } = await streamCapped(
      body([new TextEncoder().encode(text)]),
      LOG_PIECE_BYTES + 51,
      (piece) => {
        parts.push(piece);
      },
    );
    expect(truncated).toBe(true);
    expect(parts.join("")).toBe(`${"a".repeat(LOG_PIECE_BYTES - 1)}é${"b".repeat(50)}`);
  });
});
