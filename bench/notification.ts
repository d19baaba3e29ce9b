import { PLAN_APPROVE } from "../src/ids.js";
import type { FakeGitlab, JobStatus } from "../sandbox/simulators/gitlab/index.js";
import type { FakeSlack } from "../sandbox/simulators/slack/index.js";
import { TEST_SECRETS } from "../test/support/secrets.js";
import { ms, setting, table, type Section } from "./report.js";
import { median, percentile } from "./stats.js";
import {
  isPipelineList,
  openCreateForm,
  pollIntervalMs,
  requestVms,
  sleep,
  startBot,
  startGitlab,
  startSlack,
  until,
  type BenchBot,
} from "./support.js";

export interface NotificationResult {
  name: string;
  samples: number;
  /** Milliseconds from the plan job's success to the plan message's `chat.update`. */
  median: number;
  p99: number;
  /** The bot's POLL_INTERVAL_MS. */
  intervalMs: number;
}

const PLAN_JOB = "tf:plan";
/** Time to ask for a VM and run its pipeline up to the plan, before a polling sample's mark. */
const PREPARATION_MS = 500;

interface Setup {
  slack: FakeSlack;
  gitlab: FakeGitlab;
  bench: BenchBot;
  form: object;
}

/** Moves the fake runner along until `job` has `status`. */
function runUntil(gitlab: FakeGitlab, pipelineId: number, job: string, status: JobStatus): void {
  for (let step = 0; step < 30; step += 1) {
    if (gitlab.job(pipelineId, job).status === status) return;
    gitlab.advance(pipelineId);
  }
  throw new Error(`${job} of pipeline #${pipelineId} never reached ${status}`);
}

/** A new request whose pipeline is running its plan job. */
async function requestPlanning(setup: Setup): Promise<number> {
  const [pipelineId] = await requestVms(setup, setup.bench, setup.form, 1);
  if (pipelineId === undefined) throw new Error("no pipeline was created");
  runUntil(setup.gitlab, pipelineId, PLAN_JOB, "running");
  return pipelineId;
}

/**
 * Lets the plan job finish (the fake runner then writes its log, as GitLab would show it) and
 * times how long the bot takes to update the request's message with the plan and its buttons.
 */
async function timePlanMessage(setup: Setup, pipelineId: number): Promise<number> {
  const request = (await setup.bench.bot.store.listActive()).find(
    (r) => r.pipelineId === pipelineId,
  );
  if (request?.messageTs == null) throw new Error(`no request message for #${pipelineId}`);
  const ts = request.messageTs;
  const started = performance.now();
  setup.gitlab.advance(pipelineId);
  if (setup.gitlab.job(pipelineId, PLAN_JOB).status !== "success") {
    throw new Error("the plan job did not succeed");
  }
  await setup.slack.waitFor(
    "chat.update",
    (call) => call.args.ts === ts && JSON.stringify(call.args.blocks).includes(PLAN_APPROVE),
    60_000,
  );
  return performance.now() - started;
}

async function withSetup<T>(
  change: Record<string, string>,
  run: (setup: Setup) => Promise<T>,
): Promise<T> {
  const slack = await startSlack();
  const gitlab = await startGitlab();
  const bench = await startBot({ slack, gitlab }, change);
  try {
    const form = await openCreateForm(slack, bench.signer);
    return await run({ slack, gitlab, bench, form });
  } finally {
    await bench.close();
    await Promise.all([slack.close(), gitlab.close()]);
  }
}

function result(name: string, times: number[], intervalMs: number): NotificationResult {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    name,
    samples: times.length,
    median: median(times),
    p99: percentile(sorted, 99),
    intervalMs,
  };
}

/**
 * Polling at the default interval. Where the plan job finishes within the tracker's cycle decides
 * the wait, so the samples spread their marks evenly over one cycle: each is set at a chosen
 * offset from the start of a pass (seen as its pipelines list call reaching GitLab).
 */
export async function pollingLatency(samples: number): Promise<NotificationResult> {
  const intervalMs = pollIntervalMs();
  return withSetup({}, async (setup) => {
    const { gitlab } = setup;
    const lastPassStart = () => gitlab.requests.filter(isPipelineList).at(-1)?.at;
    const times: number[] = [];
    let passStartedAt: number | undefined;
    for (let i = 0; i < samples; i += 1) {
      const pipelineId = await requestPlanning(setup);
      if (passStartedAt === undefined) {
        const mark = gitlab.mark();
        await until(() => gitlab.requestsSince(mark).some(isPipelineList), "a tracker pass", {
          timeoutMs: intervalMs * 3,
          everyMs: 1,
        });
        passStartedAt = lastPassStart();
      }
      const offset = PREPARATION_MS + ((i + 0.5) / samples) * intervalMs;
      await sleep(Math.max(0, (passStartedAt ?? Date.now()) + offset - Date.now()));
      times.push(await timePlanMessage(setup, pipelineId));
      // The pass that posted the plan starts the next sample's cycle.
      passStartedAt = lastPassStart();
    }
    return result(`polling every ${intervalMs / 1000} s`, times, intervalMs);
  });
}

/** With GitLab's webhooks delivered to the bot (and polling at the default interval as well). */
export async function webhookLatency(samples: number): Promise<NotificationResult> {
  const secret = TEST_SECRETS.webhookSecret;
  return withSetup({ GITLAB_WEBHOOK_SECRET: secret }, async (setup) => {
    const { gitlab, bench } = setup;
    gitlab.deliverHooks({ url: `${bench.url}/gitlab/webhook`, secretToken: secret });
    const times: number[] = [];
    for (let i = 0; i < samples; i += 1) {
      const pipelineId = await requestPlanning(setup);
      // Let the hooks for the jobs starting arrive and the bot's pass for them finish first.
      await gitlab.settled();
      await until(
        async () =>
          (await bench.bot.store.listActive()).some(
            (r) => r.pipelineId === pipelineId && r.status === "planning",
          ),
        "the request to be planning",
        { everyMs: 5 },
      );
      await sleep(50);
      times.push(await timePlanMessage(setup, pipelineId));
    }
    return result("webhook", times, pollIntervalMs());
  });
}

/** Item 2 of the report: plan job done → plan message, by webhook and by polling. */
export async function notificationSection(): Promise<Section> {
  const webhook = await webhookLatency(setting("BENCH_WEBHOOK_SAMPLES", 30));
  const polling = await pollingLatency(setting("BENCH_POLL_SAMPLES", 10));
  const pollingLimit = polling.intervalMs + 1_000;
  const rows = [
    [webhook, "< 1 s"],
    [polling, `< ${ms(pollingLimit)} (one interval + 1 s)`],
  ] as const;
  const body = `A request is asked for through Slack and its pipeline run up to the plan job; then the
fake GitLab's runner finishes the plan job (writing its log, as GitLab shows it) and the time is
until the fake Slack receives the \`chat.update\` that shows the plan with its Approve and Reject
buttons. That includes the bot reading the job's log, parsing the plan and uploading it.

With the webhook, the bot has \`GITLAB_WEBHOOK_SECRET\` and the fake GitLab delivers its Pipeline
and Job Hooks to \`/gitlab/webhook\` (polling goes on as well, at its default interval). With
polling alone, what decides the wait is where in the tracker's cycle the job finishes, so the
samples' marks are spread evenly over one cycle, each at a set offset from the start of a pass.
With fewer than 100 samples, p99 is the slowest sample.

${table(
  ["plan job succeeds → plan message updated", "samples", "p50", "p99", "target"],
  rows.map(([r, target]) => [r.name, String(r.samples), ms(r.median), ms(r.p99), target]),
)}`;
  return {
    body,
    verdicts: [
      {
        target: "webhook notification under 1 s",
        figure: `p99 ${ms(webhook.p99)}`,
        met: webhook.p99 < 1_000,
      },
      {
        target: `polling notification under one interval + 1 s (${ms(pollingLimit)})`,
        figure: `p99 ${ms(polling.p99)}`,
        met: polling.p99 < pollingLimit,
      },
    ],
  };
}
