/** A job log read from GitLab no further than a cap. */

export interface JobLog {
  /** The log as GitLab keeps it, or its first `maxBytes` bytes (whole characters). */
  text: string;
  /** The log goes on beyond what was read. */
  truncated: boolean;
}

/** Reads a log's bytes until they end or `maxBytes` have been read. */
export async function readCapped(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<JobLog> {
  if (body === null) return { text: "", truncated: false };
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  const parts: string[] = [];
  let read = 0;
  let truncated = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - read;
      if (value.byteLength > room) {
        // A character cut in two at the cap is left out with what follows it.
        parts.push(decoder.decode(value.subarray(0, room), { stream: true }));
        truncated = true;
        break;
      }
      read += value.byteLength;
      parts.push(decoder.decode(value, { stream: true }));
    }
    if (!truncated) parts.push(decoder.decode());
  } finally {
    // Stop the download: what is left of a long log is not wanted.
    if (truncated) await reader.cancel().catch(() => undefined);
    else reader.releaseLock();
  }
  return { text: parts.join(""), truncated };
}
