import { WebClient } from "@slack/web-api";
import { existsSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRedactor, REDACTED } from "../../src/redact.js";
import { startFakeSlack, type FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { createTextSpool, uploadSpooledText } from "../../src/slack/upload.js";
import { PLANTED_SECRETS, plantedSecretsOutput, TEST_SECRETS } from "../support/secrets.js";

const CHANNEL = "C0VMBOT01";
const filler = (lines: number) =>
  Array.from({ length: lines }, (_, i) => `line ${String(i)} of a chatty provider`).join("\n");

/** `lines` handed on in groups of the sizes given, in turn, as reads of a log would. */
function groups(lines: readonly string[], sizes: readonly number[]): string[][] {
  const out: string[][] = [];
  for (let at = 0, i = 0; at < lines.length; i += 1) {
    const size = sizes[i % sizes.length] ?? 1;
    out.push(lines.slice(at, at + size));
    at += size;
  }
  return out;
}

describe("a spooled text file", () => {
  it("is written redacted, whatever the pieces, with secrets and key blocks across its batch edges", async () => {
    const secret = "configured-secret-value-0001";
    const redact = createRedactor([secret]);
    // About 200 KB: the secrets fall on and around the 64 KB batch edges.
    const text = [
      filler(2_400),
      plantedSecretsOutput(),
      `token ${secret} then`,
      filler(2_400),
      plantedSecretsOutput(),
      filler(2_400),
      "",
    ].join("\n");
    for (const sizes of [[1], [2_000, 3], [7, 5_001, 13], [100_000]]) {
      const spool = await createTextSpool(redact);
      const lines = text.split("\n");
      const last = lines.pop() ?? "";
      for (const group of groups(lines, sizes)) await spool.writeLines(group);
      const file = await spool.finish(last);
      const written = readFileSync(file.path, "utf8");
      expect(file.bytes).toBe(Buffer.byteLength(written));
      for (const value of [secret, ...Object.values(PLANTED_SECRETS)]) {
        expect(written).not.toContain(value);
      }
      expect(written).toContain(REDACTED);
      expect(written).toContain("line 2399 of a chatty provider");
      expect(written.split("\n").length).toBe(text.split("\n").length - countKeyLines(text));
      await spool.discard();
      expect(existsSync(dirname(file.path))).toBe(false);
    }
  });

  it("can be discarded once finished, and twice", async () => {
    const spool = await createTextSpool(createRedactor());
    await spool.writeLines(filler(10_000).split("\n"));
    const file = await spool.finish();
    await spool.discard();
    await spool.discard();
    expect(existsSync(file.path)).toBe(false);
  });
});

/** Lines a redacted key block no longer has: each block of N lines becomes one. */
function countKeyLines(text: string): number {
  return (text.match(/-----BEGIN[^]*?-----END[^\n]*/g) ?? []).reduce(
    (sum, block) => sum + block.split("\n").length - 1,
    0,
  );
}

describe("uploading a spooled text file", () => {
  let slack: FakeSlack | undefined;
  afterEach(async () => {
    await slack?.close();
    slack = undefined;
  });

  it("announces the exact length, sends the bytes raw and shares the file in the thread", async () => {
    slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
    const client = new WebClient(TEST_SECRETS.botToken, { slackApiUrl: slack.apiUrl });
    const redact = createRedactor();
    const spool = await createTextSpool(redact);
    const body = `${filler(20_000)}\nnon-ASCII: é ✓ 🚀\n`;
    await spool.writeLines(body.split("\n").slice(0, -1));
    const file = await spool.finish();
    await uploadSpooledText(
      client,
      file,
      {
        channel: CHANNEL,
        threadTs: "1700000000.000100",
        filename: "web-01-plan.txt",
        title: "Terraform plan for web-01",
        head: "[head]\n",
        tail: "\n[tail]\n",
      },
      redact,
    );
    await spool.discard();

    expect(slack.uploads).toHaveLength(1);
    const upload = slack.uploads[0]!;
    expect(upload).toMatchObject({
      filename: "web-01-plan.txt",
      title: "Terraform plan for web-01",
      completed: true,
      channel: CHANNEL,
      thread_ts: "1700000000.000100",
    });
    expect(upload.content).toBe(`[head]\n${body}\n[tail]\n`);
    expect(upload.length).toBe(Buffer.byteLength(upload.content ?? ""));
  });

  it("fails when Slack refuses to complete the upload, so the caller can say so", async () => {
    slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
    const client = new WebClient(TEST_SECRETS.botToken, {
      slackApiUrl: slack.apiUrl,
      retryConfig: { retries: 0 },
    });
    slack.failNext("files.completeUploadExternal", "channel_not_found");
    const redact = createRedactor();
    const spool = await createTextSpool(redact);
    await spool.writeLines(["plan"]);
    const file = await spool.finish();
    await expect(
      uploadSpooledText(
        client,
        file,
        { channel: CHANNEL, threadTs: "1.2", filename: "a.txt", title: "a" },
        redact,
      ),
    ).rejects.toThrow(/channel_not_found/);
    await spool.discard();
  });
});
