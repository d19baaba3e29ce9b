import type { webApi } from "@slack/bolt";
import { mkdtemp, open, rm, type FileHandle } from "node:fs/promises";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import type { Redactor } from "../redact.js";

/**
 * A long text file for Slack (a plan of many megabytes) that never sits in memory whole: it is
 * written to a temporary file as it is made, redacted a batch of whole lines at a time on the
 * way, and sent from disk. The Web API client's own `files.uploadV2` reads a file into one
 * buffer and builds a second for the form: several copies of a long text at once.
 *
 * Redaction happens here, once, before the file's size is known to Slack: the bytes sent must be
 * the bytes announced, so the redacting `fetch` (which sees a stream here, not text) cannot be
 * the one to do it.
 */
export interface TextSpool {
  /** Adds whole lines to the file, each ended by a newline. */
  writeLines(lines: readonly string[]): Promise<void>;
  /** Writes what is left, and `last` (a last line with no newline); the file is then ready. */
  finish(last?: string): Promise<SpooledFile>;
  /** Removes the file; safe to call at any point, and more than once. */
  discard(): Promise<void>;
}

export interface SpooledFile {
  path: string;
  bytes: number;
}

/**
 * Lines are redacted and written in batches of at least this many characters: small, so that
 * little outlives V8's young-generation collections while a long log streams through.
 */
const BATCH_CHARS = 16 * 1024;

/** One buffer a file's bytes pass through, reused for every write instead of a new one each. */
function createScratch(initialBytes = 4 * BATCH_CHARS) {
  let buffer = Buffer.allocUnsafe(initialBytes);
  return {
    /** `text` encoded as UTF-8 in the scratch buffer, valid until the next call. */
    encode(text: string): Buffer {
      const bytes = Buffer.byteLength(text, "utf8");
      // A batch is longer only when a line is (a line of many kilobytes): the buffer grows.
      if (bytes > buffer.byteLength) buffer = Buffer.allocUnsafe(bytes);
      buffer.write(text, 0, "utf8");
      return buffer.subarray(0, bytes);
    },
  };
}

export async function createTextSpool(redact: Redactor, dir = tmpdir()): Promise<TextSpool> {
  const folder = await mkdtemp(join(dir, "vmbot-upload-"));
  const path = join(folder, "file.txt");
  let file: FileHandle | undefined = await open(path, "w", 0o600);
  let pending: string[] = [];
  let pendingChars = 0;
  let bytes = 0;
  const scratch = createScratch();

  /** Redacts and writes the pending lines and `last`: one string of the batch, made once. */
  async function flush(last = ""): Promise<void> {
    if (pending.length > 0) pending.push(last);
    const text = pending.length > 0 ? pending.join("\n") : last;
    pending = [];
    pendingChars = 0;
    if (text === "" || file === undefined) return;
    const data = scratch.encode(redact(text));
    await writeAll(file, data);
    bytes += data.byteLength;
  }

  return {
    async writeLines(lines) {
      for (const line of lines) {
        pending.push(line);
        pendingChars += line.length + 1;
      }
      if (pendingChars >= BATCH_CHARS) await flush();
    },
    async finish(last = "") {
      await flush(last);
      await file?.close();
      file = undefined;
      return { path, bytes };
    },
    async discard() {
      pending = [];
      await file?.close().catch(() => undefined);
      file = undefined;
      await rm(folder, { recursive: true, force: true });
    },
  };
}

/** Writes all of `data`: a file write may take fewer bytes than it was given. */
async function writeAll(file: FileHandle, data: Buffer): Promise<void> {
  for (let at = 0; at < data.byteLength;) {
    const { bytesWritten } = await file.write(data, at, data.byteLength - at);
    at += bytesWritten;
  }
}

export interface TextUpload {
  channel: string;
  threadTs: string;
  filename: string;
  title: string;
  /** Said before and after the file's text (redacted like it). */
  head?: string;
  tail?: string;
}

const UploadTargetSchema = z.object({ upload_url: z.url(), file_id: z.string().min(1) });

/** How long the bytes may take to reach Slack, counted while nothing moves. */
const UPLOAD_IDLE_MS = 60_000;

/**
 * Shares a spooled file in a thread through Slack's external upload: files.getUploadURLExternal
 * with the exact length, the bytes POSTed raw to the upload URL (Slack accepts raw bytes or a
 * form), then files.completeUploadExternal.
 */
export async function uploadSpooledText(
  client: webApi.WebClient,
  file: SpooledFile,
  upload: TextUpload,
  redact: Redactor,
): Promise<void> {
  const head = Buffer.from(redact(upload.head ?? ""), "utf8");
  const tail = Buffer.from(redact(upload.tail ?? ""), "utf8");
  const length = head.byteLength + file.bytes + tail.byteLength;
  const target = UploadTargetSchema.parse(
    await client.files.getUploadURLExternal({ filename: upload.filename, length }),
  );
  await postBytes(target.upload_url, length, client.token, async (write) => {
    await write(head);
    await readThrough(file, write);
    await write(tail);
  });
  await client.files.completeUploadExternal({
    files: [{ id: target.file_id, title: upload.title }],
    channel_id: upload.channel,
    thread_ts: upload.threadTs,
  });
}

/** How many bytes of a spooled file are read and sent at once, through one reused buffer. */
const READ_BYTES = 64 * 1024;

/**
 * Hands a spooled file's bytes to `write` a buffer at a time, the same buffer each time (`write`
 * resolves once the bytes have left it), and exactly the bytes announced: a file that has become
 * shorter is an error rather than a short upload.
 */
async function readThrough(
  file: SpooledFile,
  write: (chunk: Buffer) => Promise<void>,
): Promise<void> {
  const handle = await open(file.path, "r");
  try {
    const buffer = Buffer.allocUnsafe(READ_BYTES);
    for (let at = 0; at < file.bytes;) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(READ_BYTES, file.bytes - at), at);
      if (bytesRead === 0) throw new Error("the plan file ended before its announced length");
      await write(buffer.subarray(0, bytesRead));
      at += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

/** POSTs `length` bytes made by `produce`, waiting for the socket whenever it is full. */
async function postBytes(
  url: string,
  length: number,
  token: string | undefined,
  produce: (write: (chunk: Buffer) => Promise<void>) => Promise<void>,
): Promise<void> {
  const send = new URL(url).protocol === "https:" ? httpsRequest : httpRequest;
  const request = send(url, {
    method: "POST",
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "content-length": String(length),
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    timeout: UPLOAD_IDLE_MS,
  });
  const answered = new Promise<IncomingMessage>((resolve, reject) => {
    request.once("response", resolve);
    request.once("error", reject);
    request.once("timeout", () => request.destroy(new Error("the file upload to Slack timed out")));
  });
  // Until the answer comes, a failed request is reported there, not as an unhandled rejection.
  answered.catch(() => undefined);
  const write = (chunk: Buffer) =>
    new Promise<void>((resolve, reject) => {
      if (chunk.byteLength === 0) {
        resolve();
        return;
      }
      request.write(chunk, (error) => {
        if (error) reject(error);
        else resolve();
      });
    });
  try {
    await produce(write);
    request.end();
  } catch (error) {
    request.destroy();
    throw error;
  }
  const response = await answered;
  response.resume();
  if (response.statusCode !== 200) {
    throw new Error(`Slack answered the file upload with HTTP ${String(response.statusCode)}`);
  }
}
