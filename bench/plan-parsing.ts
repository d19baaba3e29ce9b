import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Readable } from "node:stream";
import { createPlanLogReader } from "../src/tracker/plan-log-reader.js";
import { messageResources } from "../src/views/plan-kept.js";
import { planTrace } from "../sandbox/simulators/gitlab/traces.js";
import { mb, plural, setting, table, type Section } from "./report.js";
import { median } from "./stats.js";

export interface ParsingResult {
  shape: LogShape;
  sizeMb: number;
  rounds: number;
  /** Medians over the rounds. */
  baselineMbPerS: number;
  parserMbPerS: number;
  /** The median of the rounds' ratios (each round's parser and baseline ran back to back). */
  ratio: number;
  /** Peak resident memory above the start of the parse, in MB: the highest of the rounds. */
  parserPeakMb: number;
  resources: number;
}

const PLAN_FIXTURE = "terraform-plan-text/terraform-plan-comment-basic-1-modify-plan.txt";
const MB = 1024 * 1024;

/** What the benchmark's logs are made of, from a real plan job's log. */
interface LogParts {
  /** The whole job's log: the runner's preamble and sections, the plan, the job's end. */
  job: string;
  /** The job's log up to the plan's first resource, and from its `Plan:` line on. */
  head: string;
  tail: string;
  /** The plan's resource blocks. */
  blocks: string;
}

let parts: LogParts | undefined;

function logParts(): LogParts {
  if (parts === undefined) {
    const plan = readFileSync(resolve(process.cwd(), "test/fixtures", PLAN_FIXTURE), "utf8");
    const first = plan.indexOf("  # ");
    const planLine = plan.indexOf("Plan:");
    const blocks = plan.slice(first, planLine);
    const job = planTrace(blocks);
    const [head = "", tail = ""] = planTrace(
      `${plan.slice(0, first)}${BLOCKS}${plan.slice(planLine)}`,
    ).split(BLOCKS);
    parts = { job, head, tail, blocks };
  }
  return parts;
}

/** Where the plan's resource blocks go in the job's log. */
const BLOCKS = "\u0000blocks\u0000";

/** The resources of a piece of plan under names of their own, the `i`th time it is repeated. */
const renamed = (text: string, i: number) =>
  text.replace(/local_file\.(\w+)/g, `local_file.$1_${i}`);

/** How a socket hands a response body over: in pieces of up to 64 KB, cut wherever they fall. */
const PIECE = 64 * 1024;

/**
 * The log of one plan job of about `mb` megabytes, as a runner writes it: the preamble and
 * sections once, a plan of the real plan's resource blocks repeated under new names, the job's
 * end once; streamed in pieces of 64 KB.
 */
function* oneJobLog(mb: number): Generator<string> {
  const { head, tail, blocks } = logParts();
  const target = mb * MB;
  let pending = head;
  let written = 0;
  for (let i = 0; written < target; i += 1) {
    const text = renamed(blocks, i);
    written += Buffer.byteLength(text);
    pending += text;
    while (pending.length >= PIECE) {
      yield pending.slice(0, PIECE);
      pending = pending.slice(PIECE);
    }
  }
  pending += tail;
  for (let at = 0; at < pending.length; at += PIECE) yield pending.slice(at, at + PIECE);
}

/**
 * A log of about `mb` megabytes that is the whole job's log repeated, the resources under new
 * names each time, one job's log a piece: its runner's lines, section markers and colours come
 * back every 5 KB, which no real log does, and cost the cleaner accordingly.
 */
function* repeatedJobsLog(mb: number): Generator<string> {
  const { job } = logParts();
  const target = mb * MB;
  let written = 0;
  for (let i = 0; written < target; i += 1) {
    const chunk = renamed(job, i);
    written += Buffer.byteLength(chunk);
    yield chunk;
  }
}

/** A log of `mb` megabytes in the shape `shape`. */
interface Log {
  shape: LogShape;
  mb: number;
}

export type LogShape = "one job" | "repeated jobs";

const logChunks = (shape: LogShape, mb: number) =>
  shape === "one job" ? oneJobLog(mb) : repeatedJobsLog(mb);

/**
 * Streams the log through `consume`. Resident memory is sampled once per megabyte read, not per
 * chunk: reading it costs about as much as splitting a chunk, and would weigh on both sides.
 */
async function timeStream(log: Log, consume: (chunk: string) => void, finish: () => void) {
  const rssBefore = process.memoryUsage.rss();
  let peak = rssBefore;
  let bytes = 0;
  let nextSample = MB;
  // CPU time, the process's own: time the shared machine gives to other work does not count.
  const started = process.cpuUsage();
  for await (const chunk of Readable.from(logChunks(log.shape, log.mb))) {
    const text = chunk as string;
    bytes += Buffer.byteLength(text);
    consume(text);
    if (bytes >= nextSample) {
      nextSample += MB;
      peak = Math.max(peak, process.memoryUsage.rss());
    }
  }
  finish();
  const cpu = process.cpuUsage(started);
  const seconds = (cpu.user + cpu.system) / 1e6;
  peak = Math.max(peak, process.memoryUsage.rss());
  return { mbPerS: bytes / MB / seconds, peakMb: (peak - rssBefore) / MB };
}

/** The floor for any parser: split the stream into lines and count them. */
async function splitLines(log: Log) {
  let partial = "";
  let lines = 0;
  const timed = await timeStream(
    log,
    (chunk) => {
      const parts = (partial + chunk).split("\n");
      partial = parts.pop() ?? "";
      lines += parts.length;
    },
    () => undefined,
  );
  if (lines === 0) throw new Error("the baseline split no lines");
  return timed;
}

/** What the tracker does with a plan job's log: clean it, then read the plan from its lines. */
async function cleanAndParse(log: Log) {
  // As the tracker does: only what the message shows of the resources is kept.
  const reader = createPlanLogReader({ resources: messageResources() });
  const timed = await timeStream(
    log,
    (chunk) => {
      reader.push(chunk);
    },
    () => {
      reader.end();
    },
  );
  const { derivedCounts: counts } = reader.result();
  return { ...timed, resources: counts.add + counts.change + counts.destroy - counts.replace };
}

/** Logs shorter than this take a few milliseconds: they run ten times as many rounds. */
const SHORT_MB = 10;

/**
 * Waits until the process has nothing else to do. Its imports leave work behind them (a second
 * after importing the other benchmarks, 70–80 ms of CPU time on other threads, compiling and
 * collecting), which the process's CPU time counts: measured during it, 1 MB took the split 10
 * ms where it takes 1.5.
 */
async function quiet(): Promise<void> {
  for (let tries = 0; tries < 25; tries += 1) {
    const before = process.cpuUsage();
    await new Promise((done) => setTimeout(done, 200));
    const used = process.cpuUsage(before);
    if (used.user + used.system < 10_000) return;
  }
}

/**
 * Parsing a streamed job log against splitting the same stream into lines, each size in
 * `rounds` rounds (ten times as many below `SHORT_MB`) that alternate which of the two goes first.
 */
export async function planParsing(
  sizes: readonly number[],
  minRounds: number,
  shape: LogShape,
): Promise<ParsingResult[]> {
  await quiet();
  // Both paths, untimed, so that neither is measured before the JIT has compiled it.
  await splitLines({ shape, mb: SHORT_MB });
  await cleanAndParse({ shape, mb: SHORT_MB });
  const results: ParsingResult[] = [];
  for (const mb of sizes) {
    const rounds = mb < SHORT_MB ? minRounds * 10 : minRounds;
    const baseline: number[] = [];
    const parser: number[] = [];
    const ratios: number[] = [];
    let peakMb = 0;
    let resources = 0;
    for (let round = 0; round < rounds; round += 1) {
      let split: Awaited<ReturnType<typeof splitLines>>;
      let parsed: Awaited<ReturnType<typeof cleanAndParse>>;
      if (round % 2 === 0) {
        split = await splitLines({ shape, mb });
        parsed = await cleanAndParse({ shape, mb });
      } else {
        parsed = await cleanAndParse({ shape, mb });
        split = await splitLines({ shape, mb });
      }
      baseline.push(split.mbPerS);
      parser.push(parsed.mbPerS);
      ratios.push(parsed.mbPerS / split.mbPerS);
      peakMb = Math.max(peakMb, parsed.peakMb);
      resources = parsed.resources;
    }
    results.push({
      shape,
      sizeMb: mb,
      rounds,
      baselineMbPerS: median(baseline),
      parserMbPerS: median(parser),
      ratio: median(ratios),
      parserPeakMb: peakMb,
      resources,
    });
  }
  return results;
}

/** Item 4 of the report: clean + parse against splitting into lines, 1 to 100 MB. */
export async function planParsingSection(): Promise<Section> {
  const rounds = setting("BENCH_PARSE_ROUNDS", 3);
  const results = [
    ...(await planParsing([1, 10, 100], rounds, "one job")),
    ...(await planParsing([1, 10, 100], rounds, "repeated jobs")),
  ];
  const roundsOf = (mb: number) => results.find((r) => r.sizeMb === mb)?.rounds ?? 0;
  const worst = results.reduce((low, r) => (r.ratio < low.ratio ? r : low));
  const largest = results
    .filter((r) => r.sizeMb === 100)
    .reduce<ParsingResult | undefined>(
      (high, r) => (high === undefined || r.parserPeakMb > high.parserPeakMb ? r : high),
      undefined,
    );
  const body = `Two GitLab job logs are built from a real plan in \`test/fixtures\` and streamed through the
trace cleaner and the plan parser, as the tracker reads a plan job's log. *One job* is a plan job's
log as a runner writes it (the preamble and its sections, with their markers and colours, once; a
plan of the real plan's resource blocks repeated under new names; the job's end once), in pieces
of 64 KB cut wherever they fall, as a socket hands them over. *Repeated jobs* is the whole job's
log repeated, the resources under new names each time, one job's log a piece: the runner's lines,
markers and colours come back every 5 KB, which no real log does. The baseline splits the same
stream into lines and does nothing else: no text parser can be faster.
Each size runs ${plural(rounds, "round")} (1 MB, being over in a few milliseconds, ${roundsOf(1)}), the two back to back in
alternating order; throughputs are megabytes per second of the process's CPU time (so that other work on a shared machine does not
count), the rounds' medians, and the ratio the median of the rounds' ratios. Peak memory is the growth of
resident memory during the parse (sampled every megabyte), the highest of the rounds. This benchmark runs first, before the others
have filled the process's heap.

Targets: at least half the baseline's throughput; under 150 MB for 100 MB.

${table(
  [
    "job log",
    "size",
    "baseline: split into lines",
    "vmbot: clean + parse",
    "ratio",
    "vmbot peak memory",
    "resources with a change",
  ],
  results.map((r) => [
    r.shape,
    `${r.sizeMb} MB`,
    `${r.baselineMbPerS.toFixed(0)} MB/s`,
    `${r.parserMbPerS.toFixed(0)} MB/s`,
    `${r.ratio.toFixed(2)}×`,
    mb(r.parserPeakMb),
    String(r.resources),
  ]),
)}

The one-job log is the harder of the two for the parser: its plan is all resource blocks, about
880 resources a megabyte where the repeated jobs hold 410, each a replacement with a forcing
attribute and, one in two, a heredoc. The repeated jobs are the harder for the cleaner: the
runner's lines, section markers and colours every 5 KB.

How the reader gets through a plan. The cleaner hands the parser, in one call, the lines before a
chunk's next ESC and \`\\r\` (\`passRun\`); the parser passes over each it can from its first and last
characters where it stands in the chunk, up to the first it must read, which the cleaner cuts out
and hands over. What it reads is the headings, the plan's landmarks and diagnostics, and what a
resource its list keeps says of itself. The reader keeps only what the plan's message shows of the
resources (\`messageResources\` in \`src/views/plan-kept.ts\`: a plan's first 50 resources whole, else
the first 20 with a change and the first 20 destroyed, and how many of each it left out), and the
list says which resources it may still keep: past those, a replacement's marker line and its
\`# forces replacement\` lines can change nothing the message shows (the order and the reasons of a
resource it does not name), and are passed over. A marker line that does not replace (\`+\`, \`~\`,
\`-\`) changes nothing for any resource, and ends the heading's comments unread; a heredoc is opened
where its opener stands and ended where its word stands, as reading those lines would. Past the
first resources, the heading is the one line of a resource block read, where the marker line, the
forcing attribute, the heredoc's opener and its end were read as well. A property test holds every
line passed over to what reading it would have done (\`test/terraform/plan-text-skip.property.test.ts\`),
and another the reader with the message's list to every line read, on plans longer than the list.
The lines it does read are read by character codes and native calls, not patterns (a heading's
phrase, a marker line's type and name, a heredoc's word), each held by a property test to the
pattern it replaced. Where a line was compared character by character (the end of a forcing
attribute, a comment searched for a move's or an action's words, a heading searched for line
terminators), one native call compares it: on this machine a character read by \`charCodeAt\` costs
4.5–5 ns, a native comparison of 18 characters about as much as three.

Measured beside this benchmark, the chunks made beforehand as flat strings and each read taken
alternately with the reader before these changes (40 pairs, the median of their ratios, a shared
machine): the one-job log in 0.665 of the time at 1 MB and at 30 MB, the repeated jobs in 0.845.
Split into lines the same way, 30 MB of the one-job log takes 28 ms, the reader 112 (170 before).

Where the time goes now (\`node --cpu-prof\` of the reader built to JavaScript, one job, 30 MB):
passing over lines 60% (per line, the newline search 15–25 ns, the indentation 20–30 ns read one
character at a time, the rules 25 ns, where the split costs 45–70 ns a line in all; of the 60, a
comment's check for a heading's words 7% and a heredoc's opener 7%), the headings 20% (350–550 ns
each: the phrase, the resource's objects and its place in the list), the chunk loop 16%, the check
of the lines made for rare control characters 3%. What is left to take: a loop over the same chunks
that finds each newline and reads each line's indentation and its first and last characters, and
nothing else, takes 0.85–1.1× the split's time (18–24 ms against 21–23 for 30 MB; the newline
search alone 7.5–10.6), so half the split's throughput leaves the rules, the headings and the
chunk loop one split's time where they take two. The rare control characters (all controls but
tab, newline, \`\\r\` and ESC) were searched for in every chunk, 27 native searches, 13% of the time;
the lines made are now checked one by one instead, and the rules read any line in which such a
character could hide what it says (\`plan-log-reader.property.test.ts\` puts them anywhere in a
plan's lines): 0.89–0.96 of the time before, measured alternately in one process. Ideas measured and
left: four spaces of indentation compared in one call (0.70 of the time
before, against 0.64 without); native searches for the landmarks' words in place of reading each
line's first character ("No changes." alone takes 13 ms per 30 MB, as long as the indentation);
splitting each chunk natively and passing over the lines made (175 ms became 219); a line's
terminators searched in a slice of it (0.67 against 0.65); one pattern for all the rare control
characters (9.5–10.4 ms per 10 MB against 2.5 for the 27 native searches); a sticky pattern passing
over runs of lines (35–42 ms against 21–23). Section markers are read back from the carriage return
each ends with, not found by a search for \`section_\`; the sections they open are not kept, as the
reader never asks for them.
`;
  return {
    body,
    verdicts: [
      {
        target: "plan parsing at least 0.5× the line split's throughput",
        figure: `${worst.ratio.toFixed(2)}× at ${worst.sizeMb} MB (${worst.parserMbPerS.toFixed(0)} against ${worst.baselineMbPerS.toFixed(0)} MB/s)`,
        met: worst.ratio >= 0.5,
      },
      {
        target: "plan parsing peak memory under 150 MB for 100 MB",
        figure:
          largest === undefined
            ? "not measured"
            : `${mb(largest.parserPeakMb)} for ${largest.sizeMb} MB`,
        met: largest !== undefined && largest.sizeMb >= 100 && largest.parserPeakMb < 150,
      },
    ],
  };
}
