import { describe, expect, it } from "vitest";
import { createRedactor, REDACTED } from "../../src/redact.js";
import { redactingFetch } from "../../src/slack/outgoing.js";
import { PLANTED_SECRETS } from "../support/secrets.js";

const secret = PLANTED_SECRETS.gitlabDeployToken;

/** A `fetch` that keeps what it was asked to send. */
function recorder() {
  const sent: RequestInit[] = [];
  const base = (_input: string | URL | Request, init?: RequestInit) => {
    sent.push(init ?? {});
    return Promise.resolve(new Response("{}"));
  };
  return { sent, fetch: redactingFetch(createRedactor(), base) };
}

describe("redactingFetch", () => {
  it("redacts a Web API call's form fields, the JSON ones string by string", async () => {
    const { sent, fetch } = recorder();
    const blocks = JSON.stringify([
      { type: "section", text: { type: "mrkdwn", text: `x ${secret}` } },
    ]);
    await fetch("https://slack.test/api/chat.postMessage", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ channel: "C1", text: `token ${secret}`, blocks }).toString(),
    });
    const form = new URLSearchParams(sent[0]!.body as string);
    expect(form.get("channel")).toBe("C1");
    expect(form.get("text")).toBe(`token ${REDACTED}`);
    expect(JSON.parse(form.get("blocks")!)).toEqual([
      { type: "section", text: { type: "mrkdwn", text: `x ${REDACTED}` } },
    ]);
  });

  it("redacts a response URL's JSON body", async () => {
    const { sent, fetch } = recorder();
    await fetch("https://hooks.slack.test/commands/1", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ text: `password: ${PLANTED_SECRETS.password}` }),
    });
    expect(JSON.parse(sent[0]!.body as string)).toEqual({ text: `password: ${REDACTED}` });
  });

  it("redacts an uploaded text file and passes other bytes as they are", async () => {
    const { sent, fetch } = recorder();
    const form = new FormData();
    form.append("file", new Blob([`plan\n${secret}\n`]), "web-01-plan.txt");
    form.append("image", new Blob([new Uint8Array([0xff, 0xfe, 0x00])]), "x.bin");
    await fetch("https://files.slack.test/upload/v1/abc", { method: "POST", body: form });
    const clean = sent[0]!.body as FormData;
    const file = clean.get("file");
    if (!(file instanceof Blob)) throw new Error("the file was not uploaded as a file");
    expect((file as Blob & { name?: string }).name).toBe("web-01-plan.txt");
    expect(await file.text()).toBe(`plan\n${REDACTED}\n`);
    const image = clean.get("image");
    if (!(image instanceof Blob)) throw new Error("the image was not uploaded as a file");
    expect([...new Uint8Array(await image.arrayBuffer())]).toEqual([0xff, 0xfe, 0x00]);
  });
});
