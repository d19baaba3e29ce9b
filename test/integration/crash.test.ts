import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite.js";
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
import {
  ADMIN,
  APPROVER,
  CHANNEL,
  fakeBotEnv,
  PROJECT_PATH,
  REQUESTER,
  reject,
} from "../support/harness.js";
import { portOf, runBot, type BotProcess } from "../support/process.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { waitFor } from "../support/wait.js";

/**
 * Crash tests: the real bot, as a process, kills itself (SIGKILL, nothing flushed) at one crash
 * point of one outside effect, just before or just after it; it is started again on the same
 * database file, and the flow is finished. Over the whole flow there must be no duplicate
 * pipeline, message, thread reply, upload or play, and no lost request. Each test has its own
 * simulators, bot and store, so they run at the same time.
 */

/**
 * How long one step may take before the test fails: generous, as the tests run side by side on
 * a machine that may be busy; a test passes as soon as what it waits for is there.
 */
const WAIT_MS = 40_000;
/** A whole test, two bot starts included. */
const TEST_MS = 120_000;

/** Every crash point the flows below pass through, each exercised by one test. */
const APPROVE_FLOW_POINTS = [
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
const REJECT_FLOW_POINTS = ["cancel_pipeline", "erase_plan"] as const;
const UNLOCK_POINTS = ["unlock"] as const;
const MOMENTS = ["before", "after"] as const;
/** The crash points a test below is declared for, filled as they are declared. */
const declared: string[] = [];
/** The crash points of a destroy: its pipeline, and the play of its destroy job. */
const DESTROY_FLOW_POINTS = ["create_pipeline", "play_destroy"] as const;

interface World {
  slack: FakeSlack;
  gitlab: FakeGitlab;
  db: string;
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

async function startWorld(
  crashAt: string | undefined,
  extraEnv: Record<string, string> = {},
  /** Fills the store before the bot first opens it. */
  seed?: (db: string) => void,
): Promise<World> {
  const slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  const gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, role: "maintainer", inputs: VM_PIPELINE_INPUTS }],
  });
  const dir = mkdtempSync(join(tmpdir(), "vmbot-crash-"));
  const db = join(dir, "vmbot.sqlite");
  const env = fakeBotEnv({ slack, gitlab }, db, {
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
  seed?.(db);
  // The first bot dies at the crash point (the crash tests' own entry); restarts run the bot's.
  const bot = runBot(env, dir, crashAt === undefined ? {} : { entry: "crash", args: [crashAt] });
  let closing = false;
  const world: World = {
    slack,
    gitlab,
    db,
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
      await Promise.all([slack.close(), gitlab.close()]);
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
const until = <T>(w: World, check: () => T | undefined, what: string): Promise<T> =>
  waitFor(check, what, { timeoutMs: WAIT_MS, intervalMs: 25, failure: () => w.restartFailure });

/**
 * Waits until the bot has nothing left to finish (every outside effect it intended has its
 * result), then stops it: what it did is final from then on, so counting it shows whether
 * anything was done twice.
 */
async function settled(w: World): Promise<void> {
  // A closed request's pipeline stays followed for its apply job (a watch, not an effect).
  const unfinished = () => pending(w).filter((e) => e.step !== WATCH_STEP);
  await waitFor(() => (unfinished().length === 0 ? true : undefined), "every effect to be done", {
    timeoutMs: WAIT_MS,
    intervalMs: 25,
    failure: () => w.restartFailure,
    detail: () =>
      `still pending: ${unfinished()
        .map((e) => `${e.subject} ${e.step}`)
        .join(", ")}`,
  });
  await w.stopBot();
}

const requestMessages = (w: World) =>
  w.slack.messages.filter(
    (m) =>
      m.channel === CHANNEL &&
      m.thread_ts === undefined &&
      m.metadata?.event_type === "vmbot_request",
  );
const requestMessage = (w: World) => requestMessages(w)[0];
const threadOf = (w: World, parent: FakeMessage) =>
  w.slack.messages.filter((m) => m.thread_ts === parent.ts);

function settle(w: World, pipelineId: number, job: string): void {
  for (let i = 0; i < 30; i += 1) {
    const status = w.gitlab.job(pipelineId, job).status;
    if (["success", "failed", "canceled", "manual"].includes(status)) return;
    w.gitlab.advance(pipelineId);
  }
}

/** `/vm create`, the form, and the request message showing its pipeline. */
async function ask(w: World): Promise<{ message: FakeMessage; pipelineId: number }> {
  await w.signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
  await w.slack.waitFor("views.open", undefined, WAIT_MS);
  const view = w.slack.views.at(-1)!;
  await w.signer.viewSubmission({
    view,
    values: stateValuesFor(view, { vm_ip: "192.168.1.50/24" }),
    userId: REQUESTER,
  });
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

async function planned(w: World, pipelineId: number): Promise<FakeMessage> {
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

/** Reads the bot's store without taking it (the bot may be running). */
function readStore<T>(w: World, read: (store: ReturnType<typeof openSqliteStore>) => T): T {
  const store = openSqliteStore(w.db, { readOnly: true });
  try {
    return read(store);
  } finally {
    store.close();
  }
}

const audit = (w: World): { requestId: string | null; action: string }[] =>
  readStore(w, (store) => store.listAudit());
/** Outside effects whose intent is recorded and their result not yet. */
const pending = (w: World) => readStore(w, (store) => store.pendingEffects());

async function approveFlow(crashAt: string | undefined) {
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
    const actions = audit(w).map((entry) => entry.action);
    expect(actions.filter((a) => a === "requested")).toHaveLength(1);
    expect(actions.at(-1)).toBe("ready");
    return w.crashes;
  } finally {
    await w.close();
  }
}

/** web-01, made by vmbot for REQUESTER earlier: in the inventory, with its state. */
function seedVm(db: string, leaseUntil: string | null = null): void {
  const store = openSqliteStore(db);
  try {
    store.inventory.record({
      name: "web-01",
      requestId: "vm-mabc123-0a1b2c3d",
      owner: REQUESTER,
      spec: {
        name: "web-01",
        node: "pve",
        templateId: 9000,
        templateName: "ubuntu",
        cores: 2,
        memoryMb: 2048,
        diskGb: 20,
        ip: "192.168.1.50/24",
        gateway: "192.168.1.1",
        dns: "192.168.1.1",
        vmId: 0,
        vlanId: 0,
      },
      stateName: "vm-web-01",
      address: "192.168.1.50",
      pipelineId: 1,
      approvedBy: APPROVER,
      leaseUntil,
    });
  } finally {
    store.close();
  }
}

/** Leases of 60 s at most 120 s, reminded 30 s before the end. */
const LEASES = { VM_LEASE_DEFAULT: "60s", VM_LEASE_MAX: "120s", VM_LEASE_WARN: "30s" };

/** The store's record of one effect, read while the bot may be running. */
function effectOf(w: World, subject: string, step: string) {
  const store = openSqliteStore(w.db, { readOnly: true });
  try {
    return store.effect(subject, step);
  } finally {
    store.close();
  }
}

/** `/vm destroy web-01`, confirmed, approved and destroyed, crashing at `crashAt`. */
async function destroyFlow(crashAt: string | undefined) {
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
    const actions = audit(w).map((entry) => entry.action);
    expect(actions.filter((a) => a === "requested")).toHaveLength(1);
    expect(actions.filter((a) => a === "vm_destroyed")).toHaveLength(1);
    expect(actions.at(-1)).toBe("ready");
    const store = openSqliteStore(w.db, { readOnly: true });
    try {
      expect(store.inventory.get("web-01")).toBeUndefined();
    } finally {
      store.close();
    }
    return w.crashes;
  } finally {
    await w.close();
  }
}

describe.concurrent("crash between the intent and the result of each outside effect", () => {
  it(
    "runs the whole flow without a crash as the baseline",
    async () => {
      expect(await approveFlow(undefined)).toBe(0);
    },
    TEST_MS,
  );

  for (const point of APPROVE_FLOW_POINTS) {
    for (const moment of MOMENTS) {
      declared.push(`${point}:${moment}`);
      it(
        `crashes at ${point}:${moment}, restarts, and finishes with nothing twice`,
        async () => {
          const crashes = await approveFlow(`${point}:${moment}`);
          expect(crashes).toBeGreaterThanOrEqual(1);
        },
        TEST_MS,
      );
    }
  }

  it(
    "destroys a VM without a crash as the baseline",
    async () => {
      expect(await destroyFlow(undefined)).toBe(0);
    },
    TEST_MS,
  );

  for (const point of DESTROY_FLOW_POINTS) {
    for (const moment of MOMENTS) {
      declared.push(`destroy/${point}:${moment}`);
      it(
        `crashes at ${point}:${moment} of a destroy, restarts, and destroys once`,
        async () => {
          const crashes = await destroyFlow(`${point}:${moment}`);
          expect(crashes).toBeGreaterThanOrEqual(1);
        },
        TEST_MS,
      );
    }
  }

  for (const moment of MOMENTS) {
    declared.push(`lease_reminder:${moment}`);
    it(
      `crashes at lease_reminder:${moment}, restarts, and reminds the owner once`,
      async () => {
        // Due from the first pass, and far from its end however slowly a busy machine starts
        // the bot: a lease that ended first would open a destroy request instead.
        const end = new Date(Date.now() + 5 * 60_000).toISOString();
        const env = { ...LEASES, VM_LEASE_MAX: "1h", VM_LEASE_WARN: "10m" };
        const w = await startWorld(`lease_reminder:${moment}`, env, (db) => {
          seedVm(db, end);
        });
        try {
          await until(
            w,
            () =>
              effectOf(w, "lease:web-01", `lease_reminder:${end}:600000`)?.state === "done"
                ? true
                : undefined,
            "the reminder to be recorded",
          );
          await settled(w);
          expect(w.crashes).toBe(1);
          const dms = w.slack.messages.filter(
            (m) => m.metadata?.event_type === "vmbot_lease_reminder",
          );
          expect(dms).toHaveLength(1);
          expect(dms[0]!.channel).toBe(`D${REQUESTER.slice(1)}`);
        } finally {
          await w.close();
        }
      },
      TEST_MS,
    );
  }

  for (const moment of MOMENTS) {
    declared.push(`extend_lease:${moment}`);
    it(
      `crashes at extend_lease:${moment} of an approved longer lease, restarts, and moves the lease once`,
      async () => {
        // The policy lets one approver from platform lend web-01 past the maximum (1 h).
        const policyDir = mkdtempSync(join(tmpdir(), "vmbot-crash-policy-"));
        const policy = join(policyDir, "policy.yaml");
        writeFileSync(
          policy,
          `version: 1\ngroups:\n  devs: [${REQUESTER}]\n  platform: [${APPROVER}]\nroles:\n  approvers: [platform]\n  admins: [platform]\napprovals:\n  - name: long leases\n    action: extend\n    require: [{ group: platform }]\n`,
        );
        const end = new Date(Date.now() + 5 * 60_000).toISOString();
        const env = {
          ...LEASES,
          VM_LEASE_MAX: "1h",
          VM_LEASE_WARN: "10m",
          SLACK_CHANNEL: CHANNEL,
          VMBOT_POLICY: policy,
        };
        const w = await startWorld(`extend_lease:${moment}`, env, (db) => {
          seedVm(db, end);
        });
        try {
          const dm = await until(
            w,
            () => w.slack.messages.find((m) => m.metadata?.event_type === "vmbot_lease_reminder"),
            "the reminder",
          );
          await w.signer.blockAction({
            message: dm,
            userId: REQUESTER,
            actionId: "lease_ask_longer",
          });
          const message = await until(
            w,
            () => {
              const m = requestMessage(w);
              return m?.text === "Longer lease for web-01 — Awaiting approval" ? m : undefined;
            },
            "the extension request awaiting approval",
          );
          await w.signer.blockAction({ message, userId: APPROVER, actionId: "extend_approve" });
          await until(
            w,
            () =>
              requestMessage(w)?.text === "Longer lease for web-01 — Extended" ? true : undefined,
            "the extension made",
          );
          await settled(w);
          expect(w.crashes).toBe(1);
          const actions = audit(w).map((entry) => entry.action);
          expect(actions.filter((a) => a === "extension_requested")).toHaveLength(1);
          expect(actions.filter((a) => a === "approved")).toHaveLength(1);
          expect(actions.filter((a) => a === "lease_extended")).toHaveLength(1);
          readStore(w, (store) => {
            const request = store.listByStatus(["ready"]).find((r) => r.kind === "extend")!;
            const leaseUntil = store.inventory.get("web-01")?.leaseUntil;
            // Twice the maximum (2 h) from the approval: moved once, to where the approval said.
            expect(Date.parse(leaseUntil!) - Date.parse(request.decision!.at)).toBe(2 * 3_600_000);
          });
        } finally {
          await w.close();
          rmSync(policyDir, { recursive: true, force: true });
        }
      },
      TEST_MS,
    );
  }

  declared.push("lease expiry/create_pipeline:after");
  it(
    "crashes at create_pipeline:after of the destroy request a lease's end opened, and opens it once",
    async () => {
      // The seeded VM's own request is not in the store: the channel comes from SLACK_CHANNEL.
      const env = { ...LEASES, SLACK_CHANNEL: CHANNEL };
      const w = await startWorld("create_pipeline:after", env, (db) => {
        seedVm(db, new Date(Date.now() - 1_000).toISOString());
      });
      try {
        const pipelineId = await until(w, () => w.gitlab.pipelines[0]?.id, "the destroy pipeline");
        settle(w, pipelineId, "tf:destroy");
        await until(
          w,
          () =>
            requestMessage(w)?.text === "Destroy web-01 — Awaiting approval" ? true : undefined,
          "the destroy request awaiting approval",
        );
        await settled(w);
        expect(w.crashes).toBe(1);
        expect(w.gitlab.pipelines).toHaveLength(1);
        expect(w.gitlab.pipeline(pipelineId).inputs).toMatchObject({ action: "destroy" });
        expect(requestMessages(w)).toHaveLength(1);
        const actions = audit(w).map((entry) => entry.action);
        expect(actions.filter((a) => a === "lease_expired")).toHaveLength(1);
        expect(actions.filter((a) => a === "requested")).toHaveLength(1);
      } finally {
        await w.close();
      }
    },
    TEST_MS,
  );

  for (const moment of MOMENTS) {
    declared.push(`lease expiry destroy/play_destroy:${moment}`);
    it(
      `crashes at play_destroy:${moment} of the destroy a lease's end plays without approval, and destroys once`,
      async () => {
        const env = { ...LEASES, SLACK_CHANNEL: CHANNEL, VM_LEASE_ON_EXPIRY: "destroy" };
        const w = await startWorld(`play_destroy:${moment}`, env, (db) => {
          seedVm(db, new Date(Date.now() - 1_000).toISOString());
        });
        try {
          const pipelineId = await until(
            w,
            () => w.gitlab.pipelines[0]?.id,
            "the destroy pipeline",
          );
          settle(w, pipelineId, "tf:destroy");
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
            "the owner to be told",
          );
          await settled(w);
          expect(w.crashes).toBe(1);
          expect(requestMessage(w)?.text).toBe("Destroy web-01 — Destroyed");
          expect(requestMessages(w)).toHaveLength(1);
          expect(w.gitlab.pipelines).toHaveLength(1);
          expect(w.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(1);
          const actions = audit(w).map((entry) => entry.action);
          for (const once of ["lease_expired", "destroy_without_approval", "vm_destroyed"]) {
            expect(actions.filter((a) => a === once)).toHaveLength(1);
          }
          expect(actions).not.toContain("approved");
          readStore(w, (store) => {
            expect(store.inventory.get("web-01")).toBeUndefined();
          });
        } finally {
          await w.close();
        }
      },
      TEST_MS,
    );
  }

  for (const moment of MOMENTS) {
    declared.push(`cancel_pipeline:${moment}`, `erase_plan:${moment}`, `unlock:${moment}`);
    it(
      `crashes at cancel_pipeline:${moment} after a rejection, and the pipeline is canceled`,
      async () => {
        const w = await startWorld(`cancel_pipeline:${moment}`);
        try {
          const { pipelineId } = await ask(w);
          const plan = await planned(w, pipelineId);
          await reject(w, plan, APPROVER);
          await until(w, () => (w.crashes >= 1 ? true : undefined), "the crash");
          await until(
            w,
            () => (w.gitlab.requestsTo("POST", /\/cancel$/).length >= 1 ? true : undefined),
            "the cancel",
          );
          await until(
            w,
            () => (requestMessage(w)?.text.endsWith("Rejected") === true ? true : undefined),
            "the request message to say it was rejected",
          );
          await settled(w);
          // Canceled once, or again after the restart: GitLab's cancel is idempotent, and a
          // pipeline waiting on its manual job reads the same before and after one.
          expect(w.gitlab.requestsTo("POST", /\/cancel$/).length).toBeLessThanOrEqual(2);
          expect(w.gitlab.pipeline(pipelineId).status).not.toBe("running");
          expect(requestMessage(w)?.text.endsWith("Rejected")).toBe(true);
          expect(w.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(0);
          expect(requestMessages(w)).toHaveLength(1);
        } finally {
          await w.close();
        }
      },
      TEST_MS,
    );

    it(
      `crashes at erase_plan:${moment} after a rejection: the plan is deleted once, and an apply played later fails`,
      async () => {
        const w = await startWorld(`erase_plan:${moment}`);
        try {
          const { pipelineId } = await ask(w);
          const plan = await planned(w, pipelineId);
          await reject(w, plan, APPROVER);
          await until(w, () => (w.crashes >= 1 ? true : undefined), "the crash");
          await until(
            w,
            () => (w.gitlab.job(pipelineId, "tf:plan").artifacts.size === 0 ? true : undefined),
            "the plan's artifacts to be deleted",
          );
          await until(
            w,
            () => (audit(w).some((entry) => entry.action === "plan_erased") ? true : undefined),
            "the deletion in the audit",
          );
          await until(
            w,
            () => (requestMessage(w)?.text.endsWith("Rejected") === true ? true : undefined),
            "the request message to say it was rejected",
          );
          // The restarted bot still follows the pipeline: an apply played in GitLab is reported once.
          w.gitlab.playJob(pipelineId, "tf:apply");
          settle(w, pipelineId, "tf:apply");
          expect(w.gitlab.job(pipelineId, "tf:apply").status).toBe("failed");
          const alarm = await until(
            w,
            () =>
              threadOf(w, requestMessage(w)!).find((m) =>
                m.text.includes("was played in GitLab after the request was rejected"),
              ),
            "the apply to be posted in the thread",
          );
          expect(alarm.text).toContain("Terraform has no plan to apply");
          // Passes after the deletion reported the apply; once the bot is settled and stopped,
          // nothing was deleted, audited or reported twice.
          await settled(w);
          expect(w.gitlab.requestsTo("DELETE", /\/jobs\/\d+\/artifacts$/)).toHaveLength(1);
          expect(audit(w).filter((entry) => entry.action === "plan_erased")).toHaveLength(1);
          expect(audit(w).filter((entry) => entry.action === "rejected")).toHaveLength(1);
          expect(requestMessage(w)?.text.endsWith("Rejected")).toBe(true);
          expect(
            threadOf(w, requestMessage(w)!).filter((m) => m.text.includes("was played in GitLab")),
          ).toHaveLength(1);
          expect(requestMessages(w)).toHaveLength(1);
        } finally {
          await w.close();
        }
      },
      TEST_MS,
    );

    it(
      `crashes at unlock:${moment}, and the unlock is finished and told once`,
      async () => {
        const w = await startWorld(`unlock:${moment}`);
        try {
          w.gitlab.addUser({ username: "alice" });
          w.gitlab.addTerraformState(PROJECT_PATH, "general", {
            lockedBy: "alice",
            lockedAt: new Date(Math.floor(Date.now() / 1000 - 3600) * 1000),
          });
          const command = await w.signer.slashCommand({
            text: "unlock",
            userId: ADMIN,
            channelId: CHANNEL,
          });
          const prompt = await w.slack.waitForResponse(
            (post) => post.url === command.responseUrl,
            WAIT_MS,
          );
          await w.signer.blockAction({
            message: {
              channel: CHANNEL,
              ts: "1796205600.000100",
              text: prompt.body.text as string,
              blocks: prompt.body.blocks as FakeMessage["blocks"],
              user: w.slack.identity.botUserId,
              bot_id: w.slack.identity.botId,
              app_id: w.slack.identity.appId,
            },
            ephemeral: true,
            actionId: "unlock_confirm",
            userId: ADMIN,
          });
          await until(w, () => (w.crashes >= 1 ? true : undefined), "the crash");
          const notice = await until(
            w,
            () => w.slack.messages.find((m) => m.text.includes("force-unlocked")),
            "the channel to be told",
          );
          // The restarted bot finishes an interrupted unlock once, at its start.
          await settled(w);
          expect(notice.channel).toBe(CHANNEL);
          expect(w.slack.messages.filter((m) => m.text.includes("force-unlocked"))).toHaveLength(1);
          expect(w.gitlab.terraformState(PROJECT_PATH, "general")?.lock).toBeNull();
          expect(w.gitlab.requestsTo("DELETE", /\/lock$/)).toHaveLength(1);
          expect(audit(w).filter((entry) => entry.action === "unlocked")).toHaveLength(1);
        } finally {
          await w.close();
        }
      },
      TEST_MS,
    );
  }

  it(
    "without VMBOT_REQUEST_ID, adopts the first pipeline after the request and says it is not sure",
    async () => {
      const w = await startWorld("create_pipeline:after", { GITLAB_REQUEST_ID_VARIABLE: "false" });
      try {
        const { pipelineId } = await ask(w);
        expect(w.crashes).toBe(1);
        expect(w.gitlab.pipelines).toHaveLength(1);
        expect(w.gitlab.pipeline(pipelineId).variables.map((v) => v.key)).not.toContain(
          "VMBOT_REQUEST_ID",
        );
        const message = await until(
          w,
          () => {
            const m = requestMessage(w);
            return JSON.stringify(m?.blocks ?? []).includes("restarted while starting")
              ? m
              : undefined;
          },
          "the note in the request message",
        );
        expect(JSON.stringify(message.blocks)).toContain(
          `vmbot restarted while starting this request and took pipeline #${pipelineId}, the first one created after it, as its own: check that it is.`,
        );
      } finally {
        await w.close();
      }
    },
    TEST_MS,
  );

  it("has a test for every crash point, before and after, each asserting its crash", () => {
    // 8 effects of the approval flow, the rejection's cancel and plan deletion, the unlock, a
    // destroy's pipeline and play, and the lease reminder, each before and after; the destroy
    // request a lease's end opens, the play of one it destroys without approval, and the lease
    // an approved extension writes. Every test above fails unless the bot crashed where
    // it asked.
    const points = [
      ...APPROVE_FLOW_POINTS,
      ...REJECT_FLOW_POINTS,
      ...UNLOCK_POINTS,
      ...DESTROY_FLOW_POINTS.map((point) => `destroy/${point}`),
      "lease_reminder",
    ];
    expect([...declared].sort()).toEqual(
      [
        ...points.flatMap((point) => MOMENTS.map((moment) => `${point}:${moment}`)),
        "lease expiry/create_pipeline:after",
        ...MOMENTS.map((moment) => `lease expiry destroy/play_destroy:${moment}`),
        ...MOMENTS.map((moment) => `extend_lease:${moment}`),
      ].sort(),
    );
    expect(new Set(declared).size).toBe(declared.length);
  });
});
