import type { FakeGitlab } from "../../src/simulators/gitlab.js";
import { stateValuesFor, type SlackSigner } from "../../src/simulators/slack-signer.js";
import type { FakeSlack } from "../../src/simulators/slack.js";
import type { Store } from "../../src/store/store.js";
import { CHANNEL, REQUESTER } from "./harness.js";

export interface LoadTarget {
  slack: FakeSlack;
  gitlab: FakeGitlab;
  signer: SlackSigner;
  store: Store;
}

export interface LoadResult {
  /** Signed `/vm create` commands sent at once, and how many were answered 200. */
  commands: number;
  commandsAcked: number;
  /** Forms the bot opened (`views.open` calls that Slack accepted). */
  formsOpened: number;
  /** Submissions sent at once (one per opened form), and how many were answered 200 with no error. */
  submissions: number;
  submissionsAcked: number;
  /** Pipelines created in GitLab, and requests in the store that recorded theirs. */
  pipelines: number;
  requestsWithPipeline: number;
  /** From the first command sent to the last request recording its pipeline. */
  elapsedMs: number;
}

async function until(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Slack's traffic at a burst: `count` signed `/vm create` commands at once, then a submission of
 * every form they opened, at once; waits until every request has its pipeline (or `timeoutMs`).
 */
export async function runLoad(
  target: LoadTarget,
  count: number,
  timeoutMs = 120_000,
): Promise<LoadResult> {
  const { slack, gitlab, signer, store } = target;
  const started = Date.now();
  const viewsBefore = slack.views.length;
  const pipelinesBefore = gitlab.pipelines.length;
  const names = Array.from({ length: count }, (_, i) => `load-${String(i + 1).padStart(3, "0")}`);
  const commands = await Promise.all(
    names.map((name) =>
      signer.slashCommand({ text: `create ${name}`, userId: REQUESTER, channelId: CHANNEL }),
    ),
  );
  const commandsAcked = commands.filter((delivery) => delivery.status === 200).length;
  await until(() => slack.views.length - viewsBefore >= commandsAcked, "the forms", timeoutMs);
  const forms = slack.views.slice(viewsBefore);
  const submissions = await Promise.all(
    forms.map((view, i) =>
      signer.viewSubmission({
        view,
        values: stateValuesFor(view, {
          vm_name: names[i] ?? `load-extra-${i}`,
          vm_ip: "192.168.1.50/24",
        }),
        userId: REQUESTER,
      }),
    ),
  );
  const submissionsAcked = submissions.filter(
    (delivery) => delivery.status === 200 && !delivery.body.includes('"errors"'),
  ).length;
  const recorded = () => store.listActive().filter((request) => request.pipelineId !== null).length;
  await until(
    () =>
      gitlab.pipelines.length - pipelinesBefore >= submissionsAcked &&
      recorded() >= submissionsAcked,
    "every request's pipeline",
    timeoutMs,
  );
  return {
    commands: count,
    commandsAcked,
    formsOpened: forms.length,
    submissions: forms.length,
    submissionsAcked,
    pipelines: gitlab.pipelines.length - pipelinesBefore,
    requestsWithPipeline: recorded(),
    elapsedMs: Date.now() - started,
  };
}
