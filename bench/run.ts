import { writeFileSync, mkdirSync } from "node:fs";
import { cpus } from "node:os";
import { commandLatency } from "./command-latency.js";
import { planParsing } from "./plan-parsing.js";

/**
 * `npm run bench`: each figure is measured beside its baseline in the same run and reported
 * as a ratio, because these machines are shared and noisy. Writes docs/BENCHMARKS.md.
 */
async function main(): Promise<void> {
  const samples = Number(process.env.BENCH_SAMPLES ?? 600);
  const [bare, vmbot] = await commandLatency(samples);
  if (!bare || !vmbot) throw new Error("the command latency benchmark returned nothing");
  const ms = (n: number) => `${n.toFixed(2)} ms`;
  const rows = [
    "| measure | baseline (bare Bolt app) | vmbot | ratio |",
    "|---|---|---|---|",
    `| \`/vm create\` → \`views.open\`, p50 (${vmbot.samples} requests) | ${ms(bare.p50)} | ${ms(vmbot.p50)} | ${(vmbot.p50 / bare.p50).toFixed(2)}× |`,
    `| \`/vm create\` → \`views.open\`, p99 | ${ms(bare.p99)} | ${ms(vmbot.p99)} | ${(vmbot.p99 / bare.p99).toFixed(2)}× |`,
  ];
  const table = rows.join("\n");
  process.stdout.write(`${table}\n`);

  const parsing = await planParsing([1, 10, 100]);
  const parsingRows = [
    "| job log | baseline: split into lines | vmbot: clean + parse | ratio | vmbot peak memory | resources found |",
    "|---|---|---|---|---|---|",
    ...parsing.map(
      (r) =>
        `| ${r.sizeMb} MB | ${r.baselineMbPerS.toFixed(0)} MB/s | ${r.parserMbPerS.toFixed(0)} MB/s | ${(r.parserMbPerS / r.baselineMbPerS).toFixed(2)}× | ${r.parserPeakMb.toFixed(0)} MB | ${r.resources} |`,
    ),
  ];
  const worst = Math.min(...parsing.map((r) => r.parserMbPerS / r.baselineMbPerS));
  const largest = parsing.at(-1);
  parsingRows.push(
    "",
    `Throughput target (≥ 0.5×): ${worst >= 0.5 ? "met" : `missed, ${worst.toFixed(2)}× at worst`}. ` +
      `Memory target (< 150 MB for ${largest?.sizeMb ?? 0} MB): ${largest !== undefined && largest.parserPeakMb < 150 ? "met" : "missed"}.`,
  );
  const parsingTable = parsingRows.join("\n");
  process.stdout.write(`${parsingTable}\n`);
  const doc = `# Benchmarks

Measured by \`npm run bench\` on loopback against the Slack and GitLab fakes in \`test/fakes/\`.
Every figure stands beside a baseline measured in the same run, in three interleaved rounds
(the median round is shown), and the comparison is the ratio: absolute times on a shared
machine say little.

Machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? "unknown"}), Node ${process.version}.

## Command latency

Signed \`/vm create\` slash commands are posted to the bot in HTTP mode, one at a time; the time
is from the post until the fake Slack receives \`views.open\`. The baseline is a bare Bolt app,
in the same process, that acknowledges and opens a fixed modal with no other work.
Target: vmbot's p99 within 1.5× the baseline's.

${table}

Reproduce: \`npm run bench\` (\`BENCH_SAMPLES\` sets the number of requests, default 600).

## Plan parsing

A GitLab job log built from a real plan in \`../shared/fixtures\` (its resource blocks repeated
under new names, wrapped in the runner's section markers and colours) is streamed in chunks
through the trace cleaner and the plan parser. The baseline splits the same stream into lines and
does nothing else: no text parser can be faster. Peak memory is the growth of resident memory
during the parse. Targets: at least half the baseline's throughput; under 150 MB for 100 MB.

${parsingTable}

## Not measured yet

Notification latency (plan job done → message updated, by polling and by webhook), GitLab calls
per tracker pass with 10 to 1,000 requests in flight (the test suite asserts one list call per
pass for 1 and 50 idle requests), and the footprint (time to healthy, resident memory).
`;
  mkdirSync("docs", { recursive: true });
  writeFileSync("docs/BENCHMARKS.md", doc);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
