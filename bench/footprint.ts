import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PLAN_APPROVE } from "../src/ids.js";
import { mb, ms, plural, setting, table, type Section } from "./report.js";
import { median } from "./stats.js";
import {
  benchEnv,
  botNodeOptions,
  openCreateForm,
  signerFor,
  sleep,
  startGitlab,
  startSlack,
  submitForm,
  until,
} from "./support.js";

export interface FootprintResult {
  rounds: number;
  /** Milliseconds from spawning the process to its first 200 (medians over the rounds). */
  baselineStartMs: number;
  vmbotStartMs: number;
  /** Resident memory in MB (medians over the rounds). */
  baselineIdleMb: number;
  vmbotIdleMb: number;
  vmbotBusyMb: number;
  /** The highest resident memory vmbot reached in any round (`VmHWM`), in MB. */
  vmbotPeakMb: number;
  busyRequests: number;
}

const ROOT = resolve(import.meta.dirname, "..");
const MAIN = join(ROOT, "dist/main.js");
/** How long a process is left alone after it answers before its memory is read. */
const SETTLE_MS = 2_000;

/** The baseline: Node's own HTTP server, answering 200 to everything, and nothing else. */
const BARE_SERVER = `require("node:http").createServer((req, res) => res.end("ok")).listen(Number(process.env.PORT));`;

/** `npm run build`: the bot's own build, what the container image runs. */
export function build(): void {
  const built = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
  if (built.status !== 0) {
    throw new Error(`npm run build failed:\n${built.stdout}${built.stderr}`.trim());
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  await new Promise((done) => server.close(done));
  if (address === null || typeof address === "string") throw new Error("no free port");
  return address.port;
}

/** A memory figure of a process from `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in MB. */
function memoryMb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1];
  if (kb === undefined) throw new Error(`no ${field} for process ${pid}`);
  return Number(kb) / 1024;
}

interface Started {
  child: ChildProcess;
  pid: number;
  /** Milliseconds from spawn to the first 200 from `url`. */
  startMs: number;
  output(): string;
}

/** Spawns `args` and asks `url` every 5 ms until it answers 200. */
async function startProcess(
  args: string[],
  options: { cwd: string; env: Record<string, string> },
  url: string,
): Promise<Started> {
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? "", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the process exited before it answered:\n${output}`);
    if (performance.now() - started > 30_000) {
      child.kill("SIGKILL");
      throw new Error(`no answer from ${url} in 30 s:\n${output}`);
    }
    const status = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) break;
    await sleep(5);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error("the process has no pid");
  return { child, pid, startMs: performance.now() - started, output: () => output };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

async function baselineRound() {
  const port = await freePort();
  const server = await startProcess(
    ["-e", BARE_SERVER],
    { cwd: tmpdir(), env: { PORT: String(port) } },
    `http://127.0.0.1:${port}/`,
  );
  try {
    await sleep(SETTLE_MS);
    return { startMs: server.startMs, idleMb: memoryMb(server.pid, "VmRSS") };
  } finally {
    await stop(server.child);
  }
}

/**
 * `node dist/main.js` on the fakes: the time until `/healthz` answers 200, its memory once idle,
 * then its memory with `busy` requests in flight, each with its plan posted and awaiting approval.
 */
async function vmbotRound(busy: number) {
  const slack = await startSlack();
  const gitlab = await startGitlab();
  const dir = mkdtempSync(join(tmpdir(), "vmbot-bench-"));
  const port = await freePort();
  try {
    const env = benchEnv({ slack, gitlab }, join(dir, "vmbot.sqlite"), { PORT: String(port) });
    const url = `http://127.0.0.1:${port}`;
    const bot = await startProcess(
      [...botNodeOptions(), MAIN],
      { cwd: dir, env },
      `${url}/healthz`,
    );
    try {
      await sleep(SETTLE_MS);
      const idleMb = memoryMb(bot.pid, "VmRSS");

      const signer = signerFor(slack, url);
      const form = await openCreateForm(slack, signer);
      for (let i = 0; i < busy; i += 1) await submitForm(signer, form, `vm-${i}`);
      await until(() => gitlab.pipelines.length === busy, "the pipelines", {
        timeoutMs: 60_000,
        everyMs: 20,
      });
      for (const pipeline of gitlab.pipelines) {
        for (
          let step = 0;
          step < 30 && gitlab.job(pipeline.id, "tf:plan").status !== "success";
          step += 1
        ) {
          gitlab.advance(pipeline.id);
        }
      }
      const plans = () =>
        slack
          .callsTo("chat.update")
          .filter((call) => JSON.stringify(call.args.blocks).includes(PLAN_APPROVE)).length;
      await until(() => plans() >= busy, "every plan to be posted", {
        timeoutMs: 120_000,
        everyMs: 100,
      });
      await sleep(SETTLE_MS);
      return {
        startMs: bot.startMs,
        idleMb,
        busyMb: memoryMb(bot.pid, "VmRSS"),
        peakMb: memoryMb(bot.pid, "VmHWM"),
      };
    } finally {
      await stop(bot.child);
    }
  } finally {
    await Promise.all([slack.close(), gitlab.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Builds, then starts the bot and the bare server `rounds` times each, alternating. */
export async function footprint(rounds: number, busy: number): Promise<FootprintResult> {
  build();
  const baseline: Awaited<ReturnType<typeof baselineRound>>[] = [];
  const vmbot: Awaited<ReturnType<typeof vmbotRound>>[] = [];
  for (let round = 0; round < rounds; round += 1) {
    if (round % 2 === 0) {
      baseline.push(await baselineRound());
      vmbot.push(await vmbotRound(busy));
    } else {
      vmbot.push(await vmbotRound(busy));
      baseline.push(await baselineRound());
    }
  }
  return {
    rounds,
    baselineStartMs: median(baseline.map((r) => r.startMs)),
    vmbotStartMs: median(vmbot.map((r) => r.startMs)),
    baselineIdleMb: median(baseline.map((r) => r.idleMb)),
    vmbotIdleMb: median(vmbot.map((r) => r.idleMb)),
    vmbotBusyMb: median(vmbot.map((r) => r.busyMb)),
    vmbotPeakMb: Math.max(...vmbot.map((r) => r.peakMb)),
    busyRequests: busy,
  };
}

/** Item 5 of the report: start-up time and resident memory of the built bot. */
export async function footprintSection(): Promise<Section> {
  const rounds = setting("BENCH_FOOTPRINT_ROUNDS", 3);
  const r = await footprint(rounds, 100);
  const command = ["node", ...botNodeOptions(), "dist/main.js"].join(" ");
  const body = `\`npm run build\` first (the bot's own build, as the container image has it; not counted), then
\`${command}\` (as the image starts it) is started with an environment pointing at the fakes (HTTP mode, the default
POLL_INTERVAL_MS, info logs to its stdout) and asked for \`/healthz\` every 5 ms from the moment
it is spawned until it answers 200; the baseline is \`node -e\` with Node's bare HTTP server,
started and asked the same way. Resident memory is \`VmRSS\` from \`/proc/<pid>/status\`,
${SETTLE_MS / 1000} s after the process answered, and again with ${r.busyRequests} requests asked
for through Slack whose plans have all been posted (so they await approval). Medians of
${plural(r.rounds, "round")}, the two alternating.

Targets: healthy within 2 s of start; idle resident memory under 120 MB.

${table(
  ["measure", "baseline: `node -e` HTTP server", `vmbot: \`${command}\``, "target"],
  [
    ["start → first 200 (vmbot: `/healthz`)", ms(r.baselineStartMs), ms(r.vmbotStartMs), "< 2 s"],
    ["resident memory, idle", mb(r.baselineIdleMb), mb(r.vmbotIdleMb), "< 120 MB"],
    [
      `resident memory, ${r.busyRequests} requests in flight`,
      "–",
      `${mb(r.vmbotBusyMb)} (peak ${mb(r.vmbotPeakMb)})`,
      "–",
    ],
  ],
)}`;
  return {
    body,
    verdicts: [
      {
        target: "healthy within 2 s of start",
        figure: `${ms(r.vmbotStartMs)} (bare Node server: ${ms(r.baselineStartMs)})`,
        met: r.vmbotStartMs < 2_000,
      },
      {
        target: "idle resident memory under 120 MB",
        figure: `${mb(r.vmbotIdleMb)} (bare Node server: ${mb(r.baselineIdleMb)})`,
        met: r.vmbotIdleMb < 120,
      },
    ],
  };
}
