import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_LIMITS } from "../src/server.js";
import { memoryMb, spawnServer } from "./load-run.js";
import { benchEnv, startGitlab, startSlack } from "./support.js";

/** Hostile bodies sent at once, each 4 MB. */
export const HOSTILE_COUNT = 60;
export const HOSTILE_BYTES = 4 * 1024 * 1024;

/**
 * `HOSTILE_COUNT` bodies of 4 MB posted at once to a fresh bot's `/slack/events`, without a
 * signature or with a made-up one; returns the growth of the bot's resident memory at its peak.
 */
export async function hostileBodies(signed: boolean): Promise<number> {
  const slack = await startSlack();
  const gitlab = await startGitlab();
  const dir = mkdtempSync(join(tmpdir(), "vmbot-bench-hostile-"));
  try {
    const bot = await spawnServer("bench/load-bot.ts", {
      ...benchEnv({ slack, gitlab }, join(dir, "vmbot.sqlite"), {
        LOG_LEVEL: "warn",
        POLL_INTERVAL_MS: "3600000",
      }),
      BENCH_MAX_CONNECTIONS_PER_CLIENT: String(DEFAULT_LIMITS.maxConnectionsPerClient),
    });
    try {
      const before = memoryMb(bot.pid, "VmHWM");
      const body = Buffer.alloc(HOSTILE_BYTES, "a");
      const headers: Record<string, string> = {
        "content-type": "application/x-www-form-urlencoded",
        ...(signed
          ? {
              "x-slack-signature": `v0=${"0".repeat(64)}`,
              "x-slack-request-timestamp": String(Math.floor(Date.now() / 1000)),
            }
          : {}),
      };
      await Promise.all(
        Array.from({ length: HOSTILE_COUNT }, () =>
          fetch(`http://127.0.0.1:${bot.port}/slack/events`, {
            method: "POST",
            headers,
            body,
          }).then(
            (response) => response.arrayBuffer(),
            () => undefined,
          ),
        ),
      );
      return memoryMb(bot.pid, "VmHWM") - before;
    } finally {
      await bot.stop();
    }
  } finally {
    await Promise.all([slack.close(), gitlab.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}
