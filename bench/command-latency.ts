import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { App, HTTPReceiver } from "@slack/bolt";
import { loadConfig } from "../src/config.js";
import { startVmbot } from "../src/start.js";
import { startFakeGitlab } from "../test/fakes/gitlab.js";
import { createSlackSigner, type SlackSigner } from "../test/fakes/slack-signer.js";
import { startFakeSlack, type FakeSlack } from "../test/fakes/slack.js";
import { PLATFORM_INPUTS } from "../test/support/harness.js";

const BOT_TOKEN = "xoxb-1111111111-2222222222-BenchBotToken000001";
const SIGNING_SECRET = "0123456789abcdef0123456789abcdef";
const GITLAB_TOKEN = "glpat-BenchGitlabToken00000001";

export interface LatencyResult {
  name: string;
  samples: number;
  p50: number;
  p99: number;
}

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? Number.NaN;
}

/** Time from posting a signed `/vm create` to the fake Slack receiving `views.open`. */
async function measure(
  name: string,
  slack: FakeSlack,
  signer: SlackSigner,
  samples: number,
): Promise<LatencyResult> {
  const times: number[] = [];
  for (let i = 0; i < samples + 20; i += 1) {
    const triggerId = slack.issueTriggerId();
    const started = performance.now();
    const delivery = signer.slashCommand({
      text: "create web-01",
      userId: "U0BENCH",
      channelId: "C0BENCH",
      triggerId,
    });
    await slack.waitFor("views.open", (call) => call.args.trigger_id === triggerId, 10_000);
    const elapsed = performance.now() - started;
    await delivery;
    if (i >= 20) times.push(elapsed); // the first 20 warm the JIT and connections
  }
  times.sort((a, b) => a - b);
  return { name, samples, p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** The baseline: a bare Bolt app that opens a fixed modal and does nothing else. */
async function startBareBolt(slack: FakeSlack): Promise<{ url: string; server: Server }> {
  const receiver = new HTTPReceiver({ signingSecret: SIGNING_SECRET });
  const app = new App({
    token: BOT_TOKEN,
    receiver,
    tokenVerificationEnabled: false,
    clientOptions: { slackApiUrl: slack.apiUrl },
  });
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
  const server = createServer(receiver.requestListener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const silent = new Writable({
  write(_chunk, _encoding, callback) {
    callback();
  },
});

export async function commandLatency(samples: number): Promise<LatencyResult[]> {
  const slack = await startFakeSlack({ botToken: BOT_TOKEN, triggerTtlMs: 60_000 });
  const gitlab = await startFakeGitlab({
    token: GITLAB_TOKEN,
    projects: [{ id: 42, path: "infra/vms", inputs: PLATFORM_INPUTS }],
  });
  const dir = mkdtempSync(join(tmpdir(), "vmbot-bench-"));
  const bare = await startBareBolt(slack);
  const bot = await startVmbot(
    loadConfig({
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      GITLAB_URL: gitlab.url,
      GITLAB_TOKEN,
      GITLAB_PROJECT: "infra/vms",
      APPROVERS: "U0APPROVER",
      ADMINS: "U0ADMIN",
      VMBOT_DB: join(dir, "vmbot.sqlite"),
      PORT: "0",
    }),
    { logDestination: silent },
  );
  const signerFor = (url: string) =>
    createSlackSigner({ eventsUrl: `${url}/slack/events`, signingSecret: SIGNING_SECRET, slack });
  try {
    // Interleave the two so that machine noise falls on both alike.
    const results: LatencyResult[][] = [];
    const perRound = Math.ceil(samples / 3);
    const runBare = () => measure("bare Bolt app", slack, signerFor(bare.url), perRound);
    const runBot = () =>
      measure("vmbot", slack, signerFor(`http://127.0.0.1:${bot.port}`), perRound);
    for (let round = 0; round < 3; round += 1) {
      // Alternate which goes first, so neither always meets a warmer or a fuller fake.
      if (round % 2 === 0) {
        const first = await runBare();
        results.push([first, await runBot()]);
      } else {
        const first = await runBot();
        results.push([await runBare(), first]);
      }
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[1] ?? Number.NaN;
    return [0, 1].map((i) => ({
      name: results[0]![i]!.name,
      samples: results.reduce((n, r) => n + r[i]!.samples, 0),
      p50: median(results.map((r) => r[i]!.p50)),
      p99: median(results.map((r) => r[i]!.p99)),
    }));
  } finally {
    await bot.stop(1_000);
    await new Promise((resolve) => bare.server.close(resolve));
    await Promise.all([slack.close(), gitlab.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}
