/**
 * The sandbox's page server, in process and through HTTP only: what the page sends (commands,
 * form submissions, clicks, scenario switches) and what it reads back (the server-sent snapshot,
 * uploaded files). The bot behind it is the real one, reached through its own signed
 * `/slack/events`, against the simulated platform.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { CREATE_FIELDS, CREATE_MODAL, PLAN_ACTIONS_BLOCK, PLAN_APPROVE } from "../../src/ids.js";
import { PEOPLE, PROJECT_PATH } from "../../sandbox/platform.js";
import { startSandbox, type RunningSandbox } from "../../sandbox/sandbox.js";
import type { FakeMessage, FakeView } from "../../sandbox/simulators/slack/index.js";
import { slackSignature } from "../../sandbox/simulators/slack/signer.js";
import { captureLogs } from "../support/logs.js";
import { waitFor } from "../support/wait.js";

const REQUESTER = PEOPLE.requester.id;
const APPROVER = PEOPLE.approver.id;
const STRANGER = PEOPLE.stranger.id;

interface Snapshot {
  channel: { id: string; name: string };
  messages: FakeMessage[];
  ephemerals: { id: string; user: string; ts: string; text: string; blocks: unknown[] }[];
  views: { user: string; view: FakeView }[];
  homes: Record<string, { id: string; hash: string; blocks: unknown[] }>;
  direct: FakeMessage[];
  files: string[];
  scenarios: { name: string; label: string; detail: string; on: boolean }[];
}

interface Answer {
  status: number;
  headers: Headers;
  json: Record<string, unknown>;
}

let dir: string | undefined;
let sandbox: RunningSandbox | undefined;
let fetchSpy: MockInstance<typeof fetch> | undefined;

beforeEach(() => {
  // Every request the page server signs for the bot goes through the global fetch: watched here
  // (and passed through) so a test can tell whether anything reached the bot's /slack/events.
  fetchSpy = vi.spyOn(globalThis, "fetch");
});

afterEach(async () => {
  fetchSpy?.mockRestore();
  fetchSpy = undefined;
  await sandbox?.stop();
  sandbox = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function start(): Promise<RunningSandbox> {
  dir = mkdtempSync(join(tmpdir(), "vmbot-sandbox-server-"));
  sandbox = await startSandbox({
    port: 0,
    dbPath: join(dir, "sandbox.sqlite"),
    logLevel: "debug",
    paceMs: 100,
    logDestination: captureLogs().stream,
  });
  return sandbox;
}

/** The page's address on IPv4, where the server listens (`localhost` may resolve to ::1 first). */
const at = (s: RunningSandbox, path: string): string => `http://127.0.0.1:${s.port}${path}`;

/** The bodies the page server posted to the bot's /slack/events so far, as form fields. */
function deliveries(): URLSearchParams[] {
  return (fetchSpy?.mock.calls ?? [])
    .filter(([input]) =>
      String(input instanceof Request ? input.url : input).endsWith("/slack/events"),
    )
    .map(([, init]) => new URLSearchParams(typeof init?.body === "string" ? init.body : ""));
}

async function post(
  s: RunningSandbox,
  path: string,
  body: unknown,
  init: { contentType?: string; raw?: string } = {},
): Promise<Answer> {
  const response = await fetch(at(s, path), {
    method: "POST",
    headers: { "content-type": init.contentType ?? "application/json" },
    body: init.raw ?? JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    json: response.headers.get("content-type")?.startsWith("application/json")
      ? (JSON.parse(text) as Record<string, unknown>)
      : { text },
  };
}

/** The first `event: state` frame of `/sandbox/events`, as the page receives it on connecting. */
async function snapshot(s: RunningSandbox): Promise<Snapshot> {
  const controller = new AbortController();
  const response = await fetch(at(s, "/sandbox/events"), { signal: controller.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const body = response.body;
  if (body === null) throw new Error("the event stream has no body");
  const reader = (body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the event stream ended before a state frame: ${buffer}`);
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const frame = buffer.slice(0, end).split("\n");
        buffer = buffer.slice(end + 2);
        if (!frame.includes("event: state")) continue;
        const data = frame
          .filter((line) => line.startsWith("data: "))
          .map((line) => line.slice("data: ".length))
          .join("\n");
        return JSON.parse(data) as Snapshot;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
    controller.abort();
  }
}

/** Polls the snapshot until `probe` finds something, or fails with `what` after the deadline. */
async function waitForState<T>(
  s: RunningSandbox,
  what: string,
  probe: (state: Snapshot) => T | undefined,
  timeoutMs = 20_000,
): Promise<T> {
  let last: Snapshot | undefined;
  return waitFor(
    async () => {
      last = await snapshot(s);
      return probe(last);
    },
    what,
    { timeoutMs, intervalMs: 100, detail: () => `last snapshot: ${JSON.stringify(last)}` },
  );
}

const header = (message: FakeMessage): string => {
  const block = message.blocks.find((b) => b.type === "header");
  const text = block?.text as { text?: string } | undefined;
  return text?.text ?? "";
};

const requestMessage = (state: Snapshot, vm: string): FakeMessage | undefined =>
  state.messages.find((m) => m.thread_ts === undefined && header(m).startsWith(`VM ${vm} `));

const hasPlanButtons = (message: FakeMessage): boolean =>
  message.blocks.some(
    (block) =>
      block.type === "actions" &&
      block.block_id === PLAN_ACTIONS_BLOCK &&
      JSON.stringify(block.elements).includes(`"action_id":"${PLAN_APPROVE}"`),
  );

/** `/vm create <vm>` as `as`, up to the open form; returns the form's view. */
async function openCreateForm(
  s: RunningSandbox,
  vm: string,
  as: keyof typeof PEOPLE = "requester",
): Promise<FakeView> {
  const answer = await post(s, "/sandbox/command", { as, text: `/vm create ${vm}` });
  expect(answer).toMatchObject({ status: 200, json: { status: 200 } });
  const { view } = await waitForState(s, "the create form", (state) =>
    state.views.find((v) => v.user === PEOPLE[as].id && v.view.callback_id === CREATE_MODAL),
  );
  return view;
}

/** Asks for `vm` through the form as `as` and waits for its plan; returns the request message. */
async function requestWithPlan(
  s: RunningSandbox,
  vm: string,
  ip: string,
  as: keyof typeof PEOPLE = "requester",
): Promise<FakeMessage> {
  const view = await openCreateForm(s, vm, as);
  const submitted = await post(s, "/sandbox/submit", {
    as,
    view: view.id,
    values: { [CREATE_FIELDS.ip]: ip },
  });
  expect(submitted).toMatchObject({ status: 200, json: { status: 200 } });
  return await waitForState(
    s,
    `the plan of ${vm}`,
    (state) => {
      const message = requestMessage(state, vm);
      return message !== undefined && hasPlanButtons(message) ? message : undefined;
    },
    30_000,
  );
}

/** What a bad request must leave alone: nothing sent to the bot, nothing new in Slack. */
function platformState(s: RunningSandbox) {
  const { slack } = s.platform;
  return {
    deliveries: deliveries().length,
    calls: slack.calls.length,
    messages: slack.messages.length,
    ephemerals: slack.ephemerals.length,
    views: slack.views.length,
    responses: slack.responses.length,
  };
}

describe("the sandbox page server", () => {
  it("serves the page with a strict CSP, its stylesheet, health, 404 and 405", async () => {
    const s = await start();
    const page = await fetch(at(s, "/"));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/ui/page.js"></script>');
    // Nothing inline the CSP would block: every script has a src, no style element or attribute.
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script type="module" src="/ui/page.js">']);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);

    // The stylesheet sits next to the module (sandbox/ui/ under vitest).
    expect(existsSync(fileURLToPath(new URL("../../sandbox/ui/page.css", import.meta.url)))).toBe(
      true,
    );
    const css = await fetch(at(s, "/ui/page.css"));
    expect(css.status).toBe(200);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(css.headers.get("x-content-type-options")).toBe("nosniff");
    expect((await css.text()).length).toBeGreaterThan(0);

    const health = await fetch(at(s, "/healthz"));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({
      status: "ok",
      database: { engine: "sqlite", reachable: true },
    });

    const missing = await fetch(at(s, "/nothing-here"));
    expect(missing.status).toBe(404);
    expect(missing.headers.get("x-content-type-options")).toBe("nosniff");
    expect((await fetch(at(s, "/ui/other.js"))).status).toBe(404);
    expect((await fetch(at(s, "/healthz"), { method: "POST" })).status).toBe(404);

    for (const route of ["command", "submit", "action", "scenario", "close"]) {
      const wrong = await fetch(at(s, `/sandbox/${route}`));
      expect(wrong.status, route).toBe(405);
      expect(await wrong.json()).toEqual({ error: "use POST" });
    }
    expect((await fetch(at(s, "/sandbox/command"), { method: "PUT" })).status).toBe(405);
    expect(deliveries()).toHaveLength(0);
  });

  it("answers only requests addressed to this machine's own names", async () => {
    const s = await start();
    const before = platformState(s);
    const as = (host: string, path: string, body?: string) =>
      new Promise<number>((resolve, reject) => {
        request(
          at(s, path),
          {
            method: body === undefined ? "GET" : "POST",
            agent: false,
            headers: { host, "content-type": "application/json" },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        )
          .on("error", reject)
          .end(body);
      });
    // A page that rebinds its own name to 127.0.0.1 gets nothing, and drives nobody.
    expect(await as(`rebound.example:${s.port}`, "/")).toBe(421);
    expect(await as("rebound.example", "/sandbox/events")).toBe(421);
    expect(
      await as("rebound.example", "/sandbox/command", '{"as":"admin","text":"/vm unlock"}'),
    ).toBe(421);
    expect(platformState(s)).toEqual(before);
    for (const host of [`localhost:${s.port}`, `127.0.0.1:${s.port}`, `[::1]:${s.port}`]) {
      expect(await as(host, "/healthz")).toBe(200);
    }
  });

  it("answers bad input with 400 and a clear error, and changes nothing", async () => {
    const s = await start();
    const before = platformState(s);
    const cases: {
      what: string;
      path: string;
      body?: unknown;
      contentType?: string;
      raw?: string;
      error: string | RegExp;
    }[] = [
      {
        what: "a form-encoded body",
        path: "/sandbox/command",
        contentType: "application/x-www-form-urlencoded",
        raw: "as=requester&text=%2Fvm+help",
        error: "send JSON (content-type: application/json)",
      },
      {
        what: "no content type",
        path: "/sandbox/command",
        contentType: "",
        raw: JSON.stringify({ as: "requester", text: "/vm help" }),
        error: "send JSON (content-type: application/json)",
      },
      {
        what: "invalid JSON",
        path: "/sandbox/command",
        raw: '{"as": "requester", "text": "/vm help"',
        error: "the body is not valid JSON",
      },
      {
        what: "a JSON array",
        path: "/sandbox/command",
        body: [{ as: "requester", text: "/vm help" }],
        error: "the body must be a JSON object",
      },
      {
        what: "JSON null",
        path: "/sandbox/scenario",
        raw: "null",
        error: "the body must be a JSON object",
      },
      {
        what: "no person",
        path: "/sandbox/command",
        body: { text: "/vm help" },
        error: "as is missing",
      },
      {
        what: "an unknown person",
        path: "/sandbox/command",
        body: { as: "mallory", text: "/vm help" },
        error: 'unknown person "mallory"',
      },
      {
        what: "a person named after an Object property",
        path: "/sandbox/command",
        body: { as: "toString", text: "/vm help" },
        error: 'unknown person "toString"',
      },
      {
        what: "no command text",
        path: "/sandbox/command",
        body: { as: "requester", text: "" },
        error: "text is missing",
      },
      {
        what: "another slash command",
        path: "/sandbox/command",
        body: { as: "requester", text: "/giphy cats" },
        error: "Only /vm is installed in this workspace: try /vm help.",
      },
      {
        what: "a message that is no command",
        path: "/sandbox/command",
        body: { as: "requester", text: "hello vmbot" },
        error: /\/vm help/,
      },
      {
        what: "a command that only starts with /vm",
        path: "/sandbox/command",
        body: { as: "requester", text: "/vmx create web-01" },
        error: /\/vm help/,
      },
      {
        what: "an unknown scenario",
        path: "/sandbox/scenario",
        body: { name: "meteor-strike", on: true },
        error: 'unknown scenario "meteor-strike"',
      },
      {
        what: "a scenario named after an Object property",
        path: "/sandbox/scenario",
        body: { name: "constructor", on: true },
        error: 'unknown scenario "constructor"',
      },
      {
        what: "a submission for a view that never was",
        path: "/sandbox/submit",
        body: { as: "requester", view: "V0NOSUCHVIEW", values: {} },
        error: "that form is closed",
      },
      {
        what: "a submission without a view",
        path: "/sandbox/submit",
        body: { as: "requester", values: {} },
        error: "view is missing",
      },
      {
        what: "a click on a message that does not exist",
        path: "/sandbox/action",
        body: { as: "approver", action: PLAN_APPROVE, ts: "1700000000.000100" },
        error: "that message is gone",
      },
      {
        what: "a click on an ephemeral answer that does not exist",
        path: "/sandbox/action",
        body: { as: "approver", action: "unlock_confirm", ephemeral: "a0" },
        error: "that message is gone",
      },
      {
        what: "a click without an action",
        path: "/sandbox/action",
        body: { as: "approver", ts: "1700000000.000100" },
        error: "action is missing",
      },
      {
        what: "a close without a view",
        path: "/sandbox/close",
        body: { as: "requester" },
        error: "view is missing",
      },
      {
        what: "a scenario switched with something other than true or false",
        path: "/sandbox/scenario",
        body: { name: "replace", on: "yes" },
        error: "on must be true or false",
      },
      {
        what: "a field the route does not take",
        path: "/sandbox/command",
        body: { as: "requester", text: "/vm help", channel: "C0OTHER" },
        error: /channel/,
      },
      {
        what: "a value that is not text",
        path: "/sandbox/submit",
        body: { as: "requester", view: "V0NOSUCHVIEW", values: { vm_cores: 4 } },
        error: "values must be text, as typed or chosen",
      },
      {
        what: "a click naming both a message and an ephemeral answer",
        path: "/sandbox/action",
        body: { as: "approver", action: PLAN_APPROVE, ts: "1700000000.000100", ephemeral: "a0" },
        error:
          "name what was clicked: ts, ephemeral for an answer only you see, dm for a direct message, or home",
      },
      {
        what: "a click on a Home tab that was never published",
        path: "/sandbox/action",
        body: { as: "stranger", action: "home_create", home: true },
        error: "your Home tab is not published yet",
      },
    ];
    for (const c of cases) {
      const answer = await post(s, c.path, c.body, {
        ...(c.contentType === undefined ? {} : { contentType: c.contentType }),
        ...(c.raw === undefined ? {} : { raw: c.raw }),
      });
      expect(answer.status, c.what).toBe(400);
      expect(answer.headers.get("content-type"), c.what).toBe("application/json; charset=utf-8");
      expect(answer.json.error, c.what).toEqual(
        typeof c.error === "string" ? c.error : expect.stringMatching(c.error),
      );
    }
    expect(platformState(s)).toEqual(before);
    const state = await snapshot(s);
    expect(state.messages).toEqual([]);
    expect(state.ephemerals).toEqual([]);
    expect(state.views).toEqual([]);
    expect(state.scenarios.every((scenario) => !scenario.on)).toBe(true);
  });

  it("opens a person's Home tab through a signed app_home_opened, and its buttons reach the bot from the view", async () => {
    const s = await start();
    const opened = await post(s, "/sandbox/home", { as: "requester" });
    expect(opened.status).toBe(200);
    const home = await waitFor(
      async () => (await snapshot(s)).homes[REQUESTER],
      "the requester's Home tab",
    );
    expect(JSON.stringify(home.blocks)).toContain("Your VMs (0)");
    // Someone else's Home is theirs: not published for them by this.
    expect((await snapshot(s)).homes[APPROVER]).toBeUndefined();

    // Create VM, clicked on the Home: the same form as /vm create opens for its clicker.
    const clicked = await post(s, "/sandbox/action", {
      as: "requester",
      action: "home_create",
      home: true,
    });
    expect(clicked.status).toBe(200);
    const form = await waitFor(
      async () => (await snapshot(s)).views.find((v) => v.user === REQUESTER),
      "the create form",
    );
    expect(JSON.stringify(form.view.blocks)).toContain("vm_name");
  });

  it("refuses a body over 256 KB with 413 and keeps answering on the same connections", async () => {
    const s = await start();
    const before = platformState(s);
    // Declared up front (fetch sends content-length): refused before the body is read.
    const big = JSON.stringify({ as: "requester", text: `/vm help ${"x".repeat(1024 * 1024)}` });
    for (let i = 0; i < 5; i += 1) {
      const answer = await fetch(at(s, "/sandbox/command"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: big,
      });
      expect(answer.status).toBe(413);
      expect(await answer.json()).toEqual({
        error: "the request is too large (at most 256 KB)",
      });
      // The same pool of connections still works: the refused one was closed, not reused.
      expect((await fetch(at(s, "/healthz"))).status).toBe(200);
    }

    // Streamed without a length (chunked): refused once the limit is passed.
    const agent = new Agent({ keepAlive: true });
    try {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          at(s, "/sandbox/command"),
          { method: "POST", agent, headers: { "content-type": "application/json" } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("end", () => {
              resolve({
                status: res.statusCode ?? 0,
                body: Buffer.concat(chunks).toString("utf8"),
              });
            });
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.write('{"as":"requester","text":"/vm help ');
        for (let i = 0; i < 20; i += 1) req.write("x".repeat(32 * 1024));
        req.end('"}');
      });
      expect(answer.status).toBe(413);
      const health = await new Promise<number>((resolve, reject) => {
        request(at(s, "/healthz"), { agent }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
          .on("error", reject)
          .end();
      });
      expect(health).toBe(200);
    } finally {
      agent.destroy();
    }
    expect(platformState(s)).toEqual(before);
  });

  it("refuses submissions to a closed form and for inputs it lacks, leaving it as it was", async () => {
    const s = await start();
    const view = await openCreateForm(s, "web-06");

    let before = platformState(s);
    const unknownInput = await post(s, "/sandbox/submit", {
      as: "requester",
      view: view.id,
      values: { vm_colour: "blue" },
    });
    expect(unknownInput.status).toBe(400);
    expect(unknownInput.json.error).toBe('The view has no input with action_id "vm_colour"');
    expect(platformState(s)).toEqual(before);
    expect((await snapshot(s)).views.map((v) => v.view.id)).toEqual([view.id]);

    // Only the person whose form it is may close or submit it.
    const notTheirs = await post(s, "/sandbox/close", { as: "approver", view: view.id });
    expect(notTheirs).toMatchObject({
      status: 400,
      json: { error: "that form is someone else's" },
    });
    const notTheirsSubmit = await post(s, "/sandbox/submit", {
      as: "approver",
      view: view.id,
      values: { [CREATE_FIELDS.ip]: "192.168.1.66/24" },
    });
    expect(notTheirsSubmit.json.error).toBe("that form is someone else's");
    expect(platformState(s)).toEqual(before);

    const closed = await post(s, "/sandbox/close", { as: "requester", view: view.id });
    expect(closed).toMatchObject({ status: 200, json: {} });
    expect((await snapshot(s)).views).toEqual([]);

    before = platformState(s);
    const late = await post(s, "/sandbox/submit", {
      as: "requester",
      view: view.id,
      values: { [CREATE_FIELDS.ip]: "192.168.1.66/24" },
    });
    expect(late.status).toBe(400);
    expect(late.json.error).toBe("that form is closed");
    expect(platformState(s)).toEqual(before);
    expect(await s.bot.store.listActive()).toEqual([]);
    expect((await s.bot.store.listAudit()).filter((entry) => entry.action === "requested")).toEqual(
      [],
    );
    expect((await snapshot(s)).messages).toEqual([]);
  }, 30_000);

  it("takes /vm create through signed requests: the form, an inline error, then the request", async () => {
    const s = await start();
    const view = await openCreateForm(s, "web-07");
    const state = await snapshot(s);
    expect(state.views).toHaveLength(1);
    expect(state.views[0]).toMatchObject({ user: REQUESTER, view: { callback_id: CREATE_MODAL } });
    expect(JSON.stringify(view.blocks)).toContain('"initial_value":"web-07"');

    // The command reached the bot's /slack/events signed, and the bot opened the form with the
    // trigger_id the command carried.
    const commands = deliveries();
    expect(commands).toHaveLength(1);
    expect(commands[0]?.get("command")).toBe("/vm");
    expect(commands[0]?.get("text")).toBe("create web-07");
    expect(commands[0]?.get("user_id")).toBe(REQUESTER);
    const trigger = commands[0]?.get("trigger_id");
    expect(trigger).toMatch(/\S/);
    const opens = s.platform.slack.callsTo("views.open");
    expect(opens).toHaveLength(1);
    expect(opens[0]).toMatchObject({ ok: true, args: { trigger_id: trigger } });

    // The bot checks that signature: the same body with a wrong one is refused.
    const eventsUrl = `http://127.0.0.1:${s.bot.port}/slack/events`;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const forged = await fetch(eventsUrl, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": slackSignature(
          "not-the-signing-secret",
          timestamp,
          commands[0]?.toString() ?? "",
        ),
      },
      body: commands[0]?.toString() ?? "",
    });
    expect(forged.status).toBe(401);
    expect(s.platform.slack.callsTo("views.open")).toHaveLength(1);

    const invalid = await post(s, "/sandbox/submit", {
      as: "requester",
      view: view.id,
      values: { [CREATE_FIELDS.ip]: "192.168.1.300/24" },
    });
    expect(invalid.status).toBe(200);
    expect(invalid.json.status).toBe(200);
    expect(invalid.json.errors).toEqual({
      [CREATE_FIELDS.ip]: expect.stringMatching(/\S/) as string,
    });
    const stillOpen = await snapshot(s);
    expect(stillOpen.views.map((v) => v.view.id)).toEqual([view.id]);
    expect(stillOpen.messages).toEqual([]);

    const valid = await post(s, "/sandbox/submit", {
      as: "requester",
      view: view.id,
      values: { [CREATE_FIELDS.ip]: "192.168.1.67/24" },
    });
    expect(valid).toMatchObject({ status: 200, json: { status: 200 } });
    expect(valid.json.errors).toBeUndefined();
    // After the command and the forged copy above (which went to the bot directly).
    const submissions = deliveries().slice(2);
    expect(submissions).toHaveLength(2);
    for (const submission of submissions) {
      const payload = JSON.parse(submission.get("payload") ?? "{}") as Record<string, unknown>;
      expect(payload).toMatchObject({
        type: "view_submission",
        user: { id: REQUESTER },
        view: { id: view.id, callback_id: CREATE_MODAL },
      });
    }

    const message = await waitForState(s, "the request message of web-07", (now) =>
      requestMessage(now, "web-07"),
    );
    expect(message.user).toBe(s.platform.slack.identity.botUserId);
    expect(JSON.stringify(message.blocks)).toContain(`<@${REQUESTER}>`);
    expect((await snapshot(s)).views).toEqual([]);
  }, 40_000);

  it("shows each ephemeral answer to its recipient only", async () => {
    const s = await start();
    expect(await post(s, "/sandbox/command", { as: "requester", text: "/vm help" })).toMatchObject({
      status: 200,
      json: { status: 200 },
    });
    // Someone on no list is refused through the command's response_url.
    expect(
      await post(s, "/sandbox/command", { as: "stranger", text: "/vm create web-09" }),
    ).toMatchObject({ status: 200, json: { status: 200 } });

    const state = await waitForState(s, "the stranger's refusal", (now) =>
      now.ephemerals.some((e) => e.user === STRANGER) ? now : undefined,
    );
    const mine = state.ephemerals.filter((e) => e.user === REQUESTER);
    expect(mine).toHaveLength(1);
    expect(`${mine[0]?.text} ${JSON.stringify(mine[0]?.blocks)}`).toContain("/vm create");

    const theirs = state.ephemerals.filter((e) => e.user === STRANGER);
    expect(theirs).toHaveLength(1);
    // Named as the people who may, never as a setting.
    expect(theirs[0]?.text).toContain(
      "Only the people who may ask for VMs (<@U0SBXROBIN>, <@U0SBXALEX> or <@U0SBXSAM>) can use /vm create",
    );
    expect(theirs[0]?.text).not.toContain("REQUESTERS");

    // Nothing for the approver, and none of it in the channel or in a form.
    expect(state.ephemerals.filter((e) => e.user === APPROVER)).toEqual([]);
    expect(state.ephemerals.map((e) => e.user).sort()).toEqual([REQUESTER, STRANGER].sort());
    expect(state.messages).toEqual([]);
    expect(state.views).toEqual([]);
  });

  it("refuses the requester's click on Approve of their own plan, privately; the plan still awaits approval", async () => {
    const s = await start();
    const message = await requestWithPlan(s, "web-08", "192.168.1.68/24");
    expect(header(message)).toBe("VM web-08 — Awaiting approval");

    const click = await post(s, "/sandbox/action", {
      as: "requester",
      action: PLAN_APPROVE,
      block: PLAN_ACTIONS_BLOCK,
      ts: message.ts,
    });
    expect(click).toMatchObject({ status: 200, json: { status: 200 } });
    const payload = JSON.parse(deliveries().at(-1)?.get("payload") ?? "{}") as Record<
      string,
      unknown
    >;
    expect(payload).toMatchObject({
      type: "block_actions",
      user: { id: REQUESTER },
      container: { message_ts: message.ts, is_ephemeral: false },
      actions: [{ action_id: PLAN_APPROVE, block_id: PLAN_ACTIONS_BLOCK }],
    });

    const state = await waitForState(s, "the refusal", (now) =>
      now.ephemerals.some((e) => e.user === REQUESTER) ? now : undefined,
    );
    const refusal = state.ephemerals.filter((e) => e.user === REQUESTER);
    // The requester is no approver (the example policy's platform and security groups are), so
    // that is what they hear.
    expect(refusal.map((e) => e.text)).toEqual([
      "Only the approvers (<@U0SBXALEX> or <@U0SBXSAM>) may approve plans. Ask one of them to look at web-08.",
    ]);
    expect(state.ephemerals.filter((e) => e.user !== REQUESTER)).toEqual([]);
    const after = requestMessage(state, "web-08");
    expect(after && header(after)).toBe("VM web-08 — Awaiting approval");
    expect(after && hasPlanButtons(after)).toBe(true);
    expect((await s.bot.store.listActive()).map((r) => [r.spec.name, r.status])).toEqual([
      ["web-08", "awaiting_approval"],
    ]);
  }, 40_000);

  it("refuses an approver's approval of their own request, privately", async () => {
    const s = await start();
    const message = await requestWithPlan(s, "web-11", "192.168.1.71/24", "approver");
    const click = await post(s, "/sandbox/action", {
      as: "approver",
      action: PLAN_APPROVE,
      ts: message.ts,
    });
    expect(click).toMatchObject({ status: 200, json: { status: 200 } });
    const state = await waitForState(s, "the refusal", (now) =>
      now.ephemerals.some((e) => e.user === APPROVER) ? now : undefined,
    );
    expect(state.ephemerals.map((e) => [e.user, e.text])).toEqual([
      [APPROVER, "You asked for web-11, so another approver must approve it."],
    ]);
    const after = requestMessage(state, "web-11");
    expect(after && header(after)).toBe("VM web-11 — Awaiting approval");
    expect((await s.bot.store.listActive()).map((r) => [r.spec.name, r.status])).toEqual([
      ["web-11", "awaiting_approval"],
    ]);
    // Nothing was applied: the only pipeline is the one that planned.
    expect((await s.bot.store.listAudit()).map((entry) => entry.action)).not.toContain("approved");
  }, 40_000);

  it("serves the uploaded plan as plain text, and 404 for any other file", async () => {
    const s = await start();
    const message = await requestWithPlan(s, "web-10", "192.168.1.70/24");
    const { id, state } = await waitForState(s, "the plan file in the thread", (now) => {
      const share = now.messages.find(
        (m) => m.thread_ts === message.ts && (m.files ?? []).length > 0,
      );
      const fileId = share?.files?.[0]?.id;
      return typeof fileId === "string" && now.files.includes(fileId)
        ? { id: fileId, state: now }
        : undefined;
    });
    expect(state.files).toEqual([id]);

    const file = await fetch(at(s, `/sandbox/files/${id}`));
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(file.headers.get("x-content-type-options")).toBe("nosniff");
    expect(file.headers.get("content-disposition")).toBe('inline; filename="web-10-plan.txt"');
    const plan = await file.text();
    expect(plan).toContain("Plan:");
    expect(plan).toContain("web-10");

    for (const other of ["F0NOSUCHFILE", "f0lowercase", "..%2Fsandbox.sqlite", ""]) {
      const missing = await fetch(at(s, `/sandbox/files/${other}`));
      expect(missing.status, other).toBe(404);
    }
  }, 40_000);

  it("serves the simulated GitLab's pipeline and job pages behind the bot's links, escaped", async () => {
    const s = await start();
    await requestWithPlan(s, "web-12", "192.168.1.72/24");
    const pipeline = s.platform.gitlab.pipelines.at(-1);
    if (pipeline === undefined) throw new Error("no pipeline");
    const web = pipeline.webUrl.slice(s.platform.gitlab.url.length);
    // What the page shows behind the link it intercepts.
    const page = await fetch(at(s, `/sandbox/gitlab${web}`));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain(`Pipeline #${pipeline.id}`);
    const plan = pipeline.jobs.find((job) => job.name === "tf:plan");
    if (plan === undefined) throw new Error("no plan job");
    expect(html).toContain(`/-/jobs/${plan.id}"`);
    // The inputs are shown as text, not markup.
    expect(html).toContain("&quot;vm_name&quot;:&quot;web-12&quot;");

    const job = await (
      await fetch(at(s, `/sandbox/gitlab${web.replace(/pipelines\/\d+$/, `jobs/${plan.id}`)}`))
    ).text();
    expect(job).toContain("tf:plan: success");
    expect(job).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    // The runner's colours and section markers are gone.
    expect(job).not.toContain("\x1b");
    expect(job).not.toContain("section_start");

    for (const other of [
      "/x/-/pipelines/999999",
      "/x/-/jobs/999999",
      "/x/-/issues/1",
      "/x/-/jobs/1%2F..",
    ]) {
      const missing = await fetch(at(s, `/sandbox/gitlab${other}`));
      expect(missing.status, other).toBe(404);
      expect(await missing.text(), other).toContain("pipelines and job logs only");
    }
  }, 40_000);

  it("switches scenarios: stuck-lock locks the Terraform state, slow-proxmox slows Proxmox", async () => {
    const s = await start();
    const state = () => s.platform.gitlab.terraformState(PROJECT_PATH, "general");
    expect(state()?.lock).toBeNull();

    const locked = await post(s, "/sandbox/scenario", { name: "stuck-lock", on: true });
    expect(locked.status).toBe(200);
    expect(locked.json.scenarios).toEqual({
      replace: false,
      "failing-configure": false,
      unreachable: false,
      "stuck-lock": true,
      "slow-proxmox": false,
    });
    expect(state()?.lock).toMatchObject({ user: { username: "ci-runner" } });
    const shown = await snapshot(s);
    expect(shown.scenarios.find((x) => x.name === "stuck-lock")).toMatchObject({
      on: true,
      label: "Stuck state lock",
    });
    // Switching it on again keeps the same lock.
    const lockId = state()?.lock?.id;
    await post(s, "/sandbox/scenario", { name: "stuck-lock", on: true });
    expect(state()?.lock?.id).toBe(lockId);

    const unlocked = await post(s, "/sandbox/scenario", { name: "stuck-lock", on: false });
    expect(unlocked.json.scenarios).toMatchObject({ "stuck-lock": false });
    expect(state()?.lock).toBeNull();

    // Anything but true or false is refused, and changes nothing.
    await post(s, "/sandbox/scenario", { name: "replace", on: true });
    const notTrue = await post(s, "/sandbox/scenario", { name: "replace", on: "yes" });
    expect(notTrue.status).toBe(400);
    expect(
      (await post(s, "/sandbox/scenario", { name: "replace", on: false })).json.scenarios,
    ).toMatchObject({ replace: false });

    const proxmoxVersion = async (): Promise<number> => {
      const started = performance.now();
      const response = await fetch(`${s.platform.proxmox.url}/api2/json/version`);
      await response.arrayBuffer();
      return performance.now() - started;
    };
    expect(await proxmoxVersion()).toBeLessThan(1_500);
    const slow = await post(s, "/sandbox/scenario", { name: "slow-proxmox", on: true });
    expect(slow.json.scenarios).toMatchObject({ "slow-proxmox": true });
    expect(await proxmoxVersion()).toBeGreaterThanOrEqual(2_400);
    const fast = await post(s, "/sandbox/scenario", { name: "slow-proxmox", on: false });
    expect(fast.json.scenarios).toMatchObject({ "slow-proxmox": false });
    expect(await proxmoxVersion()).toBeLessThan(1_500);
    expect((await snapshot(s)).scenarios.every((x) => !x.on)).toBe(true);
  }, 30_000);
});
