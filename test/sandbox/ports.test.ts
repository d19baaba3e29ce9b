/**
 * The sandbox's two ports, the page server and the bot's own, under whatever a client may send:
 * every method on every route, malformed request-targets, unreadable and oversized bodies. Each
 * is answered below 500 and both ports stay healthy.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startSandbox, type RunningSandbox } from "../../sandbox/sandbox.js";
import { captureLogs } from "../support/logs.js";
import { MALFORMED_REQUESTS, rawRequest } from "../support/raw-http.js";

let dir: string | undefined;
let sandbox: RunningSandbox | undefined;
afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function start(): Promise<RunningSandbox> {
  dir = mkdtempSync(join(tmpdir(), "vmbot-sandbox-ports-"));
  sandbox = await startSandbox({
    port: 0,
    dbPath: join(dir, "sandbox.sqlite"),
    logLevel: "debug",
    paceMs: 100,
    logDestination: captureLogs().stream,
  });
  return sandbox;
}

const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"];

async function expectHealthy(s: RunningSandbox, after: string): Promise<void> {
  for (const port of [s.port, s.bot.port]) {
    const response = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect({ after, port, status: response.status }).toEqual({ after, port, status: 200 });
  }
}

describe("the sandbox's ports", () => {
  it("answer every method on every route below 500, and stay healthy", async () => {
    const s = await start();
    const routes: [number, string][] = [
      ...["/", "/healthz", "/sandbox/command", "/sandbox/events", "/ui/page.js", "/nowhere"].map(
        (path): [number, string] => [s.port, path],
      ),
      ...["/slack/events", "/gitlab/webhook", "/healthz", "/nowhere"].map(
        (path): [number, string] => [s.bot.port, path],
      ),
    ];
    for (const [port, path] of routes) {
      for (const method of METHODS) {
        const controller = new AbortController();
        const response = await fetch(`http://127.0.0.1:${port}${path}`, {
          method,
          signal: controller.signal,
        });
        expect({ port, path, method, ok: response.status < 500 }).toEqual({
          port,
          path,
          method,
          ok: true,
        });
        // The event stream never ends: stop reading it.
        controller.abort();
      }
      await expectHealthy(s, path);
    }
  });

  it("answer 400 to malformed request-targets sent over a raw socket", async () => {
    const s = await start();
    for (const port of [s.port, s.bot.port]) {
      for (const text of MALFORMED_REQUESTS) {
        const local = text.replace("Host: x", "Host: localhost");
        expect({ port, text, status: (await rawRequest(port, local)).status }).toEqual({
          port,
          text,
          status: 400,
        });
        await expectHealthy(s, text);
      }
    }
  });

  it("refuse unreadable and oversized bodies on both ports", async () => {
    const s = await start();
    const bodies: [number, string, string, string][] = [
      [s.port, "/sandbox/command", "null", "application/json"],
      [s.port, "/sandbox/command", "[]", "application/json"],
      [s.port, "/sandbox/command", "x".repeat(300 * 1024), "application/json"],
      [s.port, "/sandbox/submit", "payload=null", "application/x-www-form-urlencoded"],
      [s.bot.port, "/slack/events", "payload=null", "application/x-www-form-urlencoded"],
      [s.bot.port, "/slack/events", "x".repeat(2 * 1024 * 1024), "application/json"],
      [s.bot.port, "/gitlab/webhook", "null", "application/json"],
    ];
    for (const [port, path, body, contentType] of bodies) {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: "POST",
        headers: { "content-type": contentType },
        body,
        // A server that answers 413 and closes may do so before the whole body is sent.
      }).catch(() => undefined);
      if (response !== undefined) {
        expect({ path, refused: response.status >= 400 && response.status < 500 }).toEqual({
          path,
          refused: true,
        });
      }
      await expectHealthy(s, `${path} ${body.slice(0, 20)}`);
    }
  });
});
