import type { FakeGitlab } from "../sandbox/simulators/gitlab/index.js";
import type { SlackSigner } from "../sandbox/simulators/slack/signer.js";
import type { FakeSlack } from "../sandbox/simulators/slack/index.js";
import { CHANNEL, REQUESTER } from "../test/support/harness.js";
import { median, percentile } from "./stats.js";
import { isPipelineCreate, sleep, submitForm, until } from "./support.js";

/** How the command latency benchmark times a form opening or a submission, one at a time. */

export interface LatencyResult {
  name: string;
  samples: number;
  p50: number;
  p99: number;
}

/** The first requests of each run warm the JIT and the connections, and are not counted. */
export const WARM_UP = 20;

export function summary(name: string, times: number[]): LatencyResult {
  const sorted = [...times].sort((a, b) => a - b);
  return { name, samples: times.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/**
 * One `/vm create`: from posting the signed command to the fake Slack receiving `views.open`;
 * with the view it opened.
 */
export async function openForm(
  slack: FakeSlack,
  signer: SlackSigner,
): Promise<{ elapsed: number; view: unknown }> {
  const triggerId = slack.issueTriggerId();
  const started = performance.now();
  const delivery = signer.slashCommand({
    text: "create web-01",
    userId: REQUESTER,
    channelId: CHANNEL,
    triggerId,
  });
  const call = await slack.waitFor("views.open", (c) => c.args.trigger_id === triggerId, 10_000);
  const elapsed = performance.now() - started;
  await delivery;
  return { elapsed, view: call.args.view };
}

export async function measureForm(
  name: string,
  slack: FakeSlack,
  signer: SlackSigner,
  samples: number,
) {
  const times: number[] = [];
  for (let i = 0; i < samples + WARM_UP; i += 1) {
    const { elapsed } = await openForm(slack, signer);
    if (i >= WARM_UP) times.push(elapsed);
  }
  return summary(name, times);
}

/** What the form says when it opens with an older node list (`nodeChoice` in commands/create.ts). */
const OLDER_LIST_HINT = "Proxmox is being asked again";

export interface PacedResult extends LatencyResult {
  /** Forms that opened with the older node list. */
  olderList: number;
  /**
   * The forms that opened with the older node list alone: a Proxmox answer landing in the same
   * instant as a command gives its form the new list (1 or 2 in 300, as before forms waited for
   * the requests' turns), and that form did not take the path the figure is about.
   */
  withOlderList: LatencyResult;
}

/**
 * `/vm create` → `views.open` for each of `signers`, taking turns (the order alternating), one
 * command every `gapMs` whatever the answer's time; `samples` each, after the warm-up. The p99
 * is over every sample.
 */
export async function measurePaced(
  slack: FakeSlack,
  signers: readonly { name: string; signer: SlackSigner }[],
  samples: number,
  gapMs: number,
): Promise<PacedResult[]> {
  const times = signers.map((): number[] => []);
  const olderTimes = signers.map((): number[] => []);
  for (let i = 0; i < samples + WARM_UP; i += 1) {
    for (let k = 0; k < signers.length; k += 1) {
      const index = (i + k) % signers.length;
      const started = performance.now();
      const { elapsed, view } = await openForm(slack, signers[index]!.signer);
      if (i >= WARM_UP) {
        times[index]?.push(elapsed);
        if (JSON.stringify(view).includes(OLDER_LIST_HINT)) olderTimes[index]?.push(elapsed);
      }
      await sleep(Math.max(0, gapMs - (performance.now() - started)));
    }
  }
  return signers.map(({ name }, index) => ({
    ...summary(name, times[index] ?? []),
    olderList: olderTimes[index]?.length ?? 0,
    withOlderList: summary(`${name}, older list`, olderTimes[index] ?? []),
  }));
}

/** Submissions so far, each for a VM of its own name. */
let submissions = 0;

/** One submission: from posting the signed form to the fake GitLab receiving the create call. */
export async function measureSubmission(
  name: string,
  gitlab: FakeGitlab,
  signer: SlackSigner,
  form: object,
  samples: number,
) {
  const times: number[] = [];
  for (let i = 0; i < samples + WARM_UP; i += 1) {
    const mark = gitlab.mark();
    const started = performance.now();
    // A name of its own: vmbot refuses one that a request on its way holds.
    submissions += 1;
    const delivery = submitForm(signer, form, `sub-${submissions}`);
    await until(() => gitlab.requestsSince(mark).some(isPipelineCreate), "the create call");
    const elapsed = performance.now() - started;
    await delivery;
    await gitlab.settled();
    if (i >= WARM_UP) times.push(elapsed);
  }
  return summary(name, times);
}

/**
 * Runs `contenders` for `rounds` rounds, in an order that rotates each round so that none always
 * meets a warmer or a fuller fake, and reports for each the median round's p50 and p99.
 */
export async function interleaved(
  contenders: readonly (() => Promise<LatencyResult>)[],
  rounds: number,
): Promise<LatencyResult[]> {
  const results: LatencyResult[][] = contenders.map(() => []);
  for (let round = 0; round < rounds; round += 1) {
    for (let k = 0; k < contenders.length; k += 1) {
      const index = (round + k) % contenders.length;
      results[index]?.push(await contenders[index]!());
    }
  }
  return results.map((runs) => ({
    name: runs[0]?.name ?? "",
    samples: runs.reduce((n, r) => n + r.samples, 0),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
  }));
}
