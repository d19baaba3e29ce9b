import type { webApi } from "@slack/bolt";
import { createReadStream } from "node:fs";
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

/** Lines are redacted and written in batches of at least this many characters. */
const BATCH_CHARS = 64 * 1024;

export async function createTextSpool(redact: Redactor, dir = tmpdir()): Promise<TextSpool> {
  const folder = await mkdtemp(join(dir, "vmbot-upload-"));
  const path = join(folder, "file.txt");
  let file: FileHandle | undefined = await open(path, "w", 0o600);
  let pending: string[] = [];
  let pendingChars = 0;
  let bytes = 0;

  /** Redacts and writes the pending lines and `last`: one string of the batch, made once. */
  async function flush(last = ""): Promise<void> {
    if (pending.length > 0) pending.push(last);
    const text = pending.length > 0 ? pending.join("\n") : last;
    pending = [];
    pendingChars = 0;
    if (text === "" || file === undefined) return;
    const data = Buffer.from(redact(text), "utf8");
    await file.write(data);
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
    for await (const chunk of createReadStream(file.path)) await write(chunk as Buffer);
    await write(tail);
  });
  await client.files.completeUploadExternal({
    files: [{ id: target.file_id, title: upload.title }],
    channel_id: upload.channel,
    thread_ts: upload.threadTs,
  });
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
