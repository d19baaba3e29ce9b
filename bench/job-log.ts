import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startFakeGitlab, VM_PIPELINE_INPUTS } from "../sandbox/simulators/gitlab/index.js";
import { syntheticPlan } from "../sandbox/simulators/gitlab/traces.js";
import { LOG_PIECE_BYTES } from "../src/gitlab/job-log.js";
import { createRedactor } from "../src/redact.js";
import { PROJECT_PATH } from "../test/support/harness.js";
import { plantedSecretsOutput, TEST_SECRETS } from "../test/support/secrets.js";
import { PROBE_IMPORT, readProbe } from "./bot-probe.js";
import { build } from "./footprint.js";
import { mb, ms, setting, table, type Section } from "./report.js";
import {
  benchEnv,
  botNodeOptions,
  openCreateForm,
  signerFor,
  sleep,
  startSlack,
  submitForm,
  until,
} from "./support.js";

const ROOT = resolve(import.meta.dirname, "..");

/**
 * Asks a URL back to back until SIGTERM, then prints how many times, the slowest answer and the
 * 99th percentile. Its first requests (this process's own start: loading fetch, the first
 * connection) are made before it says it is ready, and are not counted.
 */
const PROBER = `
const url = process.argv[1];
const times = [];
let failed = 0, stop = false;
process.on("SIGTERM", () => { stop = true; });
const ask = async () => {
  const asked = performance.now();
  const ok = await fetch(url).then((r) => r.status === 200, () => false);
  return { ok, ms: performance.now() - asked };
};
(async () => {
  for (let i = 0; i < 20; i++) await ask();
  process.stdout.write("ready\\n");
  while (!stop) {
    const { ok, ms } = await ask();
    if (!ok) failed += 1;
    times.push(ms);
  }
  times.sort((x, y) => x - y);
  const maxMs = times.at(-1) ?? 0;
  const p99Ms = times[Math.min(times.length - 1, Math.floor(times.length * 0.99))] ?? 0;
  process.stdout.write(JSON.stringify({ checks: times.length, maxMs, p99Ms, failed }));
})();
`;
const MB = 1024 * 1024;
/** How long the bot is left idle once its pipeline is created, before the plan job finishes. */
const IDLE_MS = 3_000;

/** A plan job's output of about `bytes`: a provider's debug chatter, then the plan. */
function longPlanOutput(bytes: number): string {
  const line =
    "2026-01-05T09:00:01.000Z [DEBUG] provider.terraform-provider-proxmox: reading node pve\n";
  return `${line.repeat(Math.ceil(bytes / line.length))}${syntheticPlan({ name: "web-01" })}`;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  await new Promise((done) => server.close(done));
  if (address === null || typeof address === "string") throw new Error("no free port");
  return address.port;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? "0") / 1024;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

export interface JobLogResult {
  logMb: number;
  capMb: number;
  /** Resident memory of the bot before the plan is read, and the most above it while it is. */
  idleMb: number;
  growthMb: number;
  /** V8's young generation: how much it grew meanwhile. */
  youngGrowthMb: number;
  /** Memory outside V8's heap (buffers) at its highest meanwhile. */
  externalPeakMb: number;
  /** `/healthz` asked back to back while the plan is read: how many, the slowest, the p99. */
  healthChecks: number;
  healthMaxMs: number;
  healthP99Ms: number;
  /** The bot's own event loop meanwhile (perf_hooks' monitorEventLoopDelay): longest, p99. */
  loopMaxMs: number;
  loopP99Ms: number;
  /** From the plan job's success until the plan message had its buttons. */
  reviewMs: number;
}

/**
 * The bot as its own process (`node <nodeOptions> dist/main.js`, by default with the container
 * image's options, so its memory is its own), on the fake Slack and a fake GitLab whose plan job
 * prints `logMb` megabytes; one request is planned while `/healthz` is asked back to back and the
 * bot's resident memory is read every 10 ms.
 */
export async function jobLogRound(
  logMb: number,
  capBytes?: number,
  nodeOptions: readonly string[] = botNodeOptions(),
): Promise<JobLogResult> {
  const slack = await startSlack();
  const gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [
      {
        id: 42,
        path: PROJECT_PATH,
        inputs: VM_PIPELINE_INPUTS,
        traces: { "tf:plan": longPlanOutput(logMb * MB) },
      },
    ],
  });
  const dir = mkdtempSync(join(tmpdir(), "vmbot-bench-log-"));
  const port = await freePort();
  const probeFile = join(dir, "probe.json");
  const url = `http://127.0.0.1:${port}`;
  const env = benchEnv({ slack, gitlab }, join(dir, "vmbot.sqlite"), {
    PORT: String(port),
    POLL_INTERVAL_MS: "500",
    LOG_LEVEL: "warn",
    VMBOT_MODE: "slack",
    ...(capBytes === undefined ? {} : { GITLAB_LOG_MAX_BYTES: String(capBytes) }),
  });
  const child = spawn(
    process.execPath,
    [...nodeOptions, PROBE_IMPORT, join(ROOT, "dist/main.js")],
    {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", ...env, BENCH_PROBE_FILE: probeFile },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  try {
    const healthy = async () =>
      fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
        (response) => response.status === 200,
        () => false,
      );
    const started = performance.now();
    while (!(await healthy())) {
      if (child.exitCode !== null || performance.now() - started > 30_000)
        throw new Error(`the bot did not start:\n${output}`);
      await sleep(20);
    }
    const signer = signerFor(slack, url);
    await submitForm(signer, await openCreateForm(slack, signer), "web-01");
    await until(() => gitlab.pipelines.length === 1, "the pipeline", { everyMs: 20 });
    const pipelineId = gitlab.pipelines[0]!.id;
    await sleep(IDLE_MS);
    const pid = child.pid!;
    // From here the bot's probe counts afresh.
    const idle = await readProbe(child, probeFile, 0);
    const idleMb = rssMb(pid);

    let peakMb = idleMb;
    const state = { sampling: true };
    const sampler = (async () => {
      while (state.sampling) {
        peakMb = Math.max(peakMb, rssMb(pid));
        await sleep(10);
      }
    })();
    // `/healthz` is asked from a process of its own: this one serves the 60 MB log, and its own
    // pauses would count against the bot.
    const prober = spawn(process.execPath, ["-e", PROBER, `${url}/healthz`], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let probed = "";
    prober.stdout.on("data", (chunk: Buffer) => (probed += chunk.toString()));
    await until(() => probed.includes("ready"), "the health prober", { everyMs: 10 });
    const reviewed = () =>
      slack
        .callsTo("chat.update")
        .some((call) => JSON.stringify(call.args.blocks).includes("plan_approve"));

    for (let step = 0; step < 30 && gitlab.job(pipelineId, "tf:plan").status !== "success"; step++)
      gitlab.advance(pipelineId);
    const planned = performance.now();
    await until(reviewed, "the plan message", { timeoutMs: 120_000, everyMs: 10 });
    const reviewMs = performance.now() - planned;
    // Whatever the read left behind is counted too, until the bot has been idle a while.
    await sleep(1_000);
    state.sampling = false;
    const exited = new Promise((done) => prober.once("exit", done));
    prober.kill("SIGTERM");
    await Promise.all([sampler, exited]);
    const inside = await readProbe(child, probeFile, 1);
    const health = JSON.parse(probed.slice(probed.indexOf("{"))) as {
      checks: number;
      maxMs: number;
      p99Ms: number;
    };
    return {
      logMb: gitlab.job(pipelineId, "tf:plan").log.length / MB,
      capMb: (capBytes ?? 4 * MB) / MB,
      idleMb,
      growthMb: peakMb - idleMb,
      youngGrowthMb: Math.max(0, inside.newSpacePeakMb - idle.newSpaceNowMb),
      externalPeakMb: inside.externalPeakMb,
      healthChecks: health.checks,
      healthMaxMs: health.maxMs,
      healthP99Ms: health.p99Ms,
      loopMaxMs: inside.loopMaxMs,
      loopP99Ms: inside.loopP99Ms,
      reviewMs,
    };
  } finally {
    await stop(child);
    await Promise.all([slack.close(), gitlab.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The redactor over a plan log of `logMb` megabytes with secrets in it: MB per second. */
export function redactionThroughput(logMb: number): { mb: number; ms: number } {
  const redact = createRedactor([TEST_SECRETS.gitlabToken, TEST_SECRETS.webhookSecret]);
  const piece = `${syntheticPlan({ name: "web-01" })}\n${plantedSecretsOutput()}\n`;
  const text = piece.repeat(Math.ceil((logMb * MB) / piece.length));
  redact(piece);
  const started = performance.now();
  redact(text);
  return { mb: text.length / MB, ms: performance.now() - started };
}

const highest = (rounds: readonly JobLogResult[], key: keyof JobLogResult) =>
  Math.max(...rounds.map((r) => r[key]));

function roundRow(name: string, r: JobLogResult): string[] {
  return [
    name,
    r.logMb < 1 ? `${(r.logMb * 1024).toFixed(0)} KB` : mb(r.logMb),
    mb(r.capMb),
    mb(r.idleMb),
    `${r.growthMb.toFixed(1)} MB`,
    `${r.youngGrowthMb.toFixed(1)} MB`,
    `${r.externalPeakMb.toFixed(1)} MB`,
    String(r.healthChecks),
    `${ms(r.healthMaxMs)} / ${ms(r.healthP99Ms)}`,
    `${ms(r.loopMaxMs)} / ${ms(r.loopP99Ms)}`,
    ms(r.reviewMs),
  ];
}

export async function jobLogSection(): Promise<Section> {
  const logMb = setting("BENCH_LOG_MB", 60);
  const hugeMb = setting("BENCH_HUGE_LOG_MB", 200);
  const rounds = setting("BENCH_JOBLOG_ROUNDS", 3);
  // The bot as the container image runs it: its own build, no TypeScript loader in the process.
  build();
  // The same request with a plan log of a few kilobytes, measured the same way in the same run,
  // alternating with the long log, so that what the long log adds can be told from what any
  // plan (and the machine) costs.
  const baseline: JobLogResult[] = [];
  const capped: JobLogResult[] = [];
  for (let round = 0; round < rounds; round++) {
    baseline.push(await jobLogRound(0.02));
    capped.push(await jobLogRound(logMb));
  }
  const huge = await jobLogRound(hugeMb);
  const whole = await jobLogRound(logMb, 64 * MB);
  // The same long log with Node's own defaults (V8's young generation free to grow to 16 MB
  // semi-spaces) instead of the image's options: what the image's setting is for.
  const defaults = await jobLogRound(logMb, undefined, []);
  const image = ["node", ...botNodeOptions(), "dist/main.js"].join(" ");
  const semi = /--max-semi-space-size=(\d+)/.exec(image)?.[1];
  const imageSemiSpace = semi === undefined ? "Node's default" : `${semi} MB semi-spaces`;
  const small = redactionThroughput(1);
  const large = redactionThroughput(10);
  const cap = capped[0]?.capMb ?? 4;
  const long = [...capped, huge];
  const body = `A plan job prints ${mb(logMb)} (a provider's debug lines, then the plan), or ${mb(hugeMb)}. The bot runs as
its own process, from its own build as the container image runs it (\`npm run build\` first, then
\`${image}\`); while it reads the log, cleans it, reads the plan, writes it redacted to a
file and uploads that, \`/healthz\` is asked back to back from a process of its own (after 20
requests that warm that process up and are not counted) and the bot's resident memory is read
every 10 ms. Growth is the highest reading above the one taken after 3 s idle, before the plan job
finished. Inside the bot, a probe loaded with \`node --import\` for the benchmark only reads
perf_hooks' \`monitorEventLoopDelay\` (how long the event loop was held: the delay any request,
\`/healthz\` included, waits in the bot itself), V8's young generation and the memory held in
buffers. The baseline is the same request with a plan log of a few kilobytes, alternating with the
long log over ${rounds} rounds; the last rows read the whole long log (cap 64 MB) and the long log
with Node's default options instead of the image's. The machine's load average when this ran: ${loadavg()[0]?.toFixed(1) ?? "?"} on ${cpus().length} CPUs.

${table(
  [
    "round",
    "log",
    "cap",
    "memory before",
    "growth",
    "of which young generation",
    "buffers (peak)",
    "`/healthz` asked",
    "`/healthz` slowest / p99",
    "event loop held: longest / p99",
    "plan posted after",
  ],
  [
    ...baseline.map((r, i) => roundRow(`baseline, round ${i + 1}`, r)),
    ...capped.map((r, i) => roundRow(`long log, default cap, round ${i + 1}`, r)),
    roundRow("longer log, default cap", huge),
    roundRow("long log, read whole", whole),
    roundRow("long log, default cap, Node's default semi-spaces", defaults),
  ],
)}

The log streams through once, ${LOG_PIECE_BYTES / 1024} KB at a time with a turn of the event loop
between pieces: each piece is cleaned, fed to the plan parser and written, redacted, to a file on
disk through one reused buffer, which is then sent to Slack from disk through another. No copy of
the log is kept and the read stops at the cap, so what the bot holds does not grow with the log:
the ${mb(logMb)} and ${mb(hugeMb)} rows read the same ${mb(cap)}. The review the request keeps holds
the plan's counts and its first resources, not the plan. What the resident figure shows is what
V8 and Node have not yet given back rather than what the bot holds: V8's young generation, which
grows with what outlives its collections (up to 2 × 16 MB by default) and shrinks again only when
the process idles, grew by up to ${highest(long, "youngGrowthMb").toFixed(1)} MB here (the baseline's
by up to ${highest(baseline, "youngGrowthMb").toFixed(1)} MB: any burst of work grows it); and
buffers the read filled reached ${highest(long, "externalPeakMb").toFixed(1)} MB against the
baseline's ${highest(baseline, "externalPeakMb").toFixed(1)} MB, waiting for a collection (Node's
fetch, which reads the log, copies each piece it receives). The image holds
the young generation to ${imageSemiSpace} (\`${image}\`, every row but the last); with Node's
defaults (last row) the same read grows the bot by ${defaults.growthMb.toFixed(1)} MB.

The redactor runs over every plan file as it is written: over a plan log with one of each planted
secret shape every 80 lines, ${small.mb.toFixed(1)} MB take ${ms(small.ms)} and ${large.mb.toFixed(1)} MB
${ms(large.ms)}, so its time grows in proportion to the text.

Targets: memory growth under 2× the cap, \`/healthz\` under 100 ms throughout. On a machine shared
with other work, a process waits for a core as long as the load makes it, the bot, its probe and
the process asking alike: compare the slowest answer and the longest hold with the baseline's.`;
  return {
    body,
    verdicts: [
      ...[
        { rows: capped, size: `a ${mb(logMb)} plan log`, of: `highest of ${capped.length}` },
        { rows: [huge], size: `a ${mb(hugeMb)} plan log`, of: "one round" },
      ].flatMap(({ rows, size, of }) => {
        const growth = highest(rows, "growthMb");
        const slowest = highest(rows, "healthMaxMs");
        const held = highest(rows, "loopMaxMs");
        const checks = rows.reduce((n, r) => n + r.healthChecks, 0);
        return [
          {
            target: `${size}: memory growth under 2× the cap (${mb(2 * cap)})`,
            figure: `${of}: ${growth.toFixed(1)} MB (baseline's highest ${highest(baseline, "growthMb").toFixed(1)} MB)`,
            met: growth < 2 * cap,
          },
          {
            target: `${size}: \`/healthz\` under 100 ms`,
            figure: `slowest of ${checks}: ${ms(slowest)} (baseline ${ms(highest(baseline, "healthMaxMs"))})`,
            met: slowest < 100,
          },
          {
            target: `${size}: the bot's event loop never held 100 ms`,
            figure: `longest ${ms(held)} (baseline ${ms(highest(baseline, "loopMaxMs"))})`,
            met: held < 100,
          },
        ];
      }),
      {
        target: `the whole ${mb(whole.logMb)} log read: memory growth under 2× what is read`,
        figure: `${whole.growthMb.toFixed(1)} MB`,
        met: whole.growthMb < 2 * Math.min(whole.capMb, whole.logMb),
      },
      {
        target: "redaction linear in the text",
        figure: `${ms(small.ms)} for ${small.mb.toFixed(1)} MB, ${ms(large.ms)} for ${large.mb.toFixed(1)} MB`,
        met: large.ms / large.mb < 2 * (small.ms / small.mb) + 20,
      },
    ],
  };
}
