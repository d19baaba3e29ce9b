/**
 * Which page a form belongs to: Slack shows a modal in the client whose action made its
 * trigger_id, and the modal goes with that client. The sandbox's page sends its own ID (`tab`,
 * one load of the page) with what it does and with its event stream; a form opened from it is
 * marked with it and is closed when that stream ends (the page reloaded or closed).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { CREATE_MODAL } from "../../../src/ids.js";
import { PEOPLE } from "../../../sandbox/platform.js";
import { startSandbox, type RunningSandbox } from "../../../sandbox/sandbox.js";
import { captureLogs } from "../../support/logs.js";
import { waitFor } from "../../support/wait.js";

const REQUESTER = PEOPLE.requester.id;

const stateSchema = z.object({
  views: z.array(
    z.object({
      user: z.string(),
      tab: z.string().optional(),
      view: z.object({ id: z.string(), callback_id: z.string().optional() }),
    }),
  ),
});
type State = z.infer<typeof stateSchema>;

let dir: string | undefined;
let sandbox: RunningSandbox | undefined;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function start(): Promise<RunningSandbox> {
  dir = mkdtempSync(join(tmpdir(), "vmbot-sandbox-forms-"));
  sandbox = await startSandbox({
    port: 0,
    dbPath: join(dir, "sandbox.sqlite"),
    logLevel: "debug",
    paceMs: 100,
    logDestination: captureLogs().stream,
  });
  return sandbox;
}

const at = (s: RunningSandbox, path: string): string => `http://127.0.0.1:${s.port}${path}`;

async function post(s: RunningSandbox, path: string, body: unknown): Promise<number> {
  const response = await fetch(at(s, path), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

/** The event stream as a page with `tab` opens it; `close` ends it as a reload would. */
async function openStream(
  s: RunningSandbox,
  tab?: string,
): Promise<{ first: State; close: () => Promise<void> }> {
  const query = tab === undefined ? "" : `?tab=${encodeURIComponent(tab)}`;
  const response = await fetch(at(s, `/sandbox/events${query}`));
  expect(response.status).toBe(200);
  if (response.body === null) throw new Error("the event stream has no body");
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the event stream ended before a state: ${text}`);
    text += decoder.decode(value, { stream: true });
    const data = /^event: state\ndata: (.*)\n\n/m.exec(text)?.[1];
    if (data === undefined) continue;
    return {
      first: stateSchema.parse(JSON.parse(data)),
      close: () => reader.cancel().catch(() => undefined),
    };
  }
}

/** The state the sandbox holds now, read by a stream of no page. */
async function state(s: RunningSandbox): Promise<State> {
  const stream = await openStream(s);
  await stream.close();
  return stream.first;
}

async function waitForState<T>(
  s: RunningSandbox,
  what: string,
  probe: (current: State) => T | undefined,
): Promise<T> {
  return waitFor(async () => probe(await state(s)), what, { timeoutMs: 20_000, intervalMs: 50 });
}

const createForm = (current: State) =>
  current.views.find((v) => v.user === REQUESTER && v.view.callback_id === CREATE_MODAL);

describe("forms and the page that opened them", () => {
  it("marks a form with its page and closes it when that page's stream ends", async () => {
    const s = await start();
    const page = await openStream(s, "page-1");
    const other = await openStream(s, "page-2");
    const command = { as: "requester", text: "/vm create web-01" };
    expect(await post(s, "/sandbox/command", { ...command, tab: "page-1" })).toBe(200);
    const form = await waitForState(s, "the create form", createForm);
    expect(form.tab).toBe("page-1");
    expect(await post(s, "/sandbox/command", { ...command, tab: "page-2" })).toBe(200);
    const otherForm = await waitForState(s, "the other page's form", (current) =>
      current.views.find((v) => v.tab === "page-2"),
    );

    // The other page going away takes its own form only.
    await other.close();
    const left = await waitForState(s, "the other page's form closed", (current) =>
      current.views.some((v) => v.view.id === otherForm.view.id) ? undefined : current,
    );
    expect(left.views.map((v) => v.view.id)).toEqual([form.view.id]);

    await page.close();
    await waitForState(s, "the form closed with its page", (current) =>
      current.views.length === 0 ? true : undefined,
    );
    // Closed for good: it can no longer be submitted.
    expect(
      await post(s, "/sandbox/submit", { as: "requester", tab: "page-1", view: form.view.id }),
    ).toBe(400);
  });

  it("refuses a page ID that is not one", async () => {
    const s = await start();
    expect(
      await post(s, "/sandbox/command", { as: "requester", tab: "<script>", text: "/vm help" }),
    ).toBe(400);
    expect((await state(s)).views).toEqual([]);
  });
});
