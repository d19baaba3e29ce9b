/** A job log read from GitLab no further than a cap. */

export interface JobLog {
  /** The log as GitLab keeps it, or its first `maxBytes` bytes (whole characters). */
  text: string;
  /** The log goes on beyond what was read. */
  truncated: boolean;
}

/** Receives a log's text a piece at a time, in order; the read waits for it. */
export type LogConsumer = (text: string) => void | Promise<void>;

/**
 * The most bytes decoded and handed on at once. The network hands over up to 64 KB at a time;
 * a smaller piece keeps what is alive while it is cleaned, parsed and written small, so V8's
 * young generation, which grows with what outlives its collections, stays small too.
 */
export const LOG_PIECE_BYTES = 16 * 1024;

/** Lets timers and I/O (a health check, a click) run before the next piece. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Reads a log's bytes until they end or `maxBytes` have been read, handing the text on as it
 * arrives, at most `LOG_PIECE_BYTES` at a time with a turn of the event loop between pieces:
 * nothing of the log is kept here, so a long log costs one piece of memory at a time and never
 * holds the event loop for longer than one piece takes. Resolves with whether the log goes on
 * beyond what was read.
 */
export async function streamCapped(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  consume: LogConsumer,
): Promise<{ truncated: boolean }> {
  if (body === null) return { truncated: false };
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let read = 0;
  let truncated = false;
  const hand = async (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.byteLength; at += LOG_PIECE_BYTES) {
      // A character cut between two pieces is held by the decoder until the next.
      const text = decoder.decode(bytes.subarray(at, at + LOG_PIECE_BYTES), { stream: true });
      if (text !== "") await consume(text);
      await nextTurn();
    }
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - read;
      if (value.byteLength > room) {
        // A character cut in two at the cap is left out with what follows it.
        await hand(value.subarray(0, room));
        truncated = true;
        break;
      }
      read += value.byteLength;
      await hand(value);
    }
    if (!truncated) {
      const rest = decoder.decode();
      if (rest !== "") await consume(rest);
    }
  } finally {
    // Stop the download: what is left of a long log is not wanted.
    if (truncated) await reader.cancel().catch(() => undefined);
    else reader.releaseLock();
  }
  return { truncated };
}
