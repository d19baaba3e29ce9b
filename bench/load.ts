import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { DEFAULT_LIMITS } from "../src/server.js";
import { stateValuesFor, type SlackSigner } from "../sandbox/simulators/slack/signer.js";
import type { FakeSlack } from "../sandbox/simulators/slack/index.js";
import { CHANNEL, REQUESTER } from "../test/support/harness.js";
import { runLoad, type LoadResult } from "../test/support/load.js";
import { mb, ms, plural, ratio, setting, table, type Section } from "./report.js";
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

/** The bot's peak resident memory during the burst must stay under this. */
export const LOAD_MEMORY_TARGET_MB = 250;
/** …and grow by less than this under 60 bodies of 4 MB sent at once. */
const HOSTILE_GROWTH_TARGET_MB = 80;

interface VariantResult extends LoadResult {
  name: string;
  /** The bot's resident memory before the burst and its peak (`VmHWM`), in MB. */
  idleMb: number;
  peakMb: number;
}

function memoryMb(pid: number, field: "VmRSS" | "VmHWM"): number {
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
      throw new Error(`the bot did not start:\n${output()}`);
    }
    await sleep(20);
  }
}

/** Commands and submissions before the burst; not counted. */
const WARM_UP = 20;

async function warmUp(
  slack: FakeSlack,
  signer: SlackSigner,
  recorded: () => number,
): Promise<void> {
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
  await until(() => recorded() === WARM_UP, "the warm-up's pipelines", { everyMs: 20 });
}

/** A bot in its own process on the fakes, with `bound` connections per client. */
async function spawnBot(
  fakes: { slack: FakeSlack; gitlab: { url: string } },
  db: string,
  bound: number | "none",
) {
  const args = [...botNodeOptions(), "--import", TSX_LOADER, "bench/load-bot.ts"];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      ...benchEnv(fakes, db, { LOG_LEVEL: "warn", POLL_INTERVAL_MS: "3600000" }),
      BENCH_MAX_CONNECTIONS_PER_CLIENT: String(bound),
    },
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

/** One burst against a fresh bot in its own process, with `bound` connections per client. */
async function variant(name: string, bound: number | "none", count: number) {
  const slack = await startSlack();
  const gitlab = await startGitlab();
  const dir = mkdtempSync(join(tmpdir(), "vmbot-bench-load-"));
  const db = join(dir, "vmbot.sqlite");
  try {
    const bot = await spawnBot({ slack, gitlab }, db, bound);
    try {
      const idleMb = memoryMb(bot.pid, "VmRSS");
      const store = new Database(db, { readonly: true, fileMustExist: true });
      const recorded = () =>
        (
          store
            .prepare("SELECT count(*) AS n FROM requests WHERE pipeline_id IS NOT NULL")
            .get() as { n: number }
        ).n;
      const signer = signerFor(slack, `http://127.0.0.1:${bot.port}`);
      // A bot that has served a few commands, as one in use has: the first requests load and
      // compile code that the burst would otherwise wait for.
      await warmUp(slack, signer, recorded);
      const result = await runLoad(
        { slack, gitlab, signer, requestsWithPipeline: recorded },
        count,
      );
      const peakMb = memoryMb(bot.pid, "VmHWM");
      store.close();
      return { name, ...result, idleMb, peakMb };
    } finally {
      await bot.stop();
    }
  } finally {
    await Promise.all([slack.close(), gitlab.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Hostile bodies sent at once, each 4 MB. */
const HOSTILE_COUNT = 60;
const HOSTILE_BYTES = 4 * 1024 * 1024;

/**
 * `HOSTILE_COUNT` bodies of 4 MB posted at once to a fresh bot's `/slack/events`, without a
 * signature or with a made-up one; returns the growth of the bot's resident memory at its peak.
 */
async function hostileBodies(signed: boolean): Promise<number> {
  const slack = await startSlack();
  const gitlab = await startGitlab();
  const dir = mkdtempSync(join(tmpdir(), "vmbot-bench-hostile-"));
  try {
    const bot = await spawnBot(
      { slack, gitlab },
      join(dir, "vmbot.sqlite"),
      DEFAULT_LIMITS.maxConnectionsPerClient,
    );
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

export async function loadSection(): Promise<Section> {
  const count = setting("BENCH_LOAD_COUNT", 200);
  const bound = DEFAULT_LIMITS.maxConnectionsPerClient;
  const machineLoad = loadavg()[0] ?? Number.NaN;
  // The baseline first, then the bound; a fresh bot and fresh simulators for each.
  const baseline = await variant("vmbot without a per-client bound (baseline)", "none", count);
  const bounded = await variant(`vmbot, at most ${bound} connections per client`, bound, count);
  const results: VariantResult[] = [baseline, bounded];
  const unsignedGrowth = await hostileBodies(false);
  const signedGrowth = await hostileBodies(true);
  const lost = (r: VariantResult) => r.submissionsAcked - r.requestsWithPipeline;
  const rows = results.map((r) => [
    r.name,
    `${r.commandsAcked} of ${r.commands}`,
    `${r.formsOpened} (${r.formsRefused.length} refused)`,
    `${r.submissionsAcked} of ${r.submissions}`,
    String(r.pipelines),
    String(lost(r)),
    ms(r.elapsedMs),
    ratio(r.elapsedMs, baseline.elapsedMs),
    `${mb(r.idleMb)} → ${mb(r.peakMb)}`,
  ]);
  const body = `${plural(count, "signed `/vm create` command")} are posted to the bot at once, each with its own
trigger_id, from one client address (as Slack's traffic arrives through one load balancer); then
${plural(count, "form")} are submitted, all at once (those the bot opened, and for any that Slack refused to open, a copy of the first, which is a form of its own to the bot). The bot runs in a process of its own, as in
production, configured like \`npm start\` (\`bench/load-bot.ts\`), against the simulated Slack and
GitLab in the benchmark's process; it is done when every request in its store has recorded its
pipeline. The baseline is the same bot with no bound on connections per client; the other has
the bound it ships with (${bound}). Memory is the bot's resident memory before the burst
(\`VmRSS\`) and its peak (\`VmHWM\`, from \`/proc/<pid>/status\`). A form is refused by Slack when
\`views.open\` comes after its trigger_id's three seconds. \`BENCH_LOAD_COUNT\` sets the burst.
The machine's load average when the burst began: ${machineLoad.toFixed(1)} on ${plural(cpus().length, "CPU")}. On a machine shared that much, how many forms open varies from run to run (from under a quarter to all of them at a load average of 8 to 10 on 2 CPUs): the three seconds include the wait for a core, for the bot and for the simulated Slack alike.

${table(
  [
    "burst",
    "commands acked",
    "forms opened",
    "submissions acked",
    "pipelines",
    "lost",
    "time",
    "÷ baseline's",
    "memory (idle → peak)",
  ],
  rows,
)}

Bodies too large, sent at once: ${HOSTILE_COUNT} bodies of ${mb(HOSTILE_BYTES / (1024 * 1024))} each
are posted to a fresh bot's \`/slack/events\` (with the bound), and the figure is how much its peak
resident memory grew. An unsigned request is refused before its body is read; one with a
signature header is read up to 1 MB, then refused with 413 and its connection closed.

${table(
  ["bodies sent at once", "peak memory growth"],
  [
    [`${HOSTILE_COUNT} × ${mb(HOSTILE_BYTES / (1024 * 1024))}, unsigned`, mb(unsignedGrowth)],
    [
      `${HOSTILE_COUNT} × ${mb(HOSTILE_BYTES / (1024 * 1024))}, with a made-up signature`,
      mb(signedGrowth),
    ],
  ],
)}`;
  const complete = (r: VariantResult) =>
    r.commandsAcked === count &&
    r.formsOpened === count &&
    r.submissionsAcked === count &&
    r.pipelines === count &&
    lost(r) === 0;
  return {
    body,
    verdicts: [
      {
        target: `${count} concurrent \`/vm create\` and submissions with the per-client bound: all acked, all forms opened, ${count} pipelines, 0 lost`,
        figure: `${bounded.commandsAcked} acked, ${bounded.formsOpened} forms, ${bounded.pipelines} pipelines, ${lost(bounded)} lost (without the bound: ${baseline.commandsAcked}, ${baseline.formsOpened}, ${baseline.pipelines}, ${lost(baseline)})`,
        met: complete(bounded),
      },
      {
        target: "the per-client bound costs the burst no more than 1.5× its time",
        figure: `${ms(bounded.elapsedMs)} against ${ms(baseline.elapsedMs)}: ${ratio(bounded.elapsedMs, baseline.elapsedMs)}`,
        met: bounded.elapsedMs <= 1.5 * baseline.elapsedMs,
      },
      {
        target: `${HOSTILE_COUNT} bodies of 4 MB at once grow the bot's memory by less than ${HOSTILE_GROWTH_TARGET_MB} MB`,
        figure: `unsigned: ${mb(unsignedGrowth)}, with a made-up signature: ${mb(signedGrowth)}`,
        met: Math.max(unsignedGrowth, signedGrowth) < HOSTILE_GROWTH_TARGET_MB,
      },
      {
        target: `the bot's peak memory during the burst under ${LOAD_MEMORY_TARGET_MB} MB`,
        figure: `${mb(bounded.peakMb)} (idle ${mb(bounded.idleMb)})`,
        met: bounded.peakMb < LOAD_MEMORY_TARGET_MB,
      },
    ],
  };
}
