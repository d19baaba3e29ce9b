import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Readable } from "node:stream";
import { createTraceCleaner } from "../src/gitlab/trace.js";
import { createPlanTextParser } from "../src/terraform/plan-text.js";
import { planTrace } from "../test/fakes/gitlab-traces.js";

export interface ParsingResult {
  sizeMb: number;
  baselineMbPerS: number;
  parserMbPerS: number;
  /** Peak resident memory above the start of the parse, in MB. */
  parserPeakMb: number;
  resources: number;
}

const SHARED_PLAN = "terraform-plan-text/terraform-plan-comment-basic-1-modify-plan.txt";

/** A job log of about `mb` megabytes: a real plan's resource blocks repeated under new names. */
function* logChunks(mb: number): Generator<string> {
  const plan = readFileSync(resolve(process.cwd(), "../shared/fixtures", SHARED_PLAN), "utf8");
  const start = plan.indexOf("  # ");
  const end = plan.indexOf("Plan:");
  const block = plan.slice(start, end);
  const trace = planTrace(block);
  const target = mb * 1024 * 1024;
  let written = 0;
  for (let i = 0; written < target; i += 1) {
    const chunk = trace.replace(/local_file\.(\w+)/g, `local_file.$1_${i}`);
    written += Buffer.byteLength(chunk);
    yield chunk;
  }
}

async function timeStream(mb: number, consume: (chunk: string) => void, finish: () => void) {
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  let bytes = 0;
  const started = performance.now();
  for await (const chunk of Readable.from(logChunks(mb))) {
    const text = chunk as string;
    bytes += Buffer.byteLength(text);
    consume(text);
    const rss = process.memoryUsage().rss;
    if (rss > peak) peak = rss;
  }
  finish();
  const seconds = (performance.now() - started) / 1000;
  return { mbPerS: bytes / 1024 / 1024 / seconds, peakMb: (peak - rssBefore) / 1024 / 1024 };
}

/** Parsing a streamed job log against splitting the same stream into lines, the floor for any parser. */
export async function planParsing(sizes: readonly number[]): Promise<ParsingResult[]> {
  const results: ParsingResult[] = [];
  for (const mb of sizes) {
    let partial = "";
    let lines = 0;
    const baseline = await timeStream(
      mb,
      (chunk) => {
        const parts = (partial + chunk).split("\n");
        partial = parts.pop() ?? "";
        lines += parts.length;
      },
      () => undefined,
    );
    const cleaner = createTraceCleaner();
    const parser = createPlanTextParser();
    const parsed = await timeStream(
      mb,
      (chunk) => {
        for (const line of cleaner.push(chunk)) parser.push(line);
      },
      () => {
        for (const line of cleaner.end()) parser.push(line);
      },
    );
    results.push({
      sizeMb: mb,
      baselineMbPerS: baseline.mbPerS,
      parserMbPerS: parsed.mbPerS,
      parserPeakMb: parsed.peakMb,
      resources: parser.result().resources.length,
    });
    if (lines === 0) throw new Error("the baseline split no lines");
  }
  return results;
}
