import type { RecordedRequest } from "../../sandbox/simulators/http.js";
import { mkdtempSync, rmSync } from "node:fs";
import { afterEach } from "vitest";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "../../src/clock.js";
import { loadConfig, type Config } from "../../src/config.js";
import type { ServerLimits } from "../../src/server.js";
import { startVmbot, type RunningVmbot, type StartOptions } from "../../src/start.js";
import { REQUEST_STATUSES } from "../../src/store/store.js";
import {
  startFakeGitlab,
  VM_PIPELINE_INPUTS,
  type FakeGitlab,
  type FakeGitlabOptions,
  type FakeProjectOptions,
  type InputSpec,
} from "../../sandbox/simulators/gitlab/index.js";
import {
  startFakeProxmox,
  type FakeProxmox,
  type FakeProxmoxOptions,
} from "../../sandbox/simulators/proxmox/index.js";
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
  startFakeVault,
  type FakeVault,
  type FakeVaultOptions,
} from "../../sandbox/simulators/vault/index.js";
import { captureLogs, recordSlackPayload } from "./logs.js";
import { TEST_SECRETS } from "./secrets.js";
import { freshDatabase } from "./postgres.js";
import { waitFor } from "./wait.js";

export const REQUESTER = "U0REQUESTER";
export const APPROVER = "U0APPROVER";
export const ADMIN = "U0ADMIN";
export const CHANNEL = "C0VMBOT";
export const PROJECT_PATH = "infra/vms";

/** A pipeline that also declares the sizing values as inputs (GITLAB_SIZING_PARAMS=inputs). */
export const PLATFORM_INPUTS: Record<string, InputSpec> = {
  ...VM_PIPELINE_INPUTS,
  cpu_cores: { type: "number", default: 2 },
  memory_mb: { type: "number", default: 2048 },
  disk_size_gb: { type: "number", default: 20 },
  dns_server: { default: "192.168.1.1" },
  tf_state_name: { default: "general" },
};

/**
 * The environment of a bot wired to the fakes, in HTTP mode with a test store at `db`; `change`
 * overrides or adds variables (an `undefined` value removes one).
 */
export function fakeBotEnv(
  fakes: { slack: { apiUrl: string }; gitlab: { url: string } },
  db: string,
  change: Record<string, string | undefined> = {},
): Record<string, string> {
  const env: Record<string, string | undefined> = {
    SLACK_BOT_TOKEN: TEST_SECRETS.botToken,
    SLACK_SIGNING_SECRET: TEST_SECRETS.signingSecret,
    SLACK_API_URL: fakes.slack.apiUrl,
    GITLAB_URL: fakes.gitlab.url,
    GITLAB_TOKEN: TEST_SECRETS.gitlabToken,
    GITLAB_PROJECT: PROJECT_PATH,
    VM_NODES: "pve,pve2",
    VM_TEMPLATES: "ubuntu=9000,debian=9001",
    APPROVERS: APPROVER,
    ADMINS: ADMIN,
    VMBOT_DB: db,
    PORT: "0",
    LOG_LEVEL: "debug",
    ...change,
  };
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

export interface Harness {
  slack: FakeSlack;
  gitlab: FakeGitlab;
  /** Started when the options ask for it; the bot then has PROXMOX_URL and PROXMOX_TOKEN. */
  proxmox: FakeProxmox | undefined;
  /** Started when the options ask for it; the bot then reads its GitLab and Proxmox tokens there. */
  vault: FakeVault | undefined;
  bot: RunningVmbot;
  signer: SlackSigner;
  config: Config;
  logs: string[];
  baseUrl: string;
  /** What the bot asked GitLab after start-up (its version and role check left out). */
  gitlabSinceStart(): readonly RecordedRequest[];
  close(): Promise<void>;
}

export interface HarnessOptions {
  /**
   * The bot's store: a PostgreSQL connection string, or "sqlite" for a file of the test's own.
   * Unless said, a fresh PostgreSQL database on the run's server when VMBOT_TEST_DB=postgres
   * (`npm run test:postgres`), else a SQLite file.
   */
  db?: string;
  /** Variables to set, or to remove with `undefined`. */
  env?: Record<string, string | undefined>;
  project?: Partial<FakeProjectOptions>;
  /** How the fake GitLab behaves beyond its project: its version, its GraphQL fields, its clock. */
  gitlab?: Pick<FakeGitlabOptions, "version" | "inputsQuery" | "now">;
  gitlabTimeoutMs?: number;
  /** Starts a fake Proxmox (its token defaults to the test token) and points the bot at it. */
  proxmox?: Partial<FakeProxmoxOptions> | true;
  proxmoxTimeoutMs?: number;
  nodeListMaxAgeMs?: number;
  /**
   * Starts a fake Vault holding `secret/gitlab` (token) and `secret/proxmox-readonly` (api_token) with an
   * AppRole login (`VAULT_TEST_ROLE_ID` and the test secret ID); the bot logs in with it and
   * reads both tokens there instead of GITLAB_TOKEN and PROXMOX_TOKEN.
   */
  vault?: Partial<FakeVaultOptions> | true;
  vaultTimeoutMs?: number;
  /** The bot's HTTP bounds, where a test needs them smaller. */
  httpLimits?: Partial<ServerLimits>;
  /** What time it is for the bot (see test/support/clock.ts); the machine's by default. */
  clock?: Clock;
  /** How soon Home tabs are published after a change and retried after a refusal. */
  home?: { debounceMs?: number; retryMs?: number };
  /** When the bot's attempts at the lead run, on PostgreSQL (a test holds them to pause it). */
  leaderSchedule?: StartOptions["leaderSchedule"];
  /** Runs once the fakes are up and before the bot starts, e.g. to seal the fake Vault. */
  prepare?: (fakes: {
    vault: FakeVault | undefined;
    proxmox: FakeProxmox | undefined;
    gitlab: FakeGitlab;
  }) => void;
}

export const VAULT_TEST_ROLE_ID = "4f6c2a1e-vmbot-role-id";

/** The fake Vault of `HarnessOptions.vault`: AppRole, and the bot's two secrets. */
function vaultOptions(options: Partial<FakeVaultOptions> | true): FakeVaultOptions {
  return {
    appRole: { roleId: VAULT_TEST_ROLE_ID, secretId: TEST_SECRETS.vaultSecretId },
    secrets: [
      { path: "gitlab", data: { token: TEST_SECRETS.gitlabToken } },
      { path: "proxmox-readonly", data: { api_token: TEST_SECRETS.proxmoxToken } },
    ],
    rootToken: TEST_SECRETS.vaultToken,
    ...(options === true ? {} : options),
  };
}

/**
 * The real bot (Bolt in HTTP mode, gitbeaker, the SQLite store) wired to the Slack and GitLab
 * fakes on loopback, with its logs captured for assertions and the suite's secret scan.
 */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const slack = await startFakeSlack({ botToken: TEST_SECRETS.botToken });
  const gitlab = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, inputs: VM_PIPELINE_INPUTS, ...options.project }],
    ...options.gitlab,
  });
  const proxmox =
    options.proxmox === undefined
      ? undefined
      : await startFakeProxmox({
          token: TEST_SECRETS.proxmoxToken,
          ...(options.proxmox === true ? {} : options.proxmox),
        });
  const vault =
    options.vault === undefined ? undefined : await startFakeVault(vaultOptions(options.vault));
  const closeFakes = () =>
    Promise.all([slack.close(), gitlab.close(), proxmox?.close(), vault?.close()]);
  const dir = mkdtempSync(join(tmpdir(), "vmbot-it-"));
  const database = await databaseFor(options);
  const config = loadConfig(
    fakeBotEnv({ slack, gitlab }, database?.url ?? join(dir, "vmbot.sqlite"), {
      // Tests run the tracker's passes themselves (bot.tracker.tick()).
      POLL_INTERVAL_MS: "3600000",
      ...(proxmox === undefined
        ? {}
        : { PROXMOX_URL: proxmox.url, PROXMOX_TOKEN: TEST_SECRETS.proxmoxToken }),
      ...(vault === undefined
        ? {}
        : {
            VAULT_ADDR: vault.url,
            VAULT_ROLE_ID: VAULT_TEST_ROLE_ID,
            VAULT_SECRET_ID: TEST_SECRETS.vaultSecretId,
            VAULT_GITLAB_PATH: "gitlab",
            GITLAB_TOKEN: undefined,
            PROXMOX_TOKEN: undefined,
          }),
      ...options.env,
    }),
  );
  options.prepare?.({ vault, proxmox, gitlab });
  const captured = captureLogs();
  let bot: RunningVmbot;
  try {
    bot = await startVmbot(config, {
      logDestination: captured.stream,
      gitlabTimeoutMs: options.gitlabTimeoutMs ?? 5_000,
      proxmoxTimeoutMs: options.proxmoxTimeoutMs ?? 3_000,
      ...(options.nodeListMaxAgeMs === undefined
        ? {}
        : { nodeListMaxAgeMs: options.nodeListMaxAgeMs }),
      vaultTimeoutMs: options.vaultTimeoutMs ?? 3_000,
      ...(options.httpLimits === undefined ? {} : { httpLimits: options.httpLimits }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.home === undefined ? {} : { home: options.home }),
      ...(options.leaderSchedule === undefined ? {} : { leaderSchedule: options.leaderSchedule }),
    });
  } catch (error) {
    await closeFakes();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const baseUrl = `http://127.0.0.1:${bot.port}`;
  const gitlabAtStart = gitlab.requests.length;
  const signer = createSlackSigner({
    eventsUrl: `${baseUrl}/slack/events`,
    signingSecret: TEST_SECRETS.signingSecret,
    slack,
  });
  return {
    slack,
    gitlab,
    proxmox,
    vault,
    bot,
    signer,
    config,
    logs: captured.lines,
    baseUrl,
    gitlabSinceStart: () => gitlab.requests.slice(gitlabAtStart),
    async close() {
      await bot.stop(2_000);
      for (const call of slack.calls) recordSlackPayload(call.method, call.args);
      for (const post of slack.responses) recordSlackPayload("response_url", post.body);
      for (const upload of slack.uploads) recordSlackPayload("upload", upload);
      await closeFakes();
      await database?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The PostgreSQL database a bot's store is in, when it is in one (see `HarnessOptions.db`). */
async function databaseFor(options: HarnessOptions) {
  if (options.db === "sqlite") return undefined;
  if (options.db !== undefined) return { url: options.db, drop: () => Promise.resolve() };
  return process.env.VMBOT_TEST_DB === "postgres" ? freshDatabase() : undefined;
}

/**
 * One harness per test, closed after it: `const start = harnessPerTest();` at the top of a test
 * file, then `const h = await start(options)` in each test.
 */
export function harnessPerTest(): (options?: HarnessOptions) => Promise<Harness> {
  let current: Harness | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return async (options) => (current = await startHarness(options));
}

/** Runs the simulated runner until `job` waits for a person or has finished. */
export function runUntilSettled(h: Harness, pipelineId: number, job: string): void {
  for (let i = 0; i < 30; i += 1) {
    const status = h.gitlab.job(pipelineId, job).status;
    if (["success", "failed", "canceled", "manual"].includes(status)) return;
    h.gitlab.advance(pipelineId);
  }
  throw new Error(`${job} did not settle`);
}

/**
 * Asks for a VM and runs its plan until the request awaits approval: its pipeline, its ID, its
 * message and the thread's replies (uploads left out), read afresh at each call.
 */
export async function planRequest(h: Harness, name = "web-01") {
  const pipelineId = await askForVm(h, name);
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "tf:plan");
  await h.bot.tracker.tick();
  const request = (await h.bot.store.listActive()).find((r) => r.spec.name === name);
  if (request?.status !== "awaiting_approval" || request.messageTs === null) {
    throw new Error(`the plan for ${name} was not posted for approval (${request?.status})`);
  }
  const ts = request.messageTs;
  const message = () => {
    const found = h.slack.message(CHANNEL, ts);
    if (found === undefined) throw new Error(`the request message of ${name} is gone`);
    return found;
  };
  const thread = () => h.slack.messages.filter((m) => m.thread_ts === ts && m.files === undefined);
  return { pipelineId, requestId: request.id, message, thread };
}

/** Every request the bot's store holds, whatever its status, oldest first. */
export const requestsOf = (h: Harness) => h.bot.store.listByStatus(REQUEST_STATUSES);

/** A signed click on the button `actionId` of `message`, by `userId`. */
export const click = (h: Harness, message: FakeMessage, userId: string, actionId: string) =>
  h.signer.blockAction({ message, userId, actionId });

/**
 * Rejects a plan as an approver does: the Reject button, then its form, sent with `reason` (or
 * left blank). Resolves with the form's delivery; the rejection follows its acknowledgement.
 */
export async function reject(
  h: Pick<Harness, "signer" | "slack">,
  message: FakeMessage,
  userId: string,
  reason?: string,
) {
  const clicked = await h.signer.blockAction({ message, userId, actionId: "plan_reject" });
  await h.slack.waitFor("views.open", (call) => call.args.trigger_id === clicked.triggerId);
  const view = h.slack.views.at(-1)!;
  return h.signer.viewSubmission({
    view,
    values: stateValuesFor(view, reason === undefined ? {} : { reject_reason: reason }),
    userId,
  });
}

/**
 * Asks for a VM through Slack as a person would (`/vm create`, then the form) and returns the
 * ID of the pipeline it started, once the request has recorded it.
 */
export async function askForVm(h: Harness, name = "web-01"): Promise<number> {
  await h.signer.slashCommand({ text: `create ${name}`, userId: REQUESTER, channelId: CHANNEL });
  await h.slack.waitFor("views.open", (c) => JSON.stringify(c.args.view).includes(name));
  const view = h.slack.views.at(-1)!;
  const before = h.gitlab.pipelines.length;
  // Each request its own address (a second one with the first's is refused): .50, .51, ...
  const earlier = (await h.bot.store.listByStatus(REQUEST_STATUSES)).length;
  await h.signer.viewSubmission({
    view,
    values: stateValuesFor(view, { vm_name: name, vm_ip: `192.168.1.${50 + earlier}/24` }),
    userId: REQUESTER,
  });
  return waitFor(async () => {
    const created = h.gitlab.pipelines.length > before;
    const recorded = (await h.bot.store.listActive()).every((r) => r.pipelineId !== null);
    return created && recorded ? h.gitlab.pipelines.at(-1)!.id : undefined;
  }, "the pipeline of the new request");
}
