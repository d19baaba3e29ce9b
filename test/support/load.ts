import type { FakeGitlab } from "../../sandbox/simulators/gitlab/index.js";
import { stateValuesFor, type SlackSigner } from "../../sandbox/simulators/slack/signer.js";
import type { FakeSlack } from "../../sandbox/simulators/slack/index.js";
import { CHANNEL, REQUESTER } from "./harness.js";
import { waitFor } from "./wait.js";

/** The `i`-th load request's address: hosts of 192.168.0.0/16, where the default gateway is. */
const loadAddress = (i: number) => `192.168.${1 + Math.floor(i / 250)}.${(i % 250) + 2}/16`;

export interface LoadTarget {
  slack: FakeSlack;
  gitlab: FakeGitlab;
  signer: SlackSigner;
  /** How many requests the bot's store holds with their pipeline recorded. */
  requestsWithPipeline: () => number | Promise<number>;
}

export interface LoadResult {
  /** Signed `/vm create` commands sent at once, and how many were answered 200. */
  commands: number;
  commandsAcked: number;
  /**
   * Each command's time from its post to the bot's answer (its acknowledgement), in ms; infinite
   * for one whose connection failed.
   */
  commandAckMs: number[];
  /** Forms the bot opened (`views.open` calls that Slack accepted). */
  formsOpened: number;
  /** Slack's errors for the views.open calls it refused (an expired trigger_id, say). */
  formsRefused: string[];
  /** Submissions sent at once, and how many were answered 200 with no error. */
  submissions: number;
  submissionsAcked: number;
  /** Each submission's time from its post to the bot's answer, in ms. */
  submissionAckMs: number[];
  /** Pipelines created in GitLab, and requests in the store that recorded theirs. */
  pipelines: number;
  requestsWithPipeline: number;
  /** From the first command sent to the last request recording its pipeline. */
  elapsedMs: number;
}

/**
 * A request whose connection failed (closed by the bot, or reset): not answered, so not
 * acknowledged, and its time unbounded.
 */
const unanswered = () => ({ status: 0, body: "", elapsedMs: Number.POSITIVE_INFINITY });

/**
 * Slack's traffic at a burst: `count` signed `/vm create` commands at once, then `count` form
 * submissions at once; waits until every request has its pipeline (or `timeoutMs`).
 */
export async function runLoad(
  target: LoadTarget,
  count: number,
  timeoutMs = 120_000,
): Promise<LoadResult> {
  const { slack, gitlab, signer } = target;
  const started = Date.now();
  const viewsBefore = slack.views.length;
  const opensBefore = slack.callsTo("views.open").length;
  const pipelinesBefore = gitlab.pipelines.length;
  const recordedBefore = await target.requestsWithPipeline();
  const names = Array.from({ length: count }, (_, i) => `load-${String(i + 1).padStart(3, "0")}`);
  const commands = await Promise.all(
    names.map((name) =>
      signer
        .slashCommand({ text: `create ${name}`, userId: REQUESTER, channelId: CHANNEL })
        .catch(unanswered),
    ),
  );
  const commandsAcked = commands.filter((delivery) => delivery.status === 200).length;
  // Every acknowledged command leads to one views.open call, which Slack accepts or refuses.
  await waitFor(
    () => slack.callsTo("views.open").length - opensBefore >= commandsAcked || undefined,
    "a views.open call for every command",
    timeoutMs,
  );
  const refused = slack
    .callsTo("views.open")
    .slice(opensBefore)
    .filter((call) => !call.ok)
    .map((call) => call.error ?? "refused");
  const forms = slack.views.slice(viewsBefore);
  // When Slack refused every form of the burst, one the bot opened before it stands in.
  const first = forms[0] ?? slack.views[viewsBefore - 1];
  if (first === undefined) throw new Error("the bot opened no form");
  // `count` forms submitted at once: each opened one, and for any that Slack refused to open, a
  // copy of the first without its ID, which is a form of its own to the bot.
  const copy = Object.fromEntries(Object.entries(first).filter(([key]) => key !== "id"));
  const submissions = await Promise.all(
    names.map((name, i) => {
      const view = forms[i] ?? copy;
      return signer
        .viewSubmission({
          view,
          // Each its own address (a second request with one already held is refused).
          values: stateValuesFor(first, { vm_name: name, vm_ip: loadAddress(i) }),
          userId: REQUESTER,
        })
        .catch(unanswered);
    }),
  );
  const submissionsAcked = submissions.filter(
    (delivery) => delivery.status === 200 && !delivery.body.includes('"errors"'),
  ).length;
  const recorded = async () => (await target.requestsWithPipeline()) - recordedBefore;
  await waitFor(
    async () =>
      (gitlab.pipelines.length - pipelinesBefore >= submissionsAcked &&
        (await recorded()) >= submissionsAcked) ||
      undefined,
    "every request's pipeline",
    timeoutMs,
  );
  return {
    commands: count,
    commandsAcked,
    commandAckMs: commands.map((delivery) => delivery.elapsedMs),
    formsOpened: forms.length,
    formsRefused: refused,
    submissions: count,
    submissionsAcked,
    submissionAckMs: submissions.map((delivery) => delivery.elapsedMs),
    pipelines: gitlab.pipelines.length - pipelinesBefore,
    requestsWithPipeline: await recorded(),
    elapsedMs: Date.now() - started,
  };
}
