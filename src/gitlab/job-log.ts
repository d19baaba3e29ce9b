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
 * Reads a log's bytes until they end or `maxBytes` have been read, handing the text on as it
 * arrives: nothing of the log is kept here, so a long log costs one piece of memory at a time.
 * Resolves with whether the log goes on beyond what was read.
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
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - read;
      if (value.byteLength > room) {
        // A character cut in two at the cap is left out with what follows it.
        const last = decoder.decode(value.subarray(0, room), { stream: true });
        if (last !== "") await consume(last);
        truncated = true;
        break;
      }
      read += value.byteLength;
      const text = decoder.decode(value, { stream: true });
      if (text !== "") await consume(text);
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
