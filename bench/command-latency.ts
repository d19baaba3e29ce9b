import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Gitlab } from "@gitbeaker/rest";
import { App, HTTPReceiver } from "@slack/bolt";
import { NODE_LIST_BUDGET_MS } from "../src/commands/create.js";
import { CREATE_MODAL } from "../src/ids.js";
import type { FakeGitlab } from "../sandbox/simulators/gitlab/index.js";
import { startFakeProxmox } from "../sandbox/simulators/proxmox/index.js";
import type { SlackSigner } from "../sandbox/simulators/slack/signer.js";
import type { FakeSlack } from "../sandbox/simulators/slack/index.js";
import { CHANNEL, PROJECT_PATH, REQUESTER } from "../test/support/harness.js";
import { TEST_SECRETS } from "../test/support/secrets.js";
import { ms, plural, ratio, setting, table, type Section } from "./report.js";
import { median, percentile } from "./stats.js";
import {
  isPipelineCreate,
  openCreateForm,
  signerFor,
  sleep,
  startBot,
  startGitlab,
  startSlack,
  submitForm,
  until,
} from "./support.js";

export interface LatencyResult {
  name: string;
  samples: number;
  p50: number;
  p99: number;
}

export interface CommandLatencyResults {
  /** `/vm create` → `views.open`: the bare Bolt app, vmbot, vmbot with slow services. */
  form: LatencyResult[];
  /** Form submission → the pipeline create call reaching GitLab: the bare Bolt app, vmbot. */
  submission: LatencyResult[];
  /** `/vm create` with slow services once the node list has gone stale, in ms, one per sample. */
  staleForm: number[];
  /** Names of the services made slow. */
  slowServices: string[];
  slowDelayMs: number;
}

/** How long each slow service takes to answer. */
const SLOW_DELAY_MS = 2_000;
/** The node directory's freshness (`createNodeDirectory`'s default): older lists are read again. */
const NODE_LIST_MAX_AGE_MS = 15_000;
/** The first requests of each run warm the JIT and the connections, and are not counted. */
const WARM_UP = 20;

interface RunningService {
  /** What the bot's environment needs to use it. */
  env: Record<string, string>;
  close(): Promise<void>;
  /** The fake itself, for the one the benchmarks watch. */
  gitlab?: FakeGitlab;
}

/** A service the bot calls, as a fake that answers every request after `delayMs`. */
interface Service {
  name: string;
  start(delayMs: number): Promise<RunningService>;
}

/**
 * Every service vmbot calls besides Slack. Both vmbot variants get all of them, fast for one and
 * slow for the other; a service the bot comes to call is one more entry here.
 */
const SERVICES: readonly Service[] = [
  {
    name: "GitLab",
    async start(delayMs) {
      const gitlab = await startGitlab();
      if (delayMs > 0) gitlab.failNext({ path: /./ }, { delayMs }, { times: Infinity });
      return { env: { GITLAB_URL: gitlab.url }, close: () => gitlab.close(), gitlab };
    },
  },
  {
    name: "Proxmox",
    async start(delayMs) {
      const proxmox = await startFakeProxmox({ token: TEST_SECRETS.proxmoxToken });
      proxmox.setDelay(delayMs);
      return {
        env: { PROXMOX_URL: proxmox.url, PROXMOX_TOKEN: TEST_SECRETS.proxmoxToken },
        close: () => proxmox.close(),
      };
    },
  },
];

/** vmbot with every service in `SERVICES` answering after `delayMs`. */
async function startVmbotWithServices(slack: FakeSlack, delayMs: number) {
  const services = await Promise.all(SERVICES.map((service) => service.start(delayMs)));
  const env = Object.assign({}, ...services.map((service) => service.env)) as Record<
    string,
    string
  >;
  const gitlab = services.find((service) => service.gitlab)?.gitlab;
  if (gitlab === undefined) throw new Error("no fake GitLab among the services");
  const bench = await startBot({ slack, gitlab }, env);
  return {
    bench,
    gitlab,
    async close() {
      await bench.close();
      await Promise.all(services.map((service) => service.close()));
    },
  };
}

/** The baseline: a bare Bolt app that opens a fixed modal, and starts a pipeline on submission. */
async function startBareBolt(slack: FakeSlack, gitlab: FakeGitlab) {
  const receiver = new HTTPReceiver({ signingSecret: TEST_SECRETS.signingSecret });
  const app = new App({
    token: TEST_SECRETS.botToken,
    receiver,
    tokenVerificationEnabled: false,
    clientOptions: { slackApiUrl: slack.apiUrl },
  });
  const api = new Gitlab({ host: gitlab.url, token: TEST_SECRETS.gitlabToken });
  app.command("/vm", async ({ ack, client, command }) => {
    await ack();
    await client.views.open({
      trigger_id: command.trigger_id,
      view: {
        type: "modal",
        title: { type: "plain_text", text: "New VM" },
        submit: { type: "plain_text", text: "Create" },
        blocks: [
          {
            type: "input",
            block_id: "vm_name",
            label: { type: "plain_text", text: "Name" },
            element: { type: "plain_text_input", action_id: "vm_name" },
          },
        ],
      },
    });
  });
  // gitbeaker's types do not list `inputs`; it sends them on, as it does for vmbot.
  const pipeline: { inputs: Record<string, string>; variables?: [] } = {
    inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" },
  };
  app.view(CREATE_MODAL, async ({ ack }) => {
    await ack();
    await api.Pipelines.create(PROJECT_PATH, "main", pipeline);
  });
  const server: Server = createServer(receiver.requestListener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: () => new Promise<unknown>((resolve) => server.close(resolve)),
  };
}

function summary(name: string, times: number[]): LatencyResult {
  const sorted = [...times].sort((a, b) => a - b);
  return { name, samples: times.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/** One `/vm create`: from posting the signed command to the fake Slack receiving `views.open`. */
async function openForm(slack: FakeSlack, signer: SlackSigner): Promise<number> {
  const triggerId = slack.issueTriggerId();
  const started = performance.now();
  const delivery = signer.slashCommand({
    text: "create web-01",
    userId: REQUESTER,
    channelId: CHANNEL,
    triggerId,
  });
  await slack.waitFor("views.open", (call) => call.args.trigger_id === triggerId, 10_000);
  const elapsed = performance.now() - started;
  await delivery;
  return elapsed;
}

async function measureForm(name: string, slack: FakeSlack, signer: SlackSigner, samples: number) {
  const times: number[] = [];
  for (let i = 0; i < samples + WARM_UP; i += 1) {
    const elapsed = await openForm(slack, signer);
    if (i >= WARM_UP) times.push(elapsed);
  }
  return summary(name, times);
}

/** One submission: from posting the signed form to the fake GitLab receiving the create call. */
async function measureSubmission(
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
    const delivery = submitForm(signer, form, `sub-${i}`);
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
async function interleaved(
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

/**
 * `/vm create` → `views.open` for a bare Bolt app, vmbot, and vmbot whose services all take
 * `SLOW_DELAY_MS`; then form submission → pipeline create call for the bare app and vmbot; then
 * `staleSamples` forms with slow services after the node list has had time to go stale.
 */
export async function commandLatency(options: {
  samples: number;
  submissionSamples: number;
  staleSamples: number;
}): Promise<CommandLatencyResults> {
  const rounds = 3;
  const slack = await startSlack();
  const fast = await startVmbotWithServices(slack, 0);
  const slow = await startVmbotWithServices(slack, SLOW_DELAY_MS);
  // The baseline starts its pipelines in the fast vmbot's GitLab: both pay the same for it.
  const gitlab = fast.gitlab;
  const bare = await startBareBolt(slack, gitlab);
  try {
    const bareSigner = signerFor(slack, bare.url);
    const perRound = Math.ceil(options.samples / rounds);
    const form = await interleaved(
      [
        () => measureForm("bare Bolt app", slack, bareSigner, perRound),
        () => measureForm("vmbot", slack, fast.bench.signer, perRound),
        () => measureForm("vmbot, slow services", slack, slow.bench.signer, perRound),
      ],
      rounds,
    );

    const submitted = await openCreateForm(slack, fast.bench.signer);
    const perRoundSubmissions = Math.ceil(options.submissionSamples / rounds);
    const submission = await interleaved(
      [
        () =>
          measureSubmission("bare Bolt app", gitlab, bareSigner, submitted, perRoundSubmissions),
        () => measureSubmission("vmbot", gitlab, fast.bench.signer, submitted, perRoundSubmissions),
      ],
      rounds,
    );

    const staleForm: number[] = [];
    for (let i = 0; i < options.staleSamples; i += 1) {
      // The last read of the node list may still be under way: it ends SLOW_DELAY_MS later.
      await sleep(NODE_LIST_MAX_AGE_MS + SLOW_DELAY_MS + 500);
      staleForm.push(await openForm(slack, slow.bench.signer));
    }
    return {
      form,
      submission,
      staleForm,
      slowServices: SERVICES.map((service) => service.name),
      slowDelayMs: SLOW_DELAY_MS,
    };
  } finally {
    await slow.close();
    await fast.close();
    await bare.close();
    await slack.close();
  }
}

/** Item 1 of the report: the form, with fast and slow services, and the submission. */
export async function commandLatencySection(): Promise<Section> {
  const r = await commandLatency({
    samples: setting("BENCH_SAMPLES", 600),
    submissionSamples: setting("BENCH_SUBMIT_SAMPLES", 300),
    staleSamples: setting("BENCH_STALE_SAMPLES", 3),
  });
  const [bare, vmbot, slow] = r.form;
  const [bareSubmit, vmbotSubmit] = r.submission;
  if (!bare || !vmbot || !slow || !bareSubmit || !vmbotSubmit) {
    throw new Error("the command latency benchmark returned nothing");
  }
  const slowly = `${r.slowServices.join(" and ")} taking ${ms(r.slowDelayMs)}`;
  const stale: LatencyResult = {
    name: `vmbot, ${slowly}, node list stale`,
    samples: r.staleForm.length,
    p50: median(r.staleForm),
    p99: percentile(
      [...r.staleForm].sort((a, b) => a - b),
      99,
    ),
  };
  const row = (result: LatencyResult, baseline: LatencyResult, label = result.name) => [
    label,
    String(result.samples),
    ms(result.p50),
    ms(result.p99),
    ratio(result.p99, baseline.p99),
  ];
  const within = (result: LatencyResult) => result.p99 <= 1.5 * bare.p99;
  const figure = (result: LatencyResult, what = "p99") =>
    `${what} ${ms(result.p99)} against ${ms(bare.p99)}: ${ratio(result.p99, bare.p99)}`;
  const formTable = table(
    ["`/vm create` → `views.open`", "requests", "p50", "p99", "p99 ÷ baseline's"],
    [
      row(bare, bare, "bare Bolt app (baseline)"),
      row(vmbot, bare),
      row(slow, bare, `vmbot, ${slowly}`),
      ...(stale.samples > 0 ? [row(stale, bare)] : []),
    ],
  );
  const submitTable = table(
    [
      "form submitted → create call reaches GitLab",
      "submissions",
      "p50",
      "p99",
      "p99 ÷ baseline's",
    ],
    [row(bareSubmit, bareSubmit, "bare Bolt app (baseline)"), row(vmbotSubmit, bareSubmit)],
  );
  const body = `Signed \`/vm create\` slash commands are posted to the bot in HTTP mode, one at a time; the
time is from the post until the fake Slack receives \`views.open\`. The baseline is a bare Bolt
app in the same process that acknowledges and opens a fixed modal with no other work. The
contenders take turns in three rounds whose order rotates, and the median round's p50 and p99
are shown; the first ${WARM_UP} requests of each round warm up and are not counted.

vmbot runs twice: with the services it calls besides Slack (${r.slowServices.join(", ")}) fast,
and with each of them answering every request after ${ms(r.slowDelayMs)}. Of these, the form
reads only Proxmox's node list, which the bot keeps for ${ms(NODE_LIST_MAX_AGE_MS)}. When it is
older, the form opens at once with that older list (saying how old it is) and updates it in place
when Proxmox answers; only before Proxmox has ever answered does the form wait for it, up to
\`NODE_LIST_BUDGET_MS\` (${ms(NODE_LIST_BUDGET_MS)}). Commands back to back keep the list fresh,
so the last row is commands sent once the list has gone stale, as it has for nearly every
\`/vm create\` in ordinary use, where they come minutes apart (${plural(stale.samples, "command")},
${ms(NODE_LIST_MAX_AGE_MS + r.slowDelayMs + 500)} apart; p99 is the slowest).

Target: p99 within 1.5× the baseline's, with and without slow services.

${formTable}

Form submission: one form is submitted again and again (each time as a new form), signed, and
the time is from the post until the fake GitLab receives \`POST /projects/:id/pipeline\`. The bare
Bolt app acknowledges and creates a pipeline with gitbeaker; vmbot acknowledges, stores the
request, posts its message in the channel, then creates the pipeline. There is no target: the
ratio is the price of the stored request and its message.

${submitTable}`;
  return {
    body,
    verdicts: [
      {
        target: "`/vm create` p99 within 1.5× bare Bolt",
        figure: figure(vmbot),
        met: within(vmbot),
      },
      {
        target: `\`/vm create\` p99 within 1.5× bare Bolt, ${slowly}`,
        figure: figure(slow),
        met: within(slow),
      },
      ...(stale.samples > 0
        ? [
            {
              target: `\`/vm create\` within 1.5× bare Bolt's p99, ${slowly}, node list stale`,
              figure: figure(stale, `slowest of ${stale.samples}:`),
              met: within(stale),
            },
          ]
        : []),
    ],
  };
}
