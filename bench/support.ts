import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { imageNodeOptions } from "./image.js";
import { loadConfig } from "../src/config.js";
import type { ServerLimits } from "../src/server.js";
import { startVmbot, type RunningVmbot, type StartOptions } from "../src/start.js";
import {
  startFakeGitlab,
  VM_PIPELINE_INPUTS,
  type FakeGitlab,
} from "../sandbox/simulators/gitlab/index.js";
import type { RecordedRequest } from "../sandbox/simulators/http.js";
import {
  createSlackSigner,
  stateValuesFor,
  type SlackSigner,
} from "../sandbox/simulators/slack/signer.js";
import { startFakeSlack, type FakeSlack } from "../sandbox/simulators/slack/index.js";
import { CHANNEL, fakeBotEnv, PROJECT_PATH, REQUESTER } from "../test/support/harness.js";
import { TEST_SECRETS } from "../test/support/secrets.js";

/** Where the in-process bots' log lines go: formatted as in production, then dropped. */
export const silent = new Writable({
  write(_chunk, _encoding, callback) {
    callback();
  },
});

export function startSlack(): Promise<FakeSlack> {
  return startFakeSlack({ botToken: TEST_SECRETS.botToken });
}

/** The VM pipeline's project, as the tests have it. */
export function startGitlab(): Promise<FakeGitlab> {
  return startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, inputs: VM_PIPELINE_INPUTS }],
  });
}

/**
 * The environment of a bot wired to the fakes, as an operator would configure it (info logs,
 * the default POLL_INTERVAL_MS) unless `change` says otherwise.
 */
export function benchEnv(
  fakes: { slack: { apiUrl: string }; gitlab: { url: string } },
  db: string,
  change: Record<string, string | undefined> = {},
): Record<string, string> {
  return fakeBotEnv(fakes, db, { LOG_LEVEL: "info", ...change });
}

/** POLL_INTERVAL_MS as a bot started with `benchEnv(…, change)` reads it. */
export function pollIntervalMs(change: Record<string, string | undefined> = {}): number {
  const fakes = { slack: { apiUrl: "http://127.0.0.1/api/" }, gitlab: { url: "http://127.0.0.1" } };
  return loadConfig(benchEnv(fakes, "vmbot.sqlite", change)).pollIntervalMs;
}

export interface BenchBot {
  bot: RunningVmbot;
  url: string;
  signer: SlackSigner;
  close(): Promise<void>;
}

/**
 * The real bot in this process (HTTP mode, SQLite in a temporary directory), on the fakes;
 * `start` for what differs from production (`nodeListMaxAgeMs`, say).
 */
export async function startBot(
  fakes: { slack: FakeSlack; gitlab: { url: string } },
  change: Record<string, string | undefined> = {},
  httpLimits: Partial<ServerLimits> = {},
  start: Pick<StartOptions, "nodeListMaxAgeMs"> = {},
): Promise<BenchBot> {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-bench-"));
  const bot = await startVmbot(loadConfig(benchEnv(fakes, join(dir, "vmbot.sqlite"), change)), {
    logDestination: silent,
    httpLimits,
    ...start,
  });
  const url = `http://127.0.0.1:${bot.port}`;
  return {
    bot,
    url,
    signer: signerFor(fakes.slack, url),
    async close() {
      await bot.stop(2_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Signs Slack's requests to a bot at `url` as Slack would. */
export function signerFor(slack: FakeSlack, url: string): SlackSigner {
  return createSlackSigner({
    eventsUrl: `${url}/slack/events`,
    signingSecret: TEST_SECRETS.signingSecret,
    slack,
  });
}

/**
 * Opens the create form once, for submitting many times: a copy without the view's ID is a new
 * form to the bot each time it is submitted (Slack would give each opened form its own ID).
 */
export async function openCreateForm(slack: FakeSlack, signer: SlackSigner): Promise<object> {
  const triggerId = slack.issueTriggerId();
  await signer.slashCommand({
    text: "create web-01",
    userId: REQUESTER,
    channelId: CHANNEL,
    triggerId,
  });
  await slack.waitFor("views.open", (call) => call.args.trigger_id === triggerId, 10_000);
  const view = slack.views.at(-1);
  if (view === undefined) throw new Error("the bot opened no form");
  return Object.fromEntries(Object.entries(view).filter(([key]) => key !== "id"));
}

/** Submissions so far, each given an address of its own. */
let submitted = 0;

/**
 * Submits the form for a VM named `name`, as a person who filled it in would, with an address
 * no earlier submission used (vmbot refuses one that a request on its way holds): hosts of
 * 192.168.0.0/16, where the default gateway is.
 */
export function submitForm(signer: SlackSigner, form: object, name: string) {
  const blocks = (form as { blocks: readonly unknown[] }).blocks;
  const n = submitted++;
  const ip = `192.168.${2 + (Math.floor(n / 250) % 250)}.${(n % 250) + 2}/16`;
  return signer.viewSubmission({
    view: form,
    values: stateValuesFor({ blocks }, { vm_name: name, vm_ip: ip }),
    userId: REQUESTER,
  });
}

/**
 * Waits for `check` to hold, checking every `everyMs`; with 0, on every turn of the event loop,
 * for timing to well under a millisecond.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  { timeoutMs = 10_000, everyMs = 0 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await (everyMs === 0 ? new Promise((resolve) => setImmediate(resolve)) : sleep(everyMs));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Whether a request to the fake GitLab is a pipeline list (one tracker pass reads one). */
export function isPipelineList(request: RecordedRequest): boolean {
  return request.method === "GET" && request.path.endsWith("/pipelines");
}

/** Whether a request to the fake GitLab creates a pipeline. */
export function isPipelineCreate(request: RecordedRequest): boolean {
  return request.method === "POST" && request.path.endsWith("/pipeline");
}

/**
 * Asks for `count` VMs through Slack (the form submitted `count` times, `concurrency` at a time)
 * and waits until each request has its pipeline. Returns the new pipelines' IDs.
 */
export async function requestVms(
  fakes: { gitlab: FakeGitlab },
  bench: BenchBot,
  form: object,
  count: number,
  concurrency = 1,
): Promise<number[]> {
  const before = fakes.gitlab.pipelines.length;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next += 1;
      await submitForm(bench.signer, form, `vm-${before + next}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  const created = () => fakes.gitlab.pipelines.slice(before).map((p) => p.id);
  await until(
    async () => {
      const ids = new Set(created());
      const recorded = (await bench.bot.store.listActive()).filter((r) =>
        ids.has(r.pipelineId ?? -1),
      );
      return ids.size === count && recorded.length === count;
    },
    `${count} requests with their pipelines`,
    { timeoutMs: 120_000, everyMs: 20 },
  );
  return created();
}

/**
 * Node options for the bots the benchmarks start in their own processes: the container image's
 * (its Dockerfile's `CMD`), then `BENCH_BOT_NODE_OPTIONS` (e.g. `--max-semi-space-size=16`) to
 * compare another runtime setting on the same benchmarks (the last of an option given twice wins).
 */
export function botNodeOptions(): string[] {
  const extra = (process.env.BENCH_BOT_NODE_OPTIONS ?? "").split(/\s+/).filter((o) => o !== "");
  return [...imageNodeOptions(), ...extra];
}
