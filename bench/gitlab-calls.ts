import { ms, table, type Section } from "./report.js";
import { median } from "./stats.js";
import { openCreateForm, requestVms, startBot, startGitlab, startSlack } from "./support.js";

export interface CallsResult {
  inFlight: number;
  /** GitLab requests in one tracker pass when no pipeline has changed (median of the passes). */
  idle: number;
  idlePasses: number;
  /** Milliseconds one such pass takes (median). */
  idlePassMs: number;
  /** GitLab requests in one pass after one pipeline has changed (median of the passes). */
  oneChanging: number;
  changingPasses: number;
}

const PASSES = 5;

/**
 * Requests are asked for through Slack, as people would (the form submitted, the bot storing each
 * request and creating its pipeline), up to each count in turn. The tracker's timer is set to an
 * hour so that only the benchmark's `tick()` calls make passes; the fake GitLab counts what each
 * pass asks of it.
 */
export async function gitlabCalls(counts: readonly number[]): Promise<CallsResult[]> {
  const slack = await startSlack();
  const gitlab = await startGitlab();
  const bench = await startBot({ slack, gitlab }, { POLL_INTERVAL_MS: "3600000" });
  const tracker = bench.bot.tracker;
  /** GitLab requests made by one pass, and its duration. */
  const pass = async () => {
    const mark = gitlab.mark();
    const started = performance.now();
    await tracker.tick();
    return { requests: gitlab.requestsSince(mark).length, ms: performance.now() - started };
  };
  try {
    const form = await openCreateForm(slack, bench.signer);
    const results: CallsResult[] = [];
    let inFlight = 0;
    for (const count of counts) {
      await requestVms({ gitlab }, bench, form, count - inFlight, 8);
      inFlight = count;
      // The first pass reads each new pipeline once; after it, only changes are read.
      await pass();
      await pass();

      const idle = [];
      for (let i = 0; i < PASSES; i += 1) idle.push(await pass());

      // Before each pass, one pipeline that has not moved yet moves (its first job is queued).
      const changing = [];
      const waiting = gitlab.pipelines.filter((p) => p.status === "created").slice(0, PASSES);
      for (const pipeline of waiting) {
        const before = pipeline.status;
        gitlab.advance(pipeline.id);
        if (pipeline.status === before) throw new Error(`pipeline #${pipeline.id} did not move`);
        changing.push(await pass());
      }
      results.push({
        inFlight: count,
        idle: median(idle.map((p) => p.requests)),
        idlePasses: idle.length,
        idlePassMs: median(idle.map((p) => p.ms)),
        oneChanging: median(changing.map((p) => p.requests)),
        changingPasses: changing.length,
      });
    }
    return results;
  } finally {
    await bench.close();
    await Promise.all([slack.close(), gitlab.close()]);
  }
}

/** Item 3 of the report: GitLab requests per tracker pass against requests in flight. */
export async function gitlabCallsSection(): Promise<Section> {
  const results = await gitlabCalls([1, 10, 100, 1000]);
  const count = (n: number) => n.toLocaleString("en-US");
  const body = `Requests are asked for through Slack, as people would, up to 1, 10, 100 and 1,000 in flight;
the tracker's own timer is set to an hour, and the benchmark runs its passes (\`tracker.tick()\`),
counting the HTTP requests the fake GitLab receives during each. After new requests, two passes
catch up (the first reads each new pipeline once); then ${PASSES} passes with no pipeline
changing, and up to ${PASSES} passes each after one more pipeline has moved (its first job queued:
the pipeline's status, and so its \`updated_at\`, changes). Counts are the median over those
passes (with one request in flight, only one pipeline can make that move). The baseline is what
reading each pipeline on every pass would cost: one request per request in flight. Once a minute,
the list also asks again for the changes of the minute before the newest seen (GitLab may commit
a change after a later one was listed): a page for each 100 of them, on one pass a minute, which
the medians leave out.

Target: for requests that are not changing, a constant number of GitLab requests per pass (the
same for 1 and 1,000).

${table(
  [
    "requests in flight",
    "baseline: one read per pipeline",
    "vmbot, none changing",
    "vmbot, one changing",
    "pass time, none changing",
  ],
  results.map((r) => [
    count(r.inFlight),
    count(r.inFlight),
    String(r.idle),
    r.changingPasses === 0 ? "–" : String(r.oneChanging),
    ms(r.idlePassMs),
  ]),
)}`;
  const idle = results.map((r) => r.idle);
  const constant = idle.every((n) => n === idle[0]);
  return {
    body,
    verdicts: [
      {
        target: "GitLab requests per pass for idle requests constant (1 to 1,000 in flight)",
        figure: results.map((r) => `${r.idle} at ${count(r.inFlight)}`).join(", "),
        met: constant,
      },
    ],
  };
}
