/**
 * The platform the sandbox runs vmbot against, simulated on loopback: Slack's Web API, GitLab with
 * a runner that moves pipelines along on its own, Proxmox with three nodes, and Vault holding the
 * bot's GitLab and Proxmox tokens. The same simulators the integration tests use.
 *
 * Scenarios change what the simulated platform does next, for the pipelines created while they
 * are on: a plan that replaces the VM, a configure job that fails or cannot reach the host, a
 * Terraform state lock someone left behind, a slow Proxmox.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  FAILING_TASKS,
  syntheticAnsibleRun,
  syntheticLockError,
  syntheticReplaceApply,
  syntheticReplacePlan,
  UNREACHABLE_TASKS,
} from "./simulators/gitlab/traces.js";
import {
  startFakeGitlab,
  VM_PIPELINE_INPUTS,
  vmParamsOf,
  type FakeGitlab,
  type FakePipeline,
} from "./simulators/gitlab/index.js";
import { startFakeProxmox, type FakeProxmox } from "./simulators/proxmox/index.js";
import { startFakeSlack, type FakeSlack } from "./simulators/slack/index.js";
import { startFakeVault, type FakeVault } from "./simulators/vault/index.js";

/**
 * The people the page lets you be, and what each may do: the example request policy
 * (examples/policy/policy.yaml) names them. Robin is in devs, Alex in platform, Sam in security
 * and an admin; Casey is in no group.
 */
export const PEOPLE = {
  requester: { id: "U0SBXROBIN", name: "robin", realName: "Robin (requester)" },
  approver: { id: "U0SBXALEX", name: "alex", realName: "Alex (approver)" },
  admin: { id: "U0SBXSAM", name: "sam", realName: "Sam (admin)" },
  stranger: { id: "U0SBXCASEY", name: "casey", realName: "Casey (not on any list)" },
} as const;

export type Person = keyof typeof PEOPLE;

export const CHANNEL = { id: "C0SBXVMREQ", name: "vm-requests" } as const;

export const PROJECT_PATH = "platform/vm-provisioning";
const PROJECT_ID = 42;
const STATE_NAME = "general";

export const SCENARIOS = {
  replace: {
    label: "Plan replaces the VM",
    detail: "The next plans move the VM to another node, which forces a destroy and a re-create.",
  },
  "failing-configure": {
    label: "Configure job fails",
    detail: "Ansible fails starting the guest agent on the new VM.",
  },
  unreachable: {
    label: "Host unreachable",
    detail: "Ansible cannot reach the new VM over SSH.",
  },
  "stuck-lock": {
    label: "Stuck state lock",
    detail:
      "A crashed job left the Terraform state locked: plans fail until an admin runs /vm unlock.",
  },
  "slow-proxmox": {
    label: "Slow Proxmox",
    detail: "Every Proxmox API answer takes 2.5 seconds.",
  },
} as const;

export type Scenario = keyof typeof SCENARIOS;

export const isScenario = (name: string): name is Scenario => Object.hasOwn(SCENARIOS, name);

/** How long each Proxmox answer takes with `slow-proxmox` on. */
const SLOW_PROXMOX_MS = 2_500;

export interface SimulatedPlatform {
  slack: FakeSlack;
  gitlab: FakeGitlab;
  proxmox: FakeProxmox;
  vault: FakeVault;
  /** The bot's environment for these simulators (no store path, port or log level). */
  env: Record<string, string>;
  signingSecret: string;
  scenarios(): Record<Scenario, boolean>;
  setScenario(name: Scenario, on: boolean): void;
  /** From now on, GitLab delivers Pipeline and Job Hooks to the bot, and the runner advances. */
  run(options: { webhookUrl: string; paceMs: number }): void;
  /** Stops the runner and the webhooks: nothing changes on its own any more. */
  pause(): void;
  close(): Promise<void>;
}

const secret = (bytes: number): string => randomBytes(bytes).toString("hex");

/**
 * The example request policy, which names the people above: found upward from this module, so
 * that it is the same file from the sources and from the built sandbox.
 */
export function examplePolicyPath(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, "examples", "policy", "policy.yaml");
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir)
      throw new Error("the sandbox cannot find examples/policy/policy.yaml");
  }
}

export async function startSimulatedPlatform(): Promise<SimulatedPlatform> {
  // Fresh credentials on every start: nothing here is a real secret, and none is reused.
  const botToken = `xoxb-${secret(6)}-${secret(6)}-${secret(12)}`;
  const signingSecret = secret(16);
  const gitlabToken = `glpat-${secret(10)}`;
  const proxmoxToken = `vmbot@pve!sandbox=${randomUUID()}`;
  const roleId = randomUUID();
  const secretId = randomUUID();
  const webhookSecret = secret(16);

  const slack = await startFakeSlack({ botToken });
  const started: { close(): Promise<void> }[] = [slack];
  try {
    for (const person of Object.values(PEOPLE)) {
      slack.addUser({ id: person.id, name: person.name, realName: person.realName });
    }
    slack.addChannel({ id: CHANNEL.id, name: CHANNEL.name });
    const gitlab = await startFakeGitlab({
      token: gitlabToken,
      // Maintainer: what /vm unlock needs (README, GitLab).
      projects: [
        { id: PROJECT_ID, path: PROJECT_PATH, inputs: VM_PIPELINE_INPUTS, role: "maintainer" },
      ],
    });
    started.push(gitlab);
    const proxmox = await startFakeProxmox({ token: proxmoxToken });
    started.push(proxmox);
    const vault = await startFakeVault({
      appRole: { roleId, secretId },
      secrets: [
        { path: "gitlab", data: { token: gitlabToken } },
        { path: "proxmox-readonly", data: { api_token: proxmoxToken } },
      ],
    });
    started.push(vault);
    const lockHolder = gitlab.addUser({ username: "ci-runner", name: "CI runner" });

    const lockHeld = () => Boolean(gitlab.terraformState(PROJECT_ID, STATE_NAME)?.lock);

    const on: Record<Scenario, boolean> = {
      replace: false,
      "failing-configure": false,
      unreachable: false,
      "stuck-lock": false,
      "slow-proxmox": false,
    };

    // What the scenarios make of a new pipeline's jobs, decided when GitLab creates it.
    gitlab.onPipelineCreated((pipeline: FakePipeline) => {
      const vm = vmParamsOf(pipeline);
      const host = vm.name ?? "web-01";
      const traces: Record<string, string> = {};
      const lock = gitlab.terraformState(PROJECT_ID, STATE_NAME)?.lock;
      if (on["stuck-lock"] && lock) {
        traces["tf:plan"] = syntheticLockError({
          id: lock.id,
          who: `${lockHolder.username}@runner-7f3a9c`,
          createdAt: new Date(lock.lockedAt),
        });
      } else if (on.replace) {
        traces["tf:plan"] = syntheticReplacePlan(vm);
        traces["tf:apply"] = syntheticReplaceApply(vm);
      }
      if (on.unreachable) {
        traces["ansible:configure"] = syntheticAnsibleRun({ host, tasks: [...UNREACHABLE_TASKS] });
      } else if (on["failing-configure"]) {
        traces["ansible:configure"] = syntheticAnsibleRun({ host, tasks: [...FAILING_TASKS] });
      }
      if (Object.keys(traces).length > 0) gitlab.setTraces(pipeline.id, traces);
    });

    const setScenario = (name: Scenario, value: boolean): void => {
      on[name] = value;
      if (name === "slow-proxmox") proxmox.setDelay(value ? SLOW_PROXMOX_MS : 0);
      if (name === "stuck-lock") {
        const state = gitlab.terraformState(PROJECT_ID, STATE_NAME);
        if (value && !state?.lock) {
          gitlab.lockTerraformState(PROJECT_ID, STATE_NAME, {
            lockedBy: lockHolder.username,
            lockedAt: new Date(Date.now() - 47 * 60_000),
          });
        } else if (!value && state?.lock) {
          gitlab.unlockTerraformState(PROJECT_ID, STATE_NAME);
        }
      }
    };

    // The state the pipelines write, so `/vm unlock` has something to show.
    gitlab.addTerraformState(PROJECT_ID, STATE_NAME);

    return {
      slack,
      gitlab,
      proxmox,
      vault,
      signingSecret,
      env: {
        SLACK_BOT_TOKEN: botToken,
        SLACK_SIGNING_SECRET: signingSecret,
        SLACK_API_URL: slack.apiUrl,
        SLACK_CHANNEL: CHANNEL.id,
        GITLAB_URL: gitlab.url,
        GITLAB_PROJECT: PROJECT_PATH,
        GITLAB_WEBHOOK_SECRET: webhookSecret,
        VAULT_ADDR: vault.url,
        VAULT_ROLE_ID: roleId,
        VAULT_SECRET_ID: secretId,
        VAULT_GITLAB_PATH: "gitlab",
        PROXMOX_URL: proxmox.url,
        VM_NODES: "pve1,pve2",
        VM_TEMPLATES: "ubuntu-24.04=9000,debian-12=9001",
        // The policy's groups decide who asks, approves and unlocks: no access lists.
        VMBOT_POLICY: examplePolicyPath(),
        POLL_INTERVAL_MS: "2000",
      },
      // A stuck lock that an admin's /vm unlock removed is over: the switch shows it.
      scenarios: () => ({ ...on, "stuck-lock": on["stuck-lock"] && lockHeld() }),
      setScenario,
      run({ webhookUrl, paceMs }) {
        gitlab.deliverHooks({ url: webhookUrl, secretToken: webhookSecret });
        gitlab.autoAdvance({ intervalMs: paceMs });
      },
      pause() {
        gitlab.stopAutoAdvance();
        gitlab.stopHooks();
      },
      async close() {
        gitlab.stopAutoAdvance();
        gitlab.stopHooks();
        await Promise.all(started.map((server) => server.close()));
      },
    };
  } catch (error) {
    await Promise.all(started.map((server) => server.close()));
    throw error;
  }
}
