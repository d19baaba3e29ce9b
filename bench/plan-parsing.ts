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

The one-job log is the harder of the two: its plan is all resource blocks, about 880 resources
a megabyte where the repeated jobs hold 410, and this plan's blocks are replacements whose lines
the parser must read (the attributes that force the replacement, a heredoc's opener and end) far
more often than a plan of updates. Timed on their own, the chunks made beforehand as flat strings
(30 MB, 479k lines, 26,600 resources, 20 rounds alternating), clean + parse takes 120–142 ms
against the split's 50–53 ms (0.37–0.41×). The parser used to read every line under "Terraform
will perform the following actions:", which every plan prints, for fear of a resource line of
Terraform before 0.12; only lines two spaces in or fewer can be one. It read all 479k lines and
took 180–219 ms (0.24–0.28×), and now reads 93k: the heading, the marker line, the attribute that
forces the replacement and the heredoc's end of each resource. What is left, about 4.5 µs a
resource, is reading those lines (the heading's phrase, its address copied out, the objects made
for it), the runs of plain lines between them and the collector's scavenges of what is kept. The
cleaner alone, the parser passing over every line unread, takes 22 ms. Every line is already read
by character codes, as below; 0.5× would take reading a resource block another way, not tuning.
The reader keeps only what the plan's message shows of the resources, as the tracker's does
(\`messageResources\` in \`src/views/plan-kept.ts\`: a plan's first 50 resources whole, else the first
20 with a change and the first 20 destroyed, and how many of each it left out), where it kept all
of them, 88,700 at 100 MB, each copied out of the log, and the collector carried them from
scavenge to scavenge; a resource's text is copied out only when it is kept. Timed on their own as
above (14 rounds alternating, a shared machine), that takes 0.77× the time keeping all of them
took at 10 MB, 0.86× at 30 MB and 0.71× at 100 MB.

Where the time goes on the repeated jobs: the split finds line ends with one native call per chunk and copies nothing.
The bot's reader (\`src/tracker/plan-log-reader.ts\`) cleans and parses in one pass and works line
by line in JavaScript only where it must. The lines before a chunk's next ESC and \`\\r\` are handed
to the parser in one call (\`passRun\`), which walks their newlines and passes over each by the same
rules as one at a time, inlined for lines known to hold no escape, up to the first it would read,
which the cleaner cuts out and hands over. For any other line without a \`\\r\` the cleaner finds,
from the chunk itself and in one pass over its escape sequences, where its text starts, how far it is
indented and its last character, and the parser decides from those (and, for the few lines that
start like a landmark or end like \`# forces replacement\`, a few more characters) whether reading
it could change anything. Only the lines it reads are cut out: 7 of every 73 in this log, the
headings, the resources' first lines, the attributes that force a replacement and a heredoc's
opener and end; 42 are passed over in runs (12 runs a chunk) and 22 one by one. Section markers are
found from the carriage return each ends with and read back from there, not by a search for
\`section_\` (about 250 ns a search on this machine, as long as reading the marker). The sections the
markers open are not kept, as the reader never asks for them.
The lines the parser reads are read by character codes, not by patterns: a heading's phrase is the
longest one its line ends with (what the lazy heading pattern, with its twelve alternatives, found
by backtracking), and a marker line's symbol, type and name, the name of an attribute that forces a
replacement and a heredoc's word are found where they stand, each held by a property test to the
pattern it replaced. With no match arrays, captured copies or joined strings, reading a 10 MB log
allocates 3.1 MB where it allocated 6.6 MB (this log) and 7.5 MB where it allocated 15 MB (one plan
of 8,900 resources in a job log, the plan's blocks repeated under new names); on the latter the
lines the parser reads, read alone, take 13–15 ms per 10 MB where they took 16.5–17.5 (the fastest
of 40 reads, taken alternately). A CPU profile of the reader built to JavaScript
(\`node --cpu-prof\`, this log at 10 MB, on a shared machine under load) puts the whole read, its
chunks made beforehand, at 21–22 ms per 10 MB at the fastest of 40 reads (22–23.5 before), the
cleaner alone, the parser passing over every line, at 9.5 ms, the split at 3 ms and the newline
search alone at 1.5 ms; read back to back with the reader before, the read takes 0.84–0.89 of its
time (the median of 40 pairs, three runs; 0.67–0.83 on the plan of 8,900 resources), most of the
gain being the garbage collector's. Made one at a time as the benchmark makes them (2.5 ms per 10
MB), fresh chunks take the split 4–7 ms rather than 3, and the read 25–26 ms. Of that read: the
parser's reads of the 7 lines a chunk it does not pass over 26% (the headings and the objects made
for them 7.5%), the garbage collector 15%, the chunk loop 9%, the runs of plain lines 9% (about 30
ns a line, where the newline search alone takes 9), reading section markers back 8%, escape
sequences 7.5% and the search for rare control characters 5.5%. On this log the runs are short (3.5
lines); on a plan whose resources have 30 plain attribute lines each they take the read from 21–23
to 18.5–20 ms per 10 MB. Listing the resources took 13% of the read, and 100 MB peaked at 26–30 MB,
until each copy stopped being made by a spread with a property more (\`{ ...resource, reason }\`):
V8 gave every such object a hidden class of its own. Ideas measured and left: one pattern for all
the rare control characters takes 9.5–10.4 ms per 10 MB, and one anchored negated class
(\`^[^...]*$\`) 6.5–7.8 ms, where 27 native searches take 2.5 ms; a sticky pattern passing over
whole runs of lines the parser would pass over takes 35–42 ms. 0.5× leaves clean + parse about twice
the split's time plus what making and streaming the log costs both sides: the profile is flat, the
cleaner's part (the chunk loop, markers, escapes and rare control characters, 30%) about as large as
the parser's (35%), so no one change of those measured gets there.`;
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
