import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startFakeGitlab, VM_PIPELINE_INPUTS } from "../sandbox/simulators/gitlab/index.js";
import { syntheticPlan } from "../sandbox/simulators/gitlab/traces.js";
import { createRedactor } from "../src/redact.js";
import { PROJECT_PATH } from "../test/support/harness.js";
import { plantedSecretsOutput, TEST_SECRETS } from "../test/support/secrets.js";
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

/** Asks a URL back to back until SIGTERM, then prints how many times and the slowest answer. */
const PROBER = `
const url = process.argv[1];
let checks = 0, maxMs = 0, failed = 0, stop = false;
process.on("SIGTERM", () => { stop = true; });
process.stdout.write("ready\\n");
(async () => {
  while (!stop) {
    const asked = performance.now();
    const ok = await fetch(url).then((r) => r.status === 200, () => false);
    if (!ok) failed += 1;
    maxMs = Math.max(maxMs, performance.now() - asked);
    checks += 1;
  }
  process.stdout.write(JSON.stringify({ checks, maxMs, failed }));
})();
`;
const MB = 1024 * 1024;
/** The semi-space size of the round that holds V8's young generation small. */
const YOUNG_MB = 1;

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
  /** `/healthz` asked back to back while the plan is read: how many, and the slowest. */
  healthChecks: number;
  healthMaxMs: number;
  /** From the plan job's success until the plan message had its buttons. */
  reviewMs: number;
}

/**
 * The bot as its own process (`node --import tsx src/main.ts`, so its memory is its own), on the
 * fake Slack and a fake GitLab whose plan job prints `logMb` megabytes; one request is planned
 * while `/healthz` is asked back to back and the bot's resident memory is read every 10 ms.
 */
export async function jobLogRound(
  logMb: number,
  capBytes?: number,
  nodeOptions: readonly string[] = [],
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
    [
      ...botNodeOptions(),
      ...nodeOptions,
      "--import",
      import.meta.resolve("tsx"),
      join(ROOT, "src/main.ts"),
    ],
    {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", ...env },
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
    await sleep(1_500);
    const pid = child.pid!;
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
    const { checks: healthChecks, maxMs: healthMaxMs } = JSON.parse(
      probed.slice(probed.indexOf("{")),
    ) as { checks: number; maxMs: number };
    return {
      logMb: gitlab.job(pipelineId, "tf:plan").log.length / MB,
      capMb: (capBytes ?? 4 * MB) / MB,
      idleMb,
      growthMb: peakMb - idleMb,
      healthChecks,
      healthMaxMs,
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

export async function jobLogSection(): Promise<Section> {
  const logMb = setting("BENCH_LOG_MB", 60);
  // The same request with a plan log of a few kilobytes: what any plan costs, measured the same
  // way in the same run, so that what the long log adds can be told from it.
  const baseline = await jobLogRound(0.02);
  const capped = await jobLogRound(logMb);
  const whole = await jobLogRound(logMb, 64 * MB);
  // The same long log with V8's young generation held to 1 MB semi-spaces: what is left of the
  // growth when the garbage cannot pile up there.
  const young = await jobLogRound(logMb, undefined, [`--max-semi-space-size=${YOUNG_MB}`]);
  const small = redactionThroughput(1);
  const large = redactionThroughput(10);
  const row = (name: string, r: JobLogResult) => [
    name,
    r.logMb < 1 ? `${(r.logMb * 1024).toFixed(0)} KB` : mb(r.logMb),
    mb(r.capMb),
    mb(r.idleMb),
    `${r.growthMb.toFixed(1)} MB`,
    String(r.healthChecks),
    ms(r.healthMaxMs),
    ms(r.reviewMs),
  ];
  const body = `A plan job prints ${mb(capped.logMb)} (a provider's debug lines, then the plan). The bot runs as
its own process (\`node --import tsx src/main.ts\`); while it reads the log, cleans it, reads the
plan, writes it redacted to a file and uploads that, \`/healthz\` is asked back to back from a
process of its own and the bot's resident memory is read every 10 ms. Growth is the highest
reading above the one taken before the plan job finished. The baseline is the same request with
a plan log of a few kilobytes, in the same run; the last row reads the whole long log (cap 64 MB).

${table(
  [
    "round",
    "log",
    "cap",
    "memory before",
    "growth",
    "`/healthz` asked",
    "slowest `/healthz`",
    "plan posted after",
  ],
  [
    row("baseline", baseline),
    row("long log, default cap", capped),
    row("long log, read whole", whole),
    row(`long log, default cap, ${YOUNG_MB} MB semi-spaces`, young),
  ],
)}

The log streams through once: each piece is cleaned, fed to the plan parser and written, redacted,
to a file on disk, which is then sent to Slack from disk with its length announced. No copy of the
log is kept, so what the bot holds does not grow with the log or the cap. What the resident
figure still shows is garbage the read leaves for V8 to collect (several bytes allocated per
byte read: decoding, cleaning, joining lines for the redactor), which lands in V8's young
generation; that generation grows to 3 × 16 MB by default and is not given back at once. So
growth follows the young generation, not the amount read: ${capped.growthMb.toFixed(1)} MB for
${mb(capped.capMb)} read, ${whole.growthMb.toFixed(1)} MB for all ${mb(whole.logMb)}; with the young
generation held to ${YOUNG_MB} MB semi-spaces (\`node --max-semi-space-size=${YOUNG_MB}\`, last row) the same
read grows the bot by ${young.growthMb.toFixed(1)} MB. Node runs the bot with its defaults.

The redactor runs over every plan file as it is written: over a plan log with one of each planted
secret shape every 80 lines, ${small.mb.toFixed(1)} MB take ${ms(small.ms)} and ${large.mb.toFixed(1)} MB
${ms(large.ms)}, so its time grows in proportion to the text.

Targets: memory growth under 2× the cap, \`/healthz\` under 100 ms throughout (on a machine
shared with other work, compare the slowest answer with the baseline's).`;
  return {
    body,
    verdicts: [
      {
        target: `a ${mb(capped.logMb)} plan log: memory growth under 2× the cap (${mb(2 * capped.capMb)})`,
        figure: `${capped.growthMb.toFixed(1)} MB (baseline ${baseline.growthMb.toFixed(1)} MB)`,
        met: capped.growthMb < 2 * capped.capMb,
      },
      {
        target: `the whole ${mb(whole.logMb)} log read: memory growth under 2× what is read`,
        figure: `${whole.growthMb.toFixed(1)} MB`,
        met: whole.growthMb < 2 * Math.min(whole.capMb, whole.logMb),
      },
      {
        target: `a ${mb(capped.logMb)} plan log: \`/healthz\` under 100 ms`,
        figure: `slowest of ${capped.healthChecks}: ${ms(capped.healthMaxMs)} (baseline ${ms(baseline.healthMaxMs)})`,
        met: capped.healthMaxMs < 100,
      },
      {
        target: "redaction linear in the text",
        figure: `${ms(small.ms)} for ${small.mb.toFixed(1)} MB, ${ms(large.ms)} for ${large.mb.toFixed(1)} MB`,
        met: large.ms / large.mb < 2 * (small.ms / small.mb) + 20,
      },
    ],
  };
}
