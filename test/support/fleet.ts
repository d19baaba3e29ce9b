import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import {
  startFakeGitlab,
  VM_PIPELINE_INPUTS,
  type FakeGitlab,
} from "../../sandbox/simulators/gitlab/index.js";
import {
  createSlackSigner,
  stateValuesFor,
  type SlackSigner,
} from "../../sandbox/simulators/slack/signer.js";
import type {
  InteractionDelivery,
  SlackDelivery,
} from "../../sandbox/simulators/slack/signer-types.js";
import {
  startFakeSlack,
  type FakeMessage,
  type FakeSlack,
} from "../../sandbox/simulators/slack/index.js";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/store.js";
import { REQUEST_STATUSES, type RequestRecord } from "../../src/store/store.js";
import { WATCH_STEP } from "../../src/tracker/closure.js";
import { CHANNEL, fakeBotEnv, PROJECT_PATH, REQUESTER } from "./harness.js";
import { fleetStory } from "./fleet-story.js";
import { freshDatabase } from "./postgres.js";
import { portOf, runBot, type BotProcess } from "./process.js";
import { recordSlackPayload } from "./logs.js";
import { TEST_SECRETS } from "./secrets.js";
import { waitFor } from "./wait.js";

/**
 * Several bot processes (HTTP mode) on one PostgreSQL database, sharing one simulated Slack and
 * one simulated GitLab: the replicas of one deployment, each a real OS process that a test may
 * kill (SIGKILL), pause (SIGSTOP) and resume (SIGCONT).
 */

/** How long one step of a fleet test may take before it fails: the machine may be busy. */
export const FLEET_WAIT_MS = 120_000;

export interface Replica {
  /** Its place in the fleet: 0, 1, 2… */
  index: number;
  bot: BotProcess;
  port: number;
  url: string;
  /** Signs Slack's deliveries to this replica. */
  signer: SlackSigner;
  /** Its bot token, its own (`FakeSlack.callerOf` tells which replica made a Slack call). */
  slackToken: string;
}

export interface Fleet {
  slack: FakeSlack;
  gitlab: FakeGitlab;
  replicas: Replica[];
  /** A connection of the test's own to the replicas' database, for reading what they wrote. */
  store: PostgresStore;
  /** The replicas still running (not killed, not exited). */
  running(): Replica[];
  /** A random running replica, other than those in `except` when another runs. */
  pick(...except: (Replica | undefined)[]): Replica;
  /** What a replica's `/healthz` says of its leadership; undefined when it does not answer. */
  leads(replica: Replica): Promise<boolean | undefined>;
  /** The running replica that leads, once exactly one says so (waits up to `timeoutMs`). */
  leader(timeoutMs?: number): Promise<Replica>;
  /** Kills a replica with `signal` and, for SIGKILL, waits for it to be gone. */
  signal(replica: Replica, signal: NodeJS.Signals): Promise<void>;
  close(): Promise<void>;
}

export interface FleetOptions {
  replicas?: number;
  /** Variables every replica gets, beside the fakes', the database and a 1 s poll. */
  env?: Record<string, string>;
}

/** Replica `index`'s bot token: the bot's own for the first, a rotated one of it for the others. */
const slackTokenOf = (index: number) =>
  index === 0 ? TEST_SECRETS.botToken : `${TEST_SECRETS.botToken}-replica${index}`;

const alive = (bot: BotProcess) => bot.child.exitCode === null && bot.child.signalCode === null;

/** Starts the fakes, a database of its own and `replicas` bot processes on it (3 unless said). */
export async function startFleet(options: FleetOptions = {}): Promise<Fleet> {
  // Slack's three seconds to open a form are the load test's to measure; here, on a busy machine
  // running three bots, a form opened late is still opened.
  const count = options.replicas ?? 3;
  const slack = await startFakeSlack({
    botToken: slackTokenOf(0),
    otherBotTokens: Array.from({ length: count - 1 }, (_, i) => slackTokenOf(i + 1)),
    triggerTtlMs: 60_000,
  });
  const gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, role: "maintainer", inputs: VM_PIPELINE_INPUTS }],
  });
  const database = await freshDatabase();
  const dir = mkdtempSync(join(tmpdir(), "vmbot-fleet-"));
  const env = fakeBotEnv({ slack, gitlab }, database.url, {
    POLL_INTERVAL_MS: "1000",
    LOG_LEVEL: "info",
    ...options.env,
  });
  const replicas: Replica[] = [];
  /** Every process started, up or not: each is killed at close. */
  const bots: BotProcess[] = [];
  let store: PostgresStore | undefined;
  const close = async () => {
    // SIGKILL ends a stopped (SIGSTOP) process too.
    for (const bot of bots) if (alive(bot)) bot.child.kill("SIGKILL");
    await Promise.all(bots.map((bot) => bot.exited));
    // VMBOT_FLEET_LOGS=<folder> keeps each replica's output there, to read after a failure.
    const logs = process.env.VMBOT_FLEET_LOGS;
    if (logs !== undefined) {
      for (const [index, bot] of bots.entries()) {
        writeFileSync(join(logs, `replica-${index}.log`), bot.stdout() + bot.stderr());
      }
    }
    await store?.close();
    for (const call of slack.calls) recordSlackPayload(call.method, call.args);
    await Promise.all([slack.close(), gitlab.close()]);
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // All at once: one applies the migrations while the others wait for it; one leads.
    for (let index = 0; index < count; index += 1) {
      bots.push(runBot({ ...env, SLACK_BOT_TOKEN: slackTokenOf(index) }, dir));
    }
    for (const [index, bot] of bots.entries()) {
      const port = await portOf(bot, FLEET_WAIT_MS);
      const url = `http://127.0.0.1:${port}`;
      const signer = createSlackSigner({
        eventsUrl: `${url}/slack/events`,
        signingSecret: TEST_SECRETS.signingSecret,
        slack,
      });
      replicas.push({ index, bot, port, url, signer, slackToken: slackTokenOf(index) });
    }
    store = await openPostgresStore(database.url, { replica: "fleet-test-reader" });
  } catch (error) {
    await close();
    throw error;
  }
  const running = () => replicas.filter((replica) => alive(replica.bot));
  const leads = async (replica: Replica) => {
    if (!alive(replica.bot)) return undefined;
    const response = await fetch(`${replica.url}/healthz`, {
      signal: AbortSignal.timeout(2_000),
    }).catch(() => undefined);
    if (response === undefined) return undefined;
    const body = (await response.json()) as { leader?: boolean };
    return body.leader;
  };
  return {
    slack,
    gitlab,
    replicas,
    store,
    running,
    pick(...except) {
      const others = running().filter((replica) => !except.includes(replica));
      const from = others.length > 0 ? others : running();
      const chosen = from[Math.floor(Math.random() * from.length)];
      if (chosen === undefined) throw new Error("no replica is running");
      return chosen;
    },
    leads,
    leader: (timeoutMs = FLEET_WAIT_MS) =>
      waitFor(
        async () => {
          const said = await Promise.all(running().map(async (r) => [r, await leads(r)] as const));
          const leading = said.filter(([, leader]) => leader === true);
          return leading.length === 1 ? leading[0]![0] : undefined;
        },
        "one replica to lead",
        { timeoutMs, intervalMs: 100 },
      ),
    async signal(replica, signal) {
      replica.bot.child.kill(signal);
      if (signal === "SIGKILL") await replica.bot.exited;
    },
    close,
  };
}

/** Waits `ms`: only to spread deliveries in time, never to wait for a result. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A signer that delivers to `replica`, telling `onSend` of each body it sends. */
const signerTo = (
  fleet: Fleet,
  replica: Replica,
  onSend: (sent: { body: string; contentType: string }) => void,
) =>
  createSlackSigner({
    eventsUrl: `${replica.url}/slack/events`,
    signingSecret: TEST_SECRETS.signingSecret,
    slack: fleet.slack,
    onSend,
  });

/**
 * A delivery to one random replica and, as Slack retries one it thinks timed out (the same body,
 * with X-Slack-Retry-Num and X-Slack-Retry-Reason), to another a moment later, while the first
 * may still be working. Both answers. Neither goes to `avoid` while two others run.
 */
export async function deliverTwice<T extends SlackDelivery>(
  fleet: Fleet,
  send: (signer: SlackSigner) => Promise<T>,
  avoid?: Replica,
): Promise<{ first: T; retry: SlackDelivery; to: Replica; again: Replica }> {
  const to = fleet.pick(avoid);
  const again = fleet.pick(to, avoid);
  let sent: { body: string; contentType: string } | undefined;
  const first = send(
    signerTo(fleet, to, (request) => {
      sent ??= request;
    }),
  );
  // Its failure is the caller's, below: not an unhandled rejection meanwhile.
  first.catch(() => undefined);
  const original = await waitFor(() => sent, "the first delivery to be sent");
  await pause(Math.random() * 300);
  const retry = again.signer.send(original.body, {
    contentType: original.contentType,
    retryNum: 1,
    retryReason: "http_timeout",
  });
  const [answered, retried] = await Promise.all([first, retry]);
  return { first: answered, retry: retried, to, again };
}

/** The top-level request message of each request (the channel's messages with its metadata). */
export const requestMessages = (fleet: Fleet) =>
  fleet.slack.messages.filter(
    (m) =>
      m.channel === CHANNEL &&
      m.thread_ts === undefined &&
      m.metadata?.event_type === "vmbot_request",
  );

/** The request message of `requestId`, once posted. */
export const messageOf = (fleet: Fleet, requestId: string) =>
  requestMessages(fleet).find(
    (m) => (m.metadata?.event_payload as { request_id?: string }).request_id === requestId,
  );

export const threadOf = (fleet: Fleet, parent: FakeMessage) =>
  fleet.slack.messages.filter((m) => m.thread_ts === parent.ts);

/** The steps the bot posted in a thread, from each reply's metadata, in order. */
export const threadSteps = (fleet: Fleet, parent: FakeMessage) =>
  threadOf(fleet, parent).flatMap((m) =>
    m.metadata?.event_type === "vmbot_request_step"
      ? [(m.metadata.event_payload as { step: string }).step]
      : [],
  );

/** Every request the database holds, whatever its status. */
export const allRequests = (fleet: Fleet): Promise<RequestRecord[]> =>
  fleet.store.listByStatus(REQUEST_STATUSES);

/**
 * `/vm create <name>` and its form, each sent to a random replica (not `avoid`) and retried to
 * another: the request's ID once it is recorded. The form asks for address `ip`.
 */
export async function askThroughFleet(
  fleet: Fleet,
  name: string,
  ip: string,
  avoid?: Replica,
): Promise<{ requestId: string; submitted: { first: InteractionDelivery; retry: SlackDelivery } }> {
  const command = await deliverTwice(
    fleet,
    (signer) =>
      signer.slashCommand({ text: `create ${name}`, userId: REQUESTER, channelId: CHANNEL }),
    avoid,
  );
  const opened = await fleet.slack.waitFor(
    "views.open",
    (call) => call.args.trigger_id === command.first.triggerId,
    FLEET_WAIT_MS,
  );
  if (!opened.ok) throw new Error(`the form for ${name} was not opened: ${opened.error}`);
  // The form opened for this name (its field holds it): each name is asked for once.
  const form = await waitFor(
    () => fleet.slack.views.find((v) => JSON.stringify(v.blocks).includes(`"${name}"`)),
    `the form for ${name}`,
  );
  const submitted = await deliverTwice(
    fleet,
    (signer) =>
      signer.viewSubmission({
        view: form,
        values: stateValuesFor(form, { vm_name: name, vm_ip: ip }),
        userId: REQUESTER,
      }),
    avoid,
  );
  const requestId = await waitFor(
    async () => (await allRequests(fleet)).find((r) => r.spec.name === name)?.id,
    `the request for ${name}`,
    { timeoutMs: FLEET_WAIT_MS, intervalMs: 100 },
  );
  return { requestId, submitted };
}

/**
 * Waits until the replicas have nothing left to finish (every outside effect intended has its
 * result; a closed request's watch on its pipeline is no unfinished effect).
 */
export async function effectsSettled(fleet: Fleet, timeoutMs = FLEET_WAIT_MS): Promise<void> {
  const unfinished = async () =>
    (await fleet.store.pendingEffects()).filter((e) => e.step !== WATCH_STEP);
  let last = "";
  await waitFor(
    async () => {
      const left = await unfinished();
      last = left.map((e) => `${e.subject} ${e.step}`).join(", ");
      return left.length === 0 ? true : undefined;
    },
    "every effect to be done",
    { timeoutMs, intervalMs: 200, detail: () => `still pending: ${last}\n${fleetStory(fleet)}` },
  );
}

/** The audit's actions for one request, oldest first. */
export const auditOf = async (fleet: Fleet, requestId: string) =>
  (await fleet.store.listAudit(requestId)).map((entry) => ({
    action: entry.action,
    actor: entry.actor,
  }));

/** Waits for the request's plan message, awaiting approval. */
export const planOf = (f: Fleet, requestId: string) =>
  waitFor(
    () => {
      const message = messageOf(f, requestId);
      return message?.text.endsWith("Awaiting approval") === true ? message : undefined;
    },
    `the plan of ${requestId} posted for approval`,
    { timeoutMs: FLEET_WAIT_MS, intervalMs: 100, detail: () => fleetStory(f) },
  );

/**
 * Waits for everything the leader posts when a plan is ready: the message awaiting approval, the
 * plan file shared in its thread, and the approvers called there.
 */
export async function planWholeOf(f: Fleet, requestId: string): Promise<void> {
  const message = await planOf(f, requestId);
  await waitFor(
    () =>
      f.slack.uploads.some((upload) => upload.completed && upload.thread_ts === message.ts) &&
      threadSteps(f, message).some((step) => step.startsWith("notify_approvers:"))
        ? true
        : undefined,
    `the plan file of ${requestId} shared and its approvers called`,
    { timeoutMs: FLEET_WAIT_MS, intervalMs: 100 },
  );
}

/** Waits for the request to be ready, its requester told. */
export const readyOf = (f: Fleet, requestId: string) =>
  waitFor(
    () => {
      const message = messageOf(f, requestId);
      if (message?.text.endsWith("Ready") !== true) return undefined;
      return threadOf(f, message).some((m) => m.text.includes("is ready")) ? true : undefined;
    },
    `${requestId} to be ready and its requester told`,
    { timeoutMs: FLEET_WAIT_MS, intervalMs: 100 },
  );

/**
 * One pipeline, one play of its apply job, one message and a whole audit for every request of
 * `ids`, once nothing is left unfinished; `started` is each one's audit word for its play.
 */
export async function expectEachOnce(f: Fleet, ids: readonly string[], started: string[]) {
  await effectsSettled(f);
  expect(await allRequests(f)).toHaveLength(ids.length);
  expect(f.gitlab.pipelines).toHaveLength(ids.length);
  const plays = f.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/);
  expect(plays).toHaveLength(ids.length);
  expect(new Set(plays.map((p) => p.path)).size).toBe(ids.length);
  expect(requestMessages(f)).toHaveLength(ids.length);
  for (const [index, requestId] of ids.entries()) {
    const actions = (await auditOf(f, requestId)).map((a) => a.action);
    expect(actions.filter((a) => a === "planning").length).toBeLessThanOrEqual(1);
    expect({ requestId, actions: actions.filter((a) => a !== "planning") }).toEqual({
      requestId,
      actions: completeAudit(started[index] ?? "apply_started"),
    });
  }
}

/**
 * A created VM's audit, first to last, with `started` the word for its play (`apply_started`, or
 * `apply_confirmed` when its answer was lost and reading the job back found it played). Without
 * "planning": a pass records it when it sees the plan job running, not when the plan had finished
 * by its first look, as it may with a slow GitLab.
 */
export const completeAudit = (started = "apply_started") => [
  "requested",
  "pipeline_created",
  "plan_uploaded",
  "awaiting_approval",
  "approved",
  started,
  "configuring",
  "ready",
];

/**
 * Approves each request's plan (each click to a random replica, retried to another), then waits
 * for each to be ready and its requester told.
 */
export async function approveAll(f: Fleet, ids: readonly string[], userId: string) {
  for (const requestId of ids) {
    const plan = await planOf(f, requestId);
    await deliverTwice(f, (signer) =>
      signer.blockAction({ message: plan, userId, actionId: "plan_approve" }),
    );
  }
  for (const requestId of ids) await readyOf(f, requestId);
}

/** Waits until every request has its pipeline recorded, and nothing intended is left undone. */
export async function pipelinesRecorded(fleet: Fleet): Promise<void> {
  await effectsSettled(fleet);
  await waitFor(
    async () => ((await allRequests(fleet)).every((r) => r.pipelineId !== null) ? true : undefined),
    "every request's pipeline recorded",
    { timeoutMs: FLEET_WAIT_MS, intervalMs: 100 },
  );
}

/**
 * Asks for `count` VMs one after another (`<prefix>-01`, `<prefix>-02`…, addresses from .50),
 * each command and form through random replicas (not `avoid`) and retried: their request IDs.
 */
export async function askMany(
  fleet: Fleet,
  prefix: string,
  count: number,
  avoid?: Replica,
): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const name = `${prefix}-${String(index + 1).padStart(2, "0")}`;
    const { requestId } = await askThroughFleet(fleet, name, `192.168.1.${50 + index}/24`, avoid);
    ids.push(requestId);
  }
  return ids;
}
