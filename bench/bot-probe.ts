import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { z } from "zod";
import { until } from "./support.js";

/**
 * A probe loaded into the bot's process by the long job log benchmark (`node --import` of a
 * `data:` URL), never by the bot itself: it watches the event loop's delay (perf_hooks'
 * histogram) and V8's heap, and on SIGUSR2 writes what it saw since the last SIGUSR2 to the
 * file `BENCH_PROBE_FILE` names.
 */
const PROBE_SOURCE = `
import { writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";
const file = process.env.BENCH_PROBE_FILE;
if (file) {
  const MB = 1024 * 1024;
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const newSpace = () =>
    getHeapSpaceStatistics().find((space) => space.space_name === "new_space").physical_space_size;
  let peaks = { newSpace: 0, external: 0, arrayBuffers: 0 };
  let reports = 0;
  const sample = () => {
    const usage = process.memoryUsage();
    peaks.newSpace = Math.max(peaks.newSpace, newSpace());
    peaks.external = Math.max(peaks.external, usage.external);
    peaks.arrayBuffers = Math.max(peaks.arrayBuffers, usage.arrayBuffers);
  };
  setInterval(sample, 10).unref();
  process.on("SIGUSR2", () => {
    sample();
    reports += 1;
    writeFileSync(file, JSON.stringify({
      report: reports,
      loopMaxMs: delay.max / 1e6,
      loopP99Ms: delay.percentile(99) / 1e6,
      newSpaceNowMb: newSpace() / MB,
      newSpacePeakMb: peaks.newSpace / MB,
      externalPeakMb: peaks.external / MB,
      arrayBuffersPeakMb: peaks.arrayBuffers / MB,
    }));
    delay.reset();
    peaks = { newSpace: 0, external: 0, arrayBuffers: 0 };
  });
}
`;

/** The node option that loads the probe. */
export const PROBE_IMPORT = `--import=data:text/javascript,${encodeURIComponent(PROBE_SOURCE)}`;

const ProbeSchema = z.object({
  report: z.number(),
  /** The event loop's longest delay and its 99th percentile, in milliseconds. */
  loopMaxMs: z.number(),
  loopP99Ms: z.number(),
  /** V8's young generation: its size when asked, and the most it had meanwhile. */
  newSpaceNowMb: z.number(),
  newSpacePeakMb: z.number(),
  /** Memory outside V8's heap (buffers): the most meanwhile. */
  externalPeakMb: z.number(),
  arrayBuffersPeakMb: z.number(),
});
export type Probe = z.infer<typeof ProbeSchema>;

/** Asks the bot's probe for what it saw since it was last asked, and starts it afresh. */
export async function readProbe(child: ChildProcess, file: string, asked: number): Promise<Probe> {
  child.kill("SIGUSR2");
  let report: Probe | undefined;
  await until(
    () => {
      if (!existsSync(file)) return false;
      let text: unknown;
      try {
        text = JSON.parse(readFileSync(file, "utf8"));
      } catch {
        return false; // being written
      }
      const read = ProbeSchema.safeParse(text);
      if (read.success && read.data.report === asked + 1) report = read.data;
      return report !== undefined;
    },
    "the bot's probe",
    { everyMs: 10 },
  );
  if (report === undefined) throw new Error("the bot's probe did not answer");
  return report;
}
