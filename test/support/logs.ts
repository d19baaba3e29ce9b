import { Writable } from "node:stream";

/** Every log line written during the current test file, scanned for secrets after it. */
export const capturedLogLines: string[] = [];

/** Everything the bot sent to Slack during the current test file, scanned for secrets after it. */
export const capturedSlackPayloads: string[] = [];

/** Records what a bot sent to Slack (Web API arguments, response_url posts, uploaded files). */
export function recordSlackPayload(what: string, payload: unknown): void {
  capturedSlackPayloads.push(
    `${what}: ${typeof payload === "string" ? payload : JSON.stringify(payload)}`,
  );
}

/** A pino destination that keeps its lines for assertions and for the secret scan. */
export function captureLogs(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      for (const line of chunk.toString().split("\n")) {
        if (line.trim() === "") continue;
        lines.push(line);
        capturedLogLines.push(line);
      }
      callback();
    },
  });
  return { stream, lines };
}

/** Records output of a child process (or anything else) for the secret scan. */
export function recordOutput(text: string): void {
  for (const line of text.split("\n")) if (line.trim() !== "") capturedLogLines.push(line);
}
