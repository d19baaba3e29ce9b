import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { format, resolveConfig } from "prettier";
import { commandLatencySection } from "./command-latency.js";
import { footprintSection } from "./footprint.js";
import { gitlabCallsSection } from "./gitlab-calls.js";
import { loadSection } from "./load.js";
import { jobLogSection } from "./job-log.js";
import { notificationSection } from "./notification.js";
import { planParsingSection } from "./plan-parsing.js";
import { postgresSection } from "./postgres.js";
import { table, verdictText, type Section } from "./report.js";

interface Benchmark {
  /** What `BENCH_ONLY` calls it. */
  name: string;
  /** Its heading in the report, numbered as in the requirements. */
  title: string;
  run: () => Promise<Section>;
}

/**
 * Every benchmark, in the order they run: plan parsing first, while the process holds nothing but
 * its own work (the others leave a large heap behind, which weighs on the parser's allocations
 * more than on the baseline's). The report lists them by number.
 */
const BENCHMARKS: readonly Benchmark[] = [
  { name: "parsing", title: "4. Plan parsing", run: planParsingSection },
  { name: "command", title: "1. Command latency", run: commandLatencySection },
  { name: "notification", title: "2. Notification latency", run: notificationSection },
  { name: "calls", title: "3. GitLab calls per tracker pass", run: gitlabCallsSection },
  { name: "footprint", title: "5. Footprint", run: footprintSection },
  { name: "load", title: "6. A burst of Slack traffic", run: loadSection },
  { name: "joblog", title: "7. A long job log", run: jobLogSection },
  { name: "postgres", title: "8. PostgreSQL and replicas", run: postgresSection },
];

const OUTPUT = "docs/BENCHMARKS.md";

function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/**
 * `npm run bench`: runs every benchmark on loopback against the simulators in `sandbox/simulators/`, prints
 * each table, and writes docs/BENCHMARKS.md. Each figure is measured beside a baseline in the same
 * run, because these machines are shared and noisy. `BENCH_ONLY=command,parsing` runs some of
 * them and writes nothing.
 */
async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY?.split(",").map((name) => name.trim());
  const sections: (Section & { title: string })[] = [];
  let failed = false;
  for (const { name, title, run } of BENCHMARKS) {
    if (only !== undefined && !only.includes(name)) continue;
    process.stderr.write(`running the ${name} benchmark…\n`);
    try {
      const section = await run();
      sections.push({ title, ...section });
      process.stdout.write(`\n## ${title}\n\n${section.body}\n`);
    } catch (error) {
      failed = true;
      process.stderr.write(`the ${name} benchmark failed: ${errorText(error)}\n`);
      const reason = errorText(error).split("\n")[0] ?? "";
      sections.push({
        title,
        body: `Not measured in this run: the benchmark failed (${reason}).`,
        verdicts: [],
      });
    }
  }
  sections.sort((a, b) => a.title.localeCompare(b.title, "en", { numeric: true }));
  const verdicts = sections.flatMap((section) => section.verdicts);
  const summary = table(
    ["target", "measured", "result"],
    verdicts.map((v) => [v.target, v.figure, verdictText(v)]),
  );
  process.stdout.write(`\n## Targets\n\n${summary}\n`);
  if (only !== undefined) {
    process.stderr.write(`BENCH_ONLY is set: ${OUTPUT} is left as it is.\n`);
  } else {
    const cpu = cpus();
    const doc = `# Benchmarks

Measured by \`npm run bench\` on loopback against the simulators in \`sandbox/simulators/\` (Slack, GitLab and
Proxmox), with the bot in the same process or, for its footprint and the burst, in a process of its own as \`npm start\` starts
it. Every figure stands beside a baseline measured in the same run, or against an absolute
target; on a shared machine the ratios say more than the absolute times.

Machine: ${cpu.length} CPUs (${cpu[0]?.model.trim() ?? "unknown"}), Node ${process.version}.

Reproduce: \`npm run bench\` (about ten minutes). \`BENCH_SAMPLES\` (default 600) sets the
\`/vm create\` requests per variant, \`BENCH_SUBMIT_SAMPLES\` (300) the form submissions,
\`BENCH_STALE_SAMPLES\` (1000) the commands sent with a stale node list and
\`BENCH_STALE_GAP_MS\` (50) their pace, \`BENCH_WEBHOOK_SAMPLES\`
(30) and \`BENCH_POLL_SAMPLES\` (10) the notification samples, \`BENCH_PARSE_ROUNDS\` (3) and
\`BENCH_FOOTPRINT_ROUNDS\` (3) the rounds, \`BENCH_LOAD_COUNT\` (200) the burst of commands and
submissions and \`BENCH_LOAD_ROUNDS\` (3) its rounds; \`BENCH_PG_SAMPLES\` (300) and \`BENCH_PG_SUBMIT_SAMPLES\` (600) the forms and
submissions per engine, \`BENCH_PG_DELIVERY_SAMPLES\` (1000) the deliveries recorded each way,
\`BENCH_PG_BURST\` (100) and \`BENCH_PG_ROUNDS\` (3) the replicas' burst and its rounds;
\`BENCH_ONLY=command,notification,calls,parsing,footprint,load,joblog,postgres\` runs only
those named and leaves this file alone; \`BENCH_LOG_MB\` (60) and \`BENCH_HUGE_LOG_MB\` (200) set the sizes of the long job logs and \`BENCH_JOBLOG_ROUNDS\` (3) their rounds; \`BENCH_BOT_NODE_OPTIONS\` gives Node options to the bots started in their own
processes (sections 6, 7 and 8). Section 8 starts a throwaway PostgreSQL server as the tests do,
from PostgreSQL's server programs (on PATH, or Debian's \`/usr/lib/postgresql\`).

## Targets

${summary}

${sections.map((section) => `## ${section.title}\n\n${section.body}`).join("\n\n")}
`;
    const options = await resolveConfig(OUTPUT);
    mkdirSync("docs", { recursive: true });
    // Prose is rewrapped, since figures of any width are set into it.
    const formatted = await format(doc, { ...options, filepath: OUTPUT, proseWrap: "always" });
    writeFileSync(OUTPUT, formatted);
    process.stderr.write(`wrote ${OUTPUT}\n`);
  }
  if (failed) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`${errorText(error)}\n`);
  process.exit(1);
});
