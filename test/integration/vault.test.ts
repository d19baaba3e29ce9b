import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Scheduler } from "../../src/clock.js";
import { createGitlab } from "../../src/gitlab/gitlab.js";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { StartupError } from "../../src/start.js";
import { createVault } from "../../src/vault/vault.js";
import { userMessage } from "../../src/views/errors.js";
import { fakeNode } from "../../sandbox/simulators/proxmox/index.js";
import {
  askForVm,
  CHANNEL,
  harnessPerTest,
  PROJECT_PATH,
  REQUESTER,
  VAULT_TEST_ROLE_ID,
  type Harness,
  type HarnessOptions,
} from "../support/harness.js";
import { waitFor } from "../support/wait.js";
import { TEST_SECRETS } from "../support/secrets.js";

const start = harnessPerTest();

const ROTATED_GITLAB_TOKEN = "glpat-RotatedGitlabToken00002";
const ROTATED_PROXMOX_TOKEN = "vmbot@pve!capacity=7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6";

/** Starts a bot whose start-up must fail, and returns the StartupError's message. */
async function startupFailure(options: HarnessOptions): Promise<string> {
  const failure = await start(options).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(StartupError);
  const message = (failure as Error).message;
  for (const secret of Object.values(TEST_SECRETS)) expect(message).not.toContain(secret);
  return message;
}

async function capacityText(h: Harness): Promise<string> {
  const delivery = await h.signer.slashCommand({
    text: "capacity",
    userId: REQUESTER,
    channelId: CHANNEL,
  });
  const post = await h.slack.waitForResponse((p) => p.url === delivery.responseUrl);
  return `${String(post.body.text)}\n${JSON.stringify(post.body.blocks)}`;
}

const DAY_MS = 24 * 3_600_000;

/** A scheduler that runs nothing by itself: the test sees each wait and fires it. */
function recordingScheduler(): Scheduler & {
  waiting(): number[];
  fire(): Promise<void>;
} {
  const pending = new Set<{ delayMs: number; work: () => void }>();
  return {
    after(delayMs, work) {
      const entry = { delayMs, work };
      pending.add(entry);
      return () => {
        pending.delete(entry);
      };
    },
    waiting: () => [...pending].map((entry) => entry.delayMs),
    async fire() {
      const due = [...pending];
      pending.clear();
      for (const entry of due) entry.work();
      await waitFor(() => (pending.size > 0 ? true : undefined), "the next wait to be set");
    },
  };
}

const silentLogger = () => createLogger({ level: "silent", redactor: createRedactor() });

const privateToken = (h: Harness) => h.gitlab.requests.at(-1)?.headers["private-token"];

describe("secrets from Vault", () => {
  it("logs in with AppRole and uses the GitLab and Proxmox tokens it reads", async () => {
    const h = await start({ vault: true, proxmox: true });
    const logins = h.vault!.requestsTo("POST", /^\/v1\/auth\/approle\/login$/);
    expect(logins).toHaveLength(1);
    expect(JSON.parse(logins[0]!.body)).toEqual({
      role_id: VAULT_TEST_ROLE_ID,
      secret_id: TEST_SECRETS.vaultSecretId,
    });
    // The token Vault issued is the one the reads carry.
    const issued = h.vault!.requestsTo("GET", /^\/v1\/secret\/data\/gitlab$/)[0];
    expect(issued?.headers["x-vault-token"]).toMatch(/^hvs\./);
    await askForVm(h);
    expect(privateToken(h)).toBe(TEST_SECRETS.gitlabToken);
    expect(await capacityText(h)).toContain("*pve1*");
    expect(h.proxmox!.requests.at(-1)?.headers.authorization).toBe(
      `PVEAPIToken=${TEST_SECRETS.proxmoxToken}`,
    );
  });

  it("picks up a GitLab token rotated in Vault on the next GitLab call, without a restart", async () => {
    const h = await start({ vault: true });
    await askForVm(h, "web-01");
    h.vault!.writeSecret("gitlab", { token: ROTATED_GITLAB_TOKEN });
    h.gitlab.rotateToken(ROTATED_GITLAB_TOKEN);
    const pipelines = h.gitlab.pipelines.length;
    await askForVm(h, "web-02");
    // One refused attempt with the old token, then the same call with the new one: one pipeline.
    expect(h.gitlab.pipelines).toHaveLength(pipelines + 1);
    const creates = h.gitlab.requestsTo("POST", /\/pipeline$/).slice(-2);
    expect(creates.map((request) => request.headers["private-token"])).toEqual([
      TEST_SECRETS.gitlabToken,
      ROTATED_GITLAB_TOKEN,
    ]);
    expect((await h.bot.store.listActive()).every((request) => request.status !== "failed")).toBe(
      true,
    );
  });

  it("picks up a Proxmox token rotated in Vault on the next Proxmox call", async () => {
    const h = await start({ vault: true, proxmox: { nodes: [fakeNode("pve1")] } });
    expect(await capacityText(h)).toContain("*pve1*");
    h.vault!.writeSecret("proxmox-readonly", { api_token: ROTATED_PROXMOX_TOKEN });
    h.proxmox!.setToken(ROTATED_PROXMOX_TOKEN);
    expect(await capacityText(h)).toContain("*pve1*");
    expect(h.proxmox!.requests.at(-1)?.headers.authorization).toBe(
      `PVEAPIToken=${ROTATED_PROXMOX_TOKEN}`,
    );
    // One refused attempt with the old token, one with the new.
    expect(h.proxmox!.requests.map((request) => request.headers.authorization)).toEqual([
      `PVEAPIToken=${TEST_SECRETS.proxmoxToken}`,
      `PVEAPIToken=${TEST_SECRETS.proxmoxToken}`,
      `PVEAPIToken=${ROTATED_PROXMOX_TOKEN}`,
    ]);
  });

  it("renews its token before it expires, and logs in again once renewal stops extending it", async () => {
    // Tokens live 2 s and at most 4 s; the fake's clock follows the real one, a quarter second
    // at a time.
    const h = await start({
      vault: {
        appRole: {
          roleId: VAULT_TEST_ROLE_ID,
          secretId: TEST_SECRETS.vaultSecretId,
          tokenTtl: 2,
          tokenMaxTtl: 4,
        },
      },
    });
    const clock = setInterval(() => {
      h.vault!.advance(0.25);
    }, 250);
    try {
      const login = /^\/v1\/auth\/approle\/login$/;
      await waitFor(
        () => (h.vault!.requestsTo("POST", login).length >= 2 ? true : undefined),
        "a second login after the token reached its max TTL",
        10_000,
      );
      // The first token was renewed (a renewal only counts while the token is valid), and the
      // bot never used it past its life: no read or renewal was refused.
      const first = h.vault!.requestsTo("GET", /^\/v1\/secret\/data\/gitlab$/)[0];
      const firstToken = h.vault!.token(String(first?.headers["x-vault-token"]));
      expect(firstToken?.renewals).toBeGreaterThanOrEqual(1);
      expect(h.logs.some((line) => line.includes("Vault refused to renew"))).toBe(false);
      // After the re-login, reads carry the new token.
      h.vault!.writeSecret("gitlab", { token: ROTATED_GITLAB_TOKEN });
      h.gitlab.rotateToken(ROTATED_GITLAB_TOKEN);
      await askForVm(h);
      const reads = h.vault!.requestsTo("GET", /^\/v1\/secret\/data\/gitlab$/);
      const tokens = new Set(reads.map((read) => read.headers["x-vault-token"]));
      expect(tokens.size).toBe(2);
    } finally {
      clearInterval(clock);
    }
  }, 20_000);

  it("logs in again when Vault refuses to renew the token", async () => {
    const h = await start({
      vault: {
        appRole: { roleId: VAULT_TEST_ROLE_ID, secretId: TEST_SECRETS.vaultSecretId, tokenTtl: 2 },
      },
    });
    h.vault!.refuseRenewal("permission-denied");
    await waitFor(
      () =>
        h.vault!.requestsTo("POST", /^\/v1\/auth\/approle\/login$/).length >= 2 ? true : undefined,
      "a login after the refused renewal",
      6_000,
    );
    expect(
      h.vault!.requestsTo("POST", /^\/v1\/auth\/token\/renew-self$/).length,
    ).toBeGreaterThanOrEqual(1);
    expect(h.logs.some((line) => line.includes("Vault refused to renew the token"))).toBe(true);
  }, 10_000);

  it("logs in with VAULT_TOKEN, and with Kubernetes auth from the service-account token file", async () => {
    const withToken = await start({
      vault: true,
      env: {
        VAULT_ROLE_ID: undefined,
        VAULT_SECRET_ID: undefined,
        VAULT_TOKEN: TEST_SECRETS.vaultToken,
      },
    });
    expect(withToken.vault!.requestsTo("GET", /^\/v1\/auth\/token\/lookup-self$/)).toHaveLength(1);
    await withToken.close();

    const dir = mkdtempSync(join(tmpdir(), "vmbot-k8s-"));
    const jwtFile = join(dir, "token");
    writeFileSync(jwtFile, "eyJhbGciOiJSUzI1NiJ9.service-account.signature\n");
    try {
      const withK8s = await start({
        vault: {
          kubernetes: { role: "vmbot", jwt: "eyJhbGciOiJSUzI1NiJ9.service-account.signature" },
        },
        env: {
          VAULT_ROLE_ID: undefined,
          VAULT_SECRET_ID: undefined,
          VAULT_K8S_ROLE: "vmbot",
          VAULT_K8S_TOKEN_FILE: jwtFile,
        },
      });
      const [login] = withK8s.vault!.requestsTo("POST", /^\/v1\/auth\/kubernetes\/login$/);
      expect(JSON.parse(login!.body)).toEqual({
        role: "vmbot",
        jwt: "eyJhbGciOiJSUzI1NiJ9.service-account.signature",
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("keeping the Vault login healthy", () => {
  it("waits out Vault's default 768-hour TTL a day at a time instead of renewing in a loop", async () => {
    const h = await start({ vault: true });
    const scheduler = recordingScheduler();
    const vault = createVault({
      addr: h.vault!.url,
      auth: { method: "approle", roleId: VAULT_TEST_ROLE_ID, secretId: TEST_SECRETS.vaultSecretId },
      kvMount: "secret",
      log: silentLogger(),
      redactor: createRedactor(),
      scheduler,
    });
    const renewals = () => h.vault!.requestsTo("POST", /^\/v1\/auth\/token\/renew-self$/);
    const before = renewals().length;
    try {
      await vault.start();
      // 80% of 768 hours is past what a Node timer can wait: the bot waits a day, then looks again.
      expect(scheduler.waiting()).toStrictEqual([DAY_MS]);
      expect(renewals()).toHaveLength(before);

      await scheduler.fire();
      expect(renewals()).toHaveLength(before + 1);
      expect(scheduler.waiting()).toStrictEqual([DAY_MS]);
    } finally {
      vault.stop();
    }
    expect(scheduler.waiting()).toStrictEqual([]);
  });

  it("tries a failed renewal of VAULT_TOKEN again when Vault was only unreachable", async () => {
    const h = await start({
      vault: { tokens: [{ id: "hvs.ShortLivedDeployToken000001", ttl: 2 }] },
      env: {
        VAULT_ROLE_ID: undefined,
        VAULT_SECRET_ID: undefined,
        VAULT_TOKEN: "hvs.ShortLivedDeployToken000001",
      },
    });
    h.vault!.failNext({ path: /renew-self$/ }, { status: 500 });
    await waitFor(
      () =>
        h.vault!.requestsTo("POST", /^\/v1\/auth\/token\/renew-self$/).length >= 2
          ? true
          : undefined,
      "a second renewal",
      6_000,
    );
    expect(h.vault!.token("hvs.ShortLivedDeployToken000001")?.renewals).toBeGreaterThanOrEqual(1);
    expect(
      h.logs.some((line) => line.includes("could not renew the Vault token; trying again")),
    ).toBe(true);
  });

  it("does not log in again when a policy, not the token, denies a read", async () => {
    const h = await start({
      vault: true,
      proxmox: true,
      prepare: ({ vault }) => {
        vault?.denyPath("secret/data/proxmox-readonly");
      },
    });
    for (let i = 0; i < 3; i += 1) {
      expect(await capacityText(h)).toContain(
        "Vault denied vmbot permission to read `secret/proxmox-readonly`",
      );
    }
    expect(h.vault!.requestsTo("POST", /^\/v1\/auth\/approle\/login$/)).toHaveLength(1);
  });

  it("lets two calls refused at once both pick up a rotated GitLab token", async () => {
    const h = await start({ vault: true });
    const pipelineId = await askForVm(h);
    h.vault!.writeSecret("gitlab", { token: ROTATED_GITLAB_TOKEN });
    h.gitlab.rotateToken(ROTATED_GITLAB_TOKEN);
    const vault = createVault({
      addr: h.vault!.url,
      auth: { method: "approle", roleId: VAULT_TEST_ROLE_ID, secretId: TEST_SECRETS.vaultSecretId },
      kvMount: "secret",
      log: silentLogger(),
      redactor: createRedactor(),
    });
    await vault.start();
    const source = vault.source("gitlab", "token");
    // The cache holds the old token, as a bot that read it before the rotation would.
    h.vault!.writeSecret("gitlab", { token: TEST_SECRETS.gitlabToken });
    await source.get();
    h.vault!.writeSecret("gitlab", { token: ROTATED_GITLAB_TOKEN });
    const gitlab = createGitlab({
      url: h.gitlab.url,
      token: source,
      project: PROJECT_PATH,
      ref: "main",
      pipelineParams: "inputs",
    });
    const [a, b] = await Promise.all([gitlab.pipeline(pipelineId), gitlab.pipeline(pipelineId)]);
    expect([a.id, b.id]).toEqual([pipelineId, pipelineId]);
    vault.stop();
  });

  it("keeps using a secret it read before while Vault is sealed, for a while", async () => {
    const h = await start({ vault: true });
    const vault = createVault({
      addr: h.vault!.url,
      auth: { method: "approle", roleId: VAULT_TEST_ROLE_ID, secretId: TEST_SECRETS.vaultSecretId },
      kvMount: "secret",
      log: silentLogger(),
      redactor: createRedactor(),
      cacheMs: 0,
    });
    await vault.start();
    expect(await vault.secret("gitlab", "token")).toBe(TEST_SECRETS.gitlabToken);
    h.vault!.seal();
    expect(await vault.secret("gitlab", "token")).toBe(TEST_SECRETS.gitlabToken);
    // A secret never read before cannot be made up.
    const unread = await vault.secret("proxmox", "api_token").catch((error: unknown) => error);
    expect(userMessage(unread)).toMatch(/is sealed \(503\)/);
    vault.stop();
  });
});

describe("Vault failures name the path and the cause, never the secret", () => {
  it("stops start-up when Vault is sealed", async () => {
    const message = await startupFailure({
      vault: true,
      prepare: ({ vault }) => {
        vault?.seal();
      },
    });
    expect(message).toMatch(
      /^Vault: Vault at http:\/\/127\.0\.0\.1:\d+ is sealed \(503\), so vmbot could not log in\. It works again once Vault is unsealed\.$/,
    );
  });

  it("stops start-up when Vault is unreachable", async () => {
    const message = await startupFailure({
      vault: true,
      env: { VAULT_ADDR: "http://127.0.0.1:9" },
    });
    expect(message).toBe(
      "Vault: Vault at http://127.0.0.1:9 could not be reached (ECONNREFUSED) when vmbot tried to log in. Check that Vault is up and VAULT_ADDR is right.",
    );
  });

  it("stops start-up when the AppRole login is refused", async () => {
    const message = await startupFailure({
      vault: true,
      env: { VAULT_SECRET_ID: "00000000-wrong-secret-id" },
    });
    expect(message).toBe(
      "Vault: Vault refused vmbot's login when it tried to log in (400: invalid role or secret ID). Check VAULT_ROLE_ID and VAULT_SECRET_ID, VAULT_K8S_ROLE or VAULT_TOKEN.",
    );
  });

  it("stops start-up when the GitLab token's path is denied, missing, or lacks the key", async () => {
    expect(
      await startupFailure({
        vault: true,
        prepare: ({ vault }) => {
          vault?.denyPath("secret/data/gitlab");
        },
      }),
    ).toBe(
      "Vault: Vault denied vmbot permission to read `secret/gitlab` (403: permission denied). Check the policy attached to vmbot's Vault login.",
    );
    expect(await startupFailure({ vault: true, env: { VAULT_GITLAB_PATH: "ci/gitlab" } })).toBe(
      "Vault: Vault has no secret `secret/ci/gitlab` (404): check VAULT_KV_MOUNT and the path, and that the mount is KV version 2.",
    );
    expect(
      await startupFailure({
        vault: true,
        prepare: ({ vault }) => {
          vault?.writeSecret("gitlab", { api_token: "not-the-key-vmbot-reads" });
        },
      }),
    ).toBe(
      "Vault: The Vault secret `secret/gitlab` has no key `token`: add it there (KV version 2).",
    );
  });

  it("starts while Vault is sealed when Vault holds only the Proxmox token, and recovers", async () => {
    const h = await start({
      vault: true,
      proxmox: true,
      env: { VAULT_GITLAB_PATH: undefined, GITLAB_TOKEN: TEST_SECRETS.gitlabToken },
      prepare: ({ vault }) => {
        vault?.seal();
      },
    });
    expect(await capacityText(h)).toContain("is sealed (503)");
    h.vault!.unseal();
    await waitFor(
      () =>
        h.vault!.requestsTo("POST", /^\/v1\/auth\/approle\/login$/).length >= 2 ? true : undefined,
      "a login once Vault is unsealed",
      8_000,
    );
    expect(await capacityText(h)).toContain("*pve1*");
  });

  it("reads the Proxmox token at the older default, secret/proxmox, and warns that it should be read-only", async () => {
    const h = await start({
      vault: true,
      proxmox: true,
      prepare: ({ vault }) => {
        vault?.deleteSecretMetadata("proxmox-readonly");
        vault?.writeSecret("proxmox", { api_token: TEST_SECRETS.proxmoxToken });
      },
    });
    expect(await capacityText(h)).toContain("Proxmox capacity: 2 of 3 nodes online");
    const warning = h.logs.find((line) => line.includes("not at secret/proxmox-readonly"));
    expect(warning).toContain(
      "vmbot reads the Proxmox token at secret/proxmox, not at secret/proxmox-readonly: that secret usually holds the pipeline's provisioning token. Give vmbot a read-only (PVEAuditor) token at secret/proxmox-readonly",
    );
  });

  it("starts without the Proxmox token, and /vm capacity says why", async () => {
    const h = await start({
      vault: true,
      proxmox: true,
      prepare: ({ vault }) => {
        vault?.deleteSecretMetadata("proxmox-readonly");
      },
    });
    expect(await capacityText(h)).toContain(
      "vmbot could not read the nodes' capacity. Vault has no secret `secret/proxmox-readonly` (404)",
    );
    expect(h.proxmox!.requests).toHaveLength(0);
  });

  it("refuses a Proxmox token in Vault that is not one, without sending it anywhere", async () => {
    const h = await start({
      vault: true,
      proxmox: true,
      prepare: ({ vault }) => {
        vault?.writeSecret("proxmox-readonly", { api_token: "just-a-password-123" });
      },
    });
    expect(await capacityText(h)).toContain(
      "The `api_token` in the Vault secret `secret/proxmox-readonly` does not look like a Proxmox API token (user@realm!tokenid=secret).",
    );
    expect(h.proxmox!.requests).toHaveLength(0);
    expect(h.logs.join("\n")).not.toContain("just-a-password-123");
  });

  it("tells the person in Slack when Vault is sealed while the bot runs, and recovers", async () => {
    const h = await start({ vault: true, proxmox: true });
    h.vault!.writeSecret("proxmox-readonly", { api_token: ROTATED_PROXMOX_TOKEN });
    h.proxmox!.setToken(ROTATED_PROXMOX_TOKEN);
    h.vault!.seal();
    expect(await capacityText(h)).toContain("is sealed (503)");
    h.vault!.unseal();
    expect(await capacityText(h)).toContain("*pve1*");
  });
});
