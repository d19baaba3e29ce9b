/**
 * The bot as `npm start` runs it, in its own process, so that a request that made it throw
 * would be a dead process here, not an error a test runner catches: everything hostile from
 * the HTTP surface tests is sent to it, and it must still be running and healthy after each.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createSlackSigner } from "../../sandbox/simulators/slack/signer.js";
import { startBotProcess } from "../support/bot-process.js";
import { CHANNEL, REQUESTER } from "../support/harness.js";
import type { BotProcess } from "../support/process.js";
import { MALFORMED_REQUESTS, rawRequest } from "../support/raw-http.js";
import { TEST_SECRETS } from "../support/secrets.js";

const TIMEOUT = 60_000;
const FORM = "application/x-www-form-urlencoded";
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startBot() {
  const { slack, bot, port, stop } = await startBotProcess({
    env: { GITLAB_WEBHOOK_SECRET: "webhook-secret-for-tests" },
  });
  cleanups.push(stop);
  const signer = createSlackSigner({
    eventsUrl: `http://127.0.0.1:${port}/slack/events`,
    signingSecret: TEST_SECRETS.signingSecret,
    slack,
  });
  return { slack, bot, port, signer };
}

async function expectAliveAndHealthy(bot: BotProcess, port: number, after: string) {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`).catch((error: unknown) => {
    throw new Error(`/healthz did not answer after ${after}: ${String(error)}\n${bot.stderr()}`);
  });
  expect({ after, status: response.status }).toEqual({ after, status: 200 });
  expect(bot.child.exitCode).toBeNull();
  expect(bot.child.signalCode).toBeNull();
}

describe("the bot in its own process", () => {
  it(
    "survives every method, malformed targets, unreadable and oversized bodies, and still works",
    async () => {
      const { slack, bot, port, signer } = await startBot();
      for (const path of ["/slack/events", "/gitlab/webhook", "/healthz", "/nowhere"]) {
        for (const method of ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"]) {
          const response = await fetch(`http://127.0.0.1:${port}${path}`, { method });
          await response.arrayBuffer();
          expect(response.status).toBeLessThan(500);
          await expectAliveAndHealthy(bot, port, `${method} ${path}`);
        }
      }
      for (const text of MALFORMED_REQUESTS) {
        expect((await rawRequest(port, text)).status).toBe(400);
        await expectAliveAndHealthy(bot, port, JSON.stringify(text));
      }
      for (const [body, contentType] of [
        ["payload=null", FORM],
        ["payload=%5B%5D", FORM],
        ["payload=%22text%22", FORM],
        ["null", "application/json"],
        ["[1]", "application/json"],
        ["payload=null", "text/plain"],
      ] as const) {
        const delivery = await signer.send(body, { contentType });
        expect([400, 415]).toContain(delivery.status);
        await expectAliveAndHealthy(bot, port, `signed ${body} as ${contentType}`);
      }
      const large = await signer.send(`payload=${"a".repeat(1024 * 1024 + 1)}`, {
        contentType: FORM,
      });
      expect(large.status).toBe(413);
      await expectAliveAndHealthy(bot, port, "a body over 1 MB");

      await signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
      await slack.waitFor("views.open", () => true);

      bot.child.kill("SIGTERM");
      expect(await bot.exited).toBe(0);
    },
    TIMEOUT,
  );
});
