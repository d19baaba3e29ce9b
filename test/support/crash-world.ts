import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { AsyncStore } from "../../src/store/async.js";
import type { RequestStatus } from "../../src/requests/lifecycle.js";
import { WATCH_STEP } from "../../src/tracker/closure.js";
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
import {
  startFakeSlack,
  type FakeMessage,
  type FakeSlack,
} from "../../sandbox/simulators/slack/index.js";
import { APPROVER, CHANNEL, fakeBotEnv, PROJECT_PATH, REQUESTER } from "./harness.js";
import { portOf, runBot, type BotProcess } from "./process.js";
import { SAMPLE_SPEC } from "./requests.js";
import { TEST_SECRETS } from "./secrets.js";
import { openStoreAt, storeLocation, withStoreAt, type StoreLocation } from "./store-at.js";
import { waitFor } from "./wait.js";

/**
 * The world of the crash tests (test/integration/crash*.test.ts): the real bot, as a process,
 * kills itself (SIGKILL, nothing flushed) at one crash point of one outside effect, just before or
 * just after it; it is started again on the same store (a SQLite file, or with
 * `npm run test:postgres` a PostgreSQL database, where the new process is a new replica), and
 * the flow is finished. Over the whole flow there must be no duplicate pipeline, message, thread
 * reply, upload or play, and no lost request. Each test has its own simulators, bot and store, so they run at the same time,
 * and the tests are spread over several files by theme so that Vitest's workers share them.
 * Every read of the bot's store is here, not in the test files.
 */

/**
 * How long one step may take before the test fails: generous, as the tests run side by side on
 * a machine that may be busy; a test passes as soon as what it waits for is there.
 */
export const WAIT_MS = 40_000;
/** A whole test, two bot starts included. */
export const TEST_MS = 120_000;

/** Every crash point the flows below pass through, each exercised by one test. */
export const APPROVE_FLOW_POINTS = [
  "post_request_message",
  "create_pipeline",
  "upload_plan",
  "play_apply",
  "reply_notify_approvers",
  "reply_applied",
  "reply_configured",
  "reply_notify_requester",
] as const;
/** The crash points of the rejection (after a plan) and of the unlock. */
export const REJECT_FLOW_POINTS = ["cancel_pipeline", "erase_plan"] as const;
export const UNLOCK_POINTS = ["unlock"] as const;
export const MOMENTS = ["before", "after"] as const;
/** The crash points of a destroy: its pipeline, and the play of its destroy job. */
export const DESTROY_FLOW_POINTS = ["create_pipeline", "play_destroy"] as const;

export interface World {
  slack: FakeSlack;
  gitlab: FakeGitlab;
  /** The bot's store, on the run's engine (test/support/store-at.ts). */
  store: StoreLocation;
  /** The store opened beside the bot, to read what it recorded; opened at the first read. */
  reader: Promise<AsyncStore> | undefined;
  /** The bot now running; replaced when it crashes. */
  bot: BotProcess;
  signer: SlackSigner;
  crashes: number;
  /** Restarts after a crash that are up and answering. */
  restarts: number;
  /**
   * A restart after a crash that failed: the next `until` fails with it, instead of timing out.
   * A restart cut short because the test is over (its world closing) is no failure.
   */
  restartFailure: Error | undefined;
  /** Stops the bot (SIGTERM) and waits for it to exit: nothing more can happen after it. */
  stopBot(): Promise<void>;
  close(): Promise<void>;
}

export async function startWorld(
  crashAt: string | undefined,
  extraEnv: Record<string, string> = {},
  /** Fills the store before the bot first opens it. */
  seed?: (store: AsyncStore) => Promise<void>,
): Promise<World> {
  // Slack's three seconds to open a form are the load test's to measure: here, with crash tests'
  // bots starting side by side on a busy machine, a form opened late is still opened.
  const slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken, triggerTtlMs: 60_000 });
  const gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, role: "maintainer", inputs: VM_PIPELINE_INPUTS }],
  });
  const dir = mkdtempSync(join(tmpdir(), "vmbot-crash-"));
  const store = await storeLocation(dir);
  const env = fakeBotEnv({ slack, gitlab }, store.db, {
    // The bot started again after its crash leads soon (it follows pipelines only then).
    ...store.restartEnv,
    POLL_INTERVAL_MS: "500",
    LOG_LEVEL: "info",
    ...extraEnv,
  });
  const signerFor = (port: number) =>
    createSlackSigner({
      eventsUrl: `http://127.0.0.1:${port}/slack/events`,
      signingSecret: TEST_SECRETS.signingSecret,
      slack,
    });
  if (seed !== undefined) await withStoreAt(store.db, seed, { write: true });
  // The first bot dies at the crash point (the crash tests' own entry); restarts run the bot's.
  const bot = runBot(env, dir, crashAt === undefined ? {} : { entry: "crash", args: [crashAt] });
  let closing = false;
  const world: World = {
    slack,
    gitlab,
    store,
    reader: undefined,
    bot,
    signer: signerFor(await portOf(bot, WAIT_MS)),
    crashes: 0,
    restarts: 0,
    restartFailure: undefined,
    async stopBot() {
      closing = true;
      world.bot.child.kill("SIGTERM");
      await world.bot.exited;
    },
    async close() {
      await world.stopBot();
      await (await world.reader)?.close();
      await Promise.all([slack.close(), gitlab.close(), store.drop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // When the bot dies at its crash point, start it again (without the crash point), at once.
  const watch = (current: BotProcess) => {
    void current.exited
      .then(async () => {
        if (current.child.signalCode !== "SIGKILL" || closing) return;
        world.crashes += 1;
        world.bot = runBot(env, dir);
        watch(world.bot);
        world.signer = signerFor(await portOf(world.bot, WAIT_MS));
        world.restarts += 1;
      })
      .catch((error: unknown) => {
        if (!closing) {
          world.restartFailure = error instanceof Error ? error : new Error(String(error));
        }
      });
  };
  watch(bot);
  return world;
}

/** Waits for `check` while the bot may crash and restart underneath. */
export const until = <T>(w: World, check: () => T | undefined, what: string): Promise<T> =>
  waitFor(check, what, { timeoutMs: WAIT_MS, intervalMs: 25, failure: () => w.restartFailure });

/**
 * Waits until the bot has nothing left to finish (every outside effect it intended has its
 * result), then stops it: what it did is final from then on, so counting it shows whether
 * anything was done twice.
 */
export async function settled(w: World): Promise<void> {
  // A closed request's pipeline stays followed for its apply job (a watch, not an effect).
  let unfinished: { subject: string; step: string }[] = [];
  const done = async () => {
    unfinished = (await pending(w)).filter((e) => e.step !== WATCH_STEP);
    return unfinished.length === 0 ? true : undefined;
  };
  await waitFor(done, "every effect to be done", {
    timeoutMs: WAIT_MS,
    intervalMs: 25,
    failure: () => w.restartFailure,
    detail: () => `still pending: ${unfinished.map((e) => `${e.subject} ${e.step}`).join(", ")}`,
  });
  await w.stopBot();
}

export const requestMessages = (w: World) =>
  w.slack.messages.filter(
    (m) =>
      m.channel === CHANNEL &&
      m.thread_ts === undefined &&
      m.metadata?.event_type === "vmbot_request",
  );
export const requestMessage = (w: World) => requestMessages(w)[0];
export const threadOf = (w: World, parent: FakeMessage) =>
  w.slack.messages.filter((m) => m.thread_ts === parent.ts);

export function settle(w: World, pipelineId: number, job: string): void {
  for (let i = 0; i < 30; i += 1) {
    const status = w.gitlab.job(pipelineId, job).status;
    if (["success", "failed", "canceled", "manual"].includes(status)) return;
    w.gitlab.advance(pipelineId);
  }
}

/** `/vm create`, the form, and the request message showing its pipeline. */
/** `/vm create web-01` by REQUESTER, its form submitted. */
export async function submitForm(w: World): Promise<void> {
  await w.signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
  await w.slack.waitFor("views.open", (call) => call.ok, WAIT_MS);
  const view = w.slack.views.at(-1)!;
  await w.signer.viewSubmission({
    view,
    values: stateValuesFor(view, { vm_ip: "192.168.1.50/24" }),
    userId: REQUESTER,
  });
}

export async function ask(w: World): Promise<{ message: FakeMessage; pipelineId: number }> {
  await submitForm(w);
  const pipelineId = await until(w, () => w.gitlab.pipelines[0]?.id, "the pipeline");
  const message = await until(
    w,
    () => {
      const m = requestMessage(w);
      return m !== undefined && JSON.stringify(m.blocks).includes(`pipeline #${pipelineId}`)
        ? m
        : undefined;
    },
    "the request message with its pipeline",
  );
  return { message, pipelineId };
}

export async function planned(w: World, pipelineId: number): Promise<FakeMessage> {
  settle(w, pipelineId, "tf:plan");
  return until(
    w,
    () => {
      const m = requestMessage(w);
      return m?.text.endsWith("Awaiting approval") === true ? m : undefined;
    },
    "the plan message",
  );
}

/** Reads the bot's store beside it (the bot may be running), on either engine. */
async function readStore<T>(w: World, read: (store: AsyncStore) => Promise<T>): Promise<T> {
  w.reader ??= openStoreAt(w.store.db);
  return read(await w.reader);
}

export const audit = (w: World): Promise<{ requestId: string | null; action: string }[]> =>
  readStore(w, (store) => store.listAudit());
/** Outside effects whose intent is recorded and their result not yet. */
const pending = (w: World) => readStore(w, (store) => store.pendingEffects());

export async function approveFlow(crashAt: string | undefined) {
  const w = await startWorld(crashAt);
  try {
    const { pipelineId } = await ask(w);
    const plan = await planned(w, pipelineId);
    await until(
      w,
      () => (threadOf(w, plan).some((m) => m.text.startsWith(":eyes:")) ? true : undefined),
      "the approvers to be called in",
    );
    if (crashAt?.startsWith("reply_notify_approvers:") === true) {
      // The notice is the last thing before the crash: the click waits for the bot to be back.
      await until(w, () => (w.restarts >= 1 ? true : undefined), "the bot to restart");
    }
    await w.signer.blockAction({ message: plan, userId: APPROVER, actionId: "plan_approve" });
    await until(
      w,
      () => (w.gitlab.job(pipelineId, "tf:apply").status !== "manual" ? true : undefined),
      "the apply job to start",
    );
    settle(w, pipelineId, "tf:apply");
    settle(w, pipelineId, "ansible:configure");
    await until(
      w,
      () => (requestMessage(w)?.text.endsWith("Ready") === true ? true : undefined),
      "the request to be ready",
    );
    await until(
      w,
      () =>
        threadOf(w, requestMessage(w)!).some((m) => m.text.includes("is ready")) ? true : undefined,
      "the requester to be told",
    );
    // Nothing may be posted twice after the end either.
    await settled(w);

    expect(w.gitlab.pipelines).toHaveLength(1);
    expect(requestMessages(w)).toHaveLength(1);
    const thread = threadOf(w, requestMessage(w)!);
    expect(thread.filter((m) => m.files !== undefined)).toHaveLength(1);
    expect(w.slack.uploads).toHaveLength(1);
    const steps = thread.flatMap((m) =>
      m.metadata?.event_type === "vmbot_request_step"
        ? [(m.metadata.event_payload as { step: string }).step]
        : [],
    );
    expect(steps).toEqual([
      expect.stringMatching(/^notify_approvers:\d+$/),
      "applied",
      "configured",
      "notify_requester",
    ]);
    expect(w.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(1);
    expect(w.gitlab.requestsTo("POST", /\/pipeline$/).length).toBeLessThanOrEqual(1);
    const actions = (await audit(w)).map((entry) => entry.action);
    expect(actions.filter((a) => a === "requested")).toHaveLength(1);
    expect(actions.at(-1)).toBe("ready");
    return w.crashes;
  } finally {
    await w.close();
  }
}

/** web-01, made by vmbot for REQUESTER earlier: in the inventory, with its state. */
export async function seedVm(store: AsyncStore, leaseUntil: string | null = null): Promise<void> {
  await store.inventory.record({
    name: "web-01",
    requestId: "vm-mabc123-0a1b2c3d",
    owner: REQUESTER,
    spec: SAMPLE_SPEC,
    stateName: "vm-web-01",
    address: "192.168.1.50",
    pipelineId: 1,
    approvedBy: APPROVER,
    leaseUntil,
  });
}

/** Leases of 60 s at most 120 s, reminded 30 s before the end. */
export const LEASES = { VM_LEASE_DEFAULT: "60s", VM_LEASE_MAX: "120s", VM_LEASE_WARN: "30s" };

/** The store's record of one effect, read while the bot may be running. */
export const effectOf = (w: World, subject: string, step: string) =>
  readStore(w, (store) => store.effect(subject, step));
/** The inventory's record of a VM, read while the bot may be running. */
export const vmOf = (w: World, name: string) => readStore(w, (store) => store.inventory.get(name));
/** The requests in one of `statuses`, read while the bot may be running. */
export const requestsIn = (w: World, statuses: readonly RequestStatus[]) =>
  readStore(w, (store) => store.listByStatus(statuses));

/** `/vm destroy web-01`, confirmed, approved and destroyed, crashing at `crashAt`. */
export async function destroyFlow(crashAt: string | undefined) {
  const w = await startWorld(crashAt, {}, seedVm);
  try {
    const delivery = await w.signer.slashCommand({
      text: "destroy web-01",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    const prompt = JSON.parse(delivery.body) as { text: string; blocks: FakeMessage["blocks"] };
    await w.signer.blockAction({
      message: {
        channel: CHANNEL,
        ts: "1796205600.000100",
        text: prompt.text,
        blocks: prompt.blocks,
        user: w.slack.identity.botUserId,
        bot_id: w.slack.identity.botId,
        app_id: w.slack.identity.appId,
      },
      ephemeral: true,
      actionId: "destroy_confirm",
      userId: REQUESTER,
    });
    const pipelineId = await until(w, () => w.gitlab.pipelines[0]?.id, "the destroy pipeline");
    settle(w, pipelineId, "tf:destroy");
    const message = await until(
      w,
      () => {
        const m = requestMessage(w);
        return m?.text === "Destroy web-01 — Awaiting approval" ? m : undefined;
      },
      "the destroy request awaiting approval",
    );
    await until(
      w,
      () => (threadOf(w, message).some((m) => m.text.startsWith(":eyes:")) ? true : undefined),
      "the approvers to be called in",
    );
    await w.signer.blockAction({ message, userId: APPROVER, actionId: "destroy_approve" });
    await until(
      w,
      () => (w.gitlab.job(pipelineId, "tf:destroy").status !== "manual" ? true : undefined),
      "the destroy job to start",
    );
    settle(w, pipelineId, "tf:destroy");
    await until(
      w,
      () =>
        threadOf(w, requestMessage(w)!).some((m) => m.text.includes("is destroyed"))
          ? true
          : undefined,
      "the requester to be told",
    );
    await settled(w);

    expect(requestMessage(w)?.text).toBe("Destroy web-01 — Destroyed");
    expect(w.gitlab.pipelines).toHaveLength(1);
    expect(w.gitlab.pipeline(pipelineId).inputs).toMatchObject({
      action: "destroy",
      vm_name: "web-01",
    });
    expect(requestMessages(w)).toHaveLength(1);
    const steps = threadOf(w, requestMessage(w)!).flatMap((m) =>
      m.metadata?.event_type === "vmbot_request_step"
        ? [(m.metadata.event_payload as { step: string }).step]
        : [],
    );
    expect(steps).toEqual(["notify_approvers:destroy", "destroyed", "notify_requester"]);
    expect(w.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(1);
    expect(w.gitlab.requestsTo("POST", /\/pipeline$/).length).toBeLessThanOrEqual(1);
    const actions = (await audit(w)).map((entry) => entry.action);
    expect(actions.filter((a) => a === "requested")).toHaveLength(1);
    expect(actions.filter((a) => a === "vm_destroyed")).toHaveLength(1);
    expect(actions.at(-1)).toBe("ready");
    expect(await vmOf(w, "web-01")).toBeUndefined();
    return w.crashes;
  } finally {
    await w.close();
  }
}

/**
 * The crash points each file of the crash tests declares a test for, by the file's theme; together
 * they are every crash point (test/integration/crash.test.ts checks it).
 */
export const CRASH_POINTS = {
  /** crash-approve.test.ts: the request, its pipeline, its plan and the apply's play. */
  approve: APPROVE_FLOW_POINTS.filter((point) => !point.startsWith("reply_")).flatMap((point) =>
    MOMENTS.map((moment) => `${point}:${moment}`),
  ),
  /** crash-replies.test.ts: the replies in the request's thread. */
  replies: APPROVE_FLOW_POINTS.filter((point) => point.startsWith("reply_")).flatMap((point) =>
    MOMENTS.map((moment) => `${point}:${moment}`),
  ),
  /** crash.test.ts: the rejection's cancel and plan deletion, and the unlock. */
  rejection: [...REJECT_FLOW_POINTS, ...UNLOCK_POINTS].flatMap((point) =>
    MOMENTS.map((moment) => `${point}:${moment}`),
  ),
  /** crash-destroy.test.ts: a destroy asked for, and the one a lease's end opens or plays. */
  destroy: [
    ...DESTROY_FLOW_POINTS.flatMap((point) =>
      MOMENTS.map((moment) => `destroy/${point}:${moment}`),
    ),
    "lease expiry/create_pipeline:after",
    ...MOMENTS.map((moment) => `lease expiry destroy/play_destroy:${moment}`),
  ],
  /** crash.test.ts: the requester told that their request's message could not be posted. */
  notice: MOMENTS.map((moment) => `tell_not_posted:${moment}`),
  /** crash-lease.test.ts: the lease's reminder and an approved extension. */
  lease: [
    ...MOMENTS.map((moment) => `lease_reminder:${moment}`),
    ...MOMENTS.map((moment) => `extend_lease:${moment}`),
  ],
};

/** Checks that a file declared one test for each crash point of its themes, and no other. */
export function expectDeclared(
  themes: keyof typeof CRASH_POINTS | readonly (keyof typeof CRASH_POINTS)[],
  declared: string[],
): void {
  const points = (typeof themes === "string" ? [themes] : themes).flatMap((t) => CRASH_POINTS[t]);
  expect([...declared].sort()).toEqual(points.sort());
  expect(new Set(declared).size).toBe(declared.length);
}

/** Declares the test of one crash point of the approval's flow (`reply_applied:after`). */
export function approvalCrashTest(crashAt: string): void {
  it(
    `crashes at ${crashAt}, restarts, and finishes with nothing twice`,
    async () => {
      const crashes = await approveFlow(crashAt);
      expect(crashes).toBeGreaterThanOrEqual(1);
    },
    TEST_MS,
  );
}
