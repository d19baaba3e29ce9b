import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import type { FakeGitlab } from "../sandbox/simulators/gitlab/index.js";
import { stateValuesFor, type SlackSigner } from "../sandbox/simulators/slack/signer.js";
import type { FakeSlack } from "../sandbox/simulators/slack/index.js";
import { CHANNEL, REQUESTER } from "../test/support/harness.js";
import { runLoad, type LoadResult } from "../test/support/load.js";
import {
  benchEnv,
  botNodeOptions,
  signerFor,
  sleep,
  startGitlab,
  startSlack,
  until,
} from "./support.js";

const ROOT = resolve(import.meta.dirname, "..");
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;

export function memoryMb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1];
  if (kb === undefined) throw new Error(`no ${field} for process ${pid}`);
  return Number(kb) / 1024;
}

async function portOf(child: ChildProcess, output: () => string): Promise<number> {
  const started = Date.now();
  for (;;) {
    const match = /^port (\d+)$/m.exec(output());
    if (match) return Number(match[1]);
    if (child.exitCode !== null || Date.now() - started > 30_000) {
      throw new Error(`the server did not start:\n${output()}`);
    }
    await sleep(20);
  }
}

export interface Spawned {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/**
 * A server in a process of its own (`script`, run with tsx and `BENCH_BOT_NODE_OPTIONS`, which
 * prints `port <n>` once it listens); stopped with SIGTERM.
 */
export async function spawnServer(script: string, env: Record<string, string>): Promise<Spawned> {
  const args = [...botNodeOptions(), "--import", TSX_LOADER, script];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const stop = async () => {
    const exited = new Promise((done) => child.once("exit", done));
    if (child.exitCode === null) child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    const port = await portOf(child, () => output);
    return { port, pid: child.pid ?? 0, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** What answers the burst: vmbot (with a per-client bound, or none) or the bare Bolt app. */
export type Contender = { app: "vmbot"; bound: number | "none" } | { app: "bare" };

/** Commands and submissions before the burst; not counted. */
const WARM_UP = 20;

/**
 * A few commands and submissions one at a time, as a process in use has served: the first
 * requests load and compile code that the burst would otherwise wait for.
 */
async function warmUp(slack: FakeSlack, signer: SlackSigner, done: () => number): Promise<void> {
  for (let i = 0; i < WARM_UP; i += 1) {
    const command = await signer.slashCommand({
      text: `create warm-${i}`,
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    await slack.waitFor("views.open", (c) => c.args.trigger_id === command.triggerId && c.ok);
    const form = slack.views.at(-1);
    if (form === undefined) throw new Error("the warm-up opened no form");
    await signer.viewSubmission({
      view: form,
      // An address of its own: vmbot refuses one a request on its way already holds.
      values: stateValuesFor(form, { vm_name: `warm-${i}`, vm_ip: `192.168.250.${10 + i}/16` }),
      userId: REQUESTER,
    });
  }
  await until(() => done() === WARM_UP, "the warm-up's pipelines", { everyMs: 20 });
}

export interface BurstResult extends LoadResult {
  contender: Contender;
  /** Resident memory before the burst and its peak (`VmHWM`), in MB. */
  idleMb: number;
  peakMb: number;
}

/** Requests with their pipeline recorded in vmbot's store (read beside the running bot). */
function storeCounter(db: string) {
  let store: Database.Database | undefined;
  return {
    count: () => {
      store ??= new Database(db, { readonly: true, fileMustExist: true });
      const row = store
        .prepare("SELECT count(*) AS n FROM requests WHERE pipeline_id IS NOT NULL")
        .get() as { n: number };
      return row.n;
    },
    close: () => store?.close(),
  };
}

/**
 * One burst of `count` commands and `count` submissions against a fresh contender in its own
 * process, on fresh simulators; done when every acknowledged submission has its pipeline (for
 * vmbot: recorded in its store).
 */
export async function burst(contender: Contender, count: number): Promise<BurstResult> {
  const slack = await startSlack();
  const gitlab: FakeGitlab = await startGitlab();
  const dir = mkdtempSync(join(tmpdir(), "vmbot-bench-load-"));
  const db = join(dir, "vmbot.sqlite");
  const env = {
    ...benchEnv({ slack, gitlab }, db, { LOG_LEVEL: "warn", POLL_INTERVAL_MS: "3600000" }),
    ...(contender.app === "vmbot"
      ? { BENCH_MAX_CONNECTIONS_PER_CLIENT: String(contender.bound) }
      : {}),
  };
  const counter = storeCounter(db);
  try {
    const server = await spawnServer(
      contender.app === "vmbot" ? "bench/load-bot.ts" : "bench/load-bare.ts",
      env,
    );
    try {
      const done = contender.app === "vmbot" ? counter.count : () => gitlab.pipelines.length;
      const signer = signerFor(slack, `http://127.0.0.1:${server.port}`);
      await warmUp(slack, signer, done);
      const idleMb = memoryMb(server.pid, "VmRSS");
      const result = await runLoad({ slack, gitlab, signer, requestsWithPipeline: done }, count);
      return { contender, ...result, idleMb, peakMb: memoryMb(server.pid, "VmHWM") };
    } finally {
      await server.stop();
    }
  } finally {
    counter.close();
    await Promise.all([slack.close(), gitlab.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}
