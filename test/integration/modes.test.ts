import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runBot, type BotProcess } from "../support/process.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { waitFor } from "../support/wait.js";

/**
 * Which mode the process runs in: each test runs `npm start`'s entry (`sandbox/main.ts`), or the
 * bot's own (`src/main.ts`, the production image's), in a fresh, empty working directory, so
 * there is no `.env` and the sandbox's `./data/sandbox.sqlite` lands there.
 *
 * The same under `npm run test:postgres`: the sandbox's store is always a SQLite file of its own
 * (VMBOT_SANDBOX_DB), emptied at every start and never VMBOT_DB, and the bot's own entry below
 * stops before it opens any store.
 */

const TIMEOUT = 30_000;
const BANNER = /vmbot sandbox: open http:\/\/localhost:(\d+)\//;

let dirs: string[] = [];
let bots: BotProcess[] = [];

afterEach(async () => {
  for (const bot of bots) {
    if (bot.child.exitCode === null && bot.child.signalCode === null) {
      bot.child.kill("SIGKILL");
      await bot.exited;
    }
  }
  bots = [];
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});

function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-modes-"));
  dirs.push(dir);
  return dir;
}

function start(
  env: Record<string, string>,
  cwd: string,
  entry: "start" | "bot" = "start",
): BotProcess {
  const bot = runBot(env, cwd, { entry });
  bots.push(bot);
  return bot;
}

/** The port in the sandbox's banner, once it is printed. */
async function bannerPort(bot: BotProcess): Promise<number> {
  const failed = () =>
    new Error(`the sandbox printed no banner:\n${bot.stdout()}\n${bot.stderr()}`);
  return waitFor(
    () => {
      const match = BANNER.exec(bot.stdout());
      if (match) return Number(match[1]);
      if (bot.child.exitCode !== null || bot.child.signalCode !== null) throw failed();
      return undefined;
    },
    "the sandbox's banner",
    { timeoutMs: 20_000, intervalMs: 50, detail: () => failed().message },
  );
}

/** Waits for /healthz to answer 200; returns that answer. */
async function healthy(port: number): Promise<{ status: number; body: unknown }> {
  let last: unknown = "no answer yet";
  return waitFor(
    async () => {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/healthz`);
        const answer = { status: response.status, body: await response.json() };
        last = answer;
        return response.status === 200 ? answer : undefined;
      } catch (error) {
        last = error;
        return undefined;
      }
    },
    "/healthz to answer 200",
    {
      timeoutMs: 10_000,
      intervalMs: 100,
      detail: () => (last instanceof Error ? last.message : JSON.stringify(last)),
    },
  );
}

describe("VMBOT_MODE auto with no Slack credential", () => {
  it(
    "starts the sandbox, prints its address, answers /healthz, and exits 0 on SIGTERM",
    async () => {
      const dir = freshDir();
      const bot = start({ PORT: "0" }, dir);
      const port = await bannerPort(bot);
      expect(port).toBeGreaterThan(0);

      const health = await healthy(port);
      expect(health).toEqual({
        status: 200,
        body: { status: "ok", database: { engine: "sqlite", reachable: true } },
      });
      expect(existsSync(join(dir, "data", "sandbox.sqlite"))).toBe(true);
      // The bot's own store is not created by the sandbox.
      expect(existsSync(join(dir, "data", "vmbot.sqlite"))).toBe(false);

      bot.child.kill("SIGTERM");
      expect(await bot.exited).toBe(0);
    },
    TIMEOUT,
  );

  it(
    "leaves the bot's own store untouched and empties a stale sandbox store",
    async () => {
      const dir = freshDir();
      mkdirSync(join(dir, "data"));
      const botStore = join(dir, "data", "vmbot.sqlite");
      const ownBytes = Buffer.from("not touched by the sandbox \u0000\u0001\u0002 vmbot store");
      writeFileSync(botStore, ownBytes);
      const sandboxStore = join(dir, "data", "sandbox.sqlite");
      const junk = Buffer.from("junk: this is not an SQLite database at all \u00ff\u00fe");
      writeFileSync(sandboxStore, junk);
      writeFileSync(`${sandboxStore}-wal`, junk);

      const bot = start({ PORT: "0" }, dir);
      const port = await bannerPort(bot);
      expect(await healthy(port)).toEqual({
        status: 200,
        body: { status: "ok", database: { engine: "sqlite", reachable: true } },
      });

      expect(readFileSync(botStore).equals(ownBytes)).toBe(true);
      expect(existsSync(sandboxStore)).toBe(true);
      // Replaced by a fresh SQLite database, not opened as it was.
      expect(readFileSync(sandboxStore).subarray(0, 16).toString("latin1")).toBe(
        "SQLite format 3\u0000",
      );

      bot.child.kill("SIGTERM");
      expect(await bot.exited).toBe(0);
      expect(readFileSync(botStore).equals(ownBytes)).toBe(true);
    },
    TIMEOUT,
  );
});

describe("a mode that cannot start", () => {
  it(
    "VMBOT_MODE=slack without credentials exits 1 naming them, and starts no sandbox",
    async () => {
      const dir = freshDir();
      const bot = start({ VMBOT_MODE: "slack", PORT: "0" }, dir);
      expect(await bot.exited).toBe(1);
      const stderr = bot.stderr();
      expect(stderr).toContain("SLACK_BOT_TOKEN");
      expect(stderr).toContain("SLACK_SIGNING_SECRET");
      expect(stderr.toLowerCase()).not.toContain("sandbox");
      expect(bot.stdout()).not.toMatch(BANNER);
      expect(existsSync(join(dir, "data", "sandbox.sqlite"))).toBe(false);
    },
    TIMEOUT,
  );

  it(
    "an unknown VMBOT_MODE exits 1 naming VMBOT_MODE",
    async () => {
      const dir = freshDir();
      const bot = start({ VMBOT_MODE: "bogus", PORT: "0" }, dir);
      expect(await bot.exited).toBe(1);
      expect(bot.stderr()).toContain("VMBOT_MODE");
      expect(bot.stderr()).toContain("bogus");
      expect(bot.stdout()).not.toMatch(BANNER);
    },
    TIMEOUT,
  );

  it(
    "auto with only SLACK_BOT_TOKEN set runs for Slack and exits 1 naming SLACK_SIGNING_SECRET",
    async () => {
      const dir = freshDir();
      const bot = start({ SLACK_BOT_TOKEN: TEST_SECRETS.botToken, PORT: "0" }, dir);
      expect(await bot.exited).toBe(1);
      const stderr = bot.stderr();
      expect(stderr).toContain("SLACK_SIGNING_SECRET");
      // The token given is accepted: only what is still missing is named.
      expect(stderr).not.toContain("SLACK_BOT_TOKEN");
      expect(stderr).not.toContain(TEST_SECRETS.botToken);
      expect(stderr.toLowerCase()).not.toContain("sandbox");
      expect(bot.stdout()).not.toMatch(BANNER);
      expect(existsSync(join(dir, "data", "sandbox.sqlite"))).toBe(false);
    },
    TIMEOUT,
  );
});

describe("the bot's own entry, without the sandbox", () => {
  it.each([
    ["no Slack credential", { PORT: "0" }],
    ["VMBOT_MODE=sandbox", { VMBOT_MODE: "sandbox", PORT: "0" }],
  ])(
    "with %s exits 1, saying how to configure Slack or where the sandbox is, and starts nothing",
    async (_case, env: Record<string, string>) => {
      const dir = freshDir();
      const bot = start(env, dir, "bot");
      expect(await bot.exited).toBe(1);
      const stderr = bot.stderr();
      expect(stderr).toContain("vmbot cannot start");
      expect(stderr).toContain("this build has no sandbox");
      expect(stderr).toContain("SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET");
      expect(stderr).toContain("run `npm start` in a clone of the repository");
      expect(bot.stdout()).not.toMatch(BANNER);
      expect(existsSync(join(dir, "data"))).toBe(false);
    },
    TIMEOUT,
  );
});
