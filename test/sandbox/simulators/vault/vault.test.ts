import nodeVault from "node-vault";
import { afterEach, describe, expect, it } from "vitest";
import {
  startFakeVault,
  type FakeVault,
  type FakeVaultOptions,
} from "../../../../sandbox/simulators/vault/index.js";

const ROOT_TOKEN = "hvs.RootTokenOfTheFakeVault0001";
const ROLE_ID = "8e1c2f4a-7d2b-4c9e-9a51-0f3b6d2e7c10";
const SECRET_ID = "3b9d7e21-5c4f-4e08-a6d3-91f2c0b84e55";
const SA_JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ.eyJzdWIiOiJ2bWJvdCJ9.c2lnbmF0dXJl";
const PROXMOX = { api_token: "PVEAPIToken=vmbot@pve!bot=0c1d2e3f", user: "vmbot@pve" };
const START = new Date("2025-03-01T12:00:00Z");

/** The multierror texts Vault 1.17+ sends for a bad token and for a path its policy lacks. */
const INVALID_TOKEN = "2 errors occurred:\n\t* permission denied\n\t* invalid token\n\n";
const POLICY_DENIED = "1 error occurred:\n\t* permission denied\n\n";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let fake: FakeVault | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function start(options: FakeVaultOptions = {}): Promise<FakeVault> {
  fake = await startFakeVault({
    now: START,
    rootToken: ROOT_TOKEN,
    secrets: [{ path: "proxmox", data: PROXMOX }],
    ...options,
  });
  return fake;
}

/** A node-vault client for the fake; without a token unless one is given (not VAULT_TOKEN). */
function clientOf(vault: FakeVault, token = "", requestOptions: Record<string, unknown> = {}) {
  const client = nodeVault({ apiVersion: "v1", endpoint: vault.url, requestOptions });
  client.token = token;
  return client;
}

interface Envelope<Data = Record<string, unknown>> {
  request_id: string;
  lease_id: string;
  renewable: boolean;
  lease_duration: number;
  data: Data | null;
  wrap_info: null;
  warnings: string[] | null;
  auth: AuthBlock | null;
  mount_type: string;
}

interface AuthBlock {
  client_token: string;
  accessor: string;
  policies: string[];
  token_policies: string[];
  metadata: Record<string, string> | null;
  lease_duration: number;
  renewable: boolean;
  entity_id: string;
  token_type: string;
  orphan: boolean;
  mfa_requirement: null;
  num_uses: number;
}

interface KvRead {
  data: Record<string, unknown> | null;
  metadata: {
    created_time: string;
    custom_metadata: Record<string, string> | null;
    deletion_time: string;
    destroyed: boolean;
    version: number;
  };
}

interface TokenLookup {
  ttl: number;
  expire_time: string | null;
  renewable?: boolean;
  [key: string]: unknown;
}

/** What node-vault's ApiResponseError carries of a failed call. */
interface VaultFailure {
  message: string;
  statusCode: number;
  body: unknown;
}

async function failureOf(promise: Promise<unknown>): Promise<VaultFailure> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, "the call should have failed").toBeInstanceOf(Error);
  const response = (caught as { response?: { statusCode: number; body: unknown } }).response;
  expect(response, "node-vault's ApiResponseError has a response").toBeDefined();
  return {
    message: (caught as Error).message,
    statusCode: response!.statusCode,
    body: response!.body,
  };
}

/** A transport error (timeout, dropped connection): an Error without `response`. */
async function transportErrorOf(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(Error);
  expect((caught as { response?: unknown }).response).toBeUndefined();
  return caught as Error & { code?: string };
}

function lastRequest(vault: FakeVault) {
  const request = vault.requests.at(-1);
  if (!request) throw new Error("no request recorded");
  return request;
}

const appRole = { roleId: ROLE_ID, secretId: SECRET_ID, roleName: "vmbot", policies: ["vmbot"] };

describe("fake Vault: KV version 2", () => {
  it("reads a secret with its data and metadata, in Vault's whole envelope", async () => {
    const vault = await start();
    const read = (await clientOf(vault, ROOT_TOKEN).read(
      "secret/data/proxmox",
    )) as Envelope<KvRead>;

    expect(read).toStrictEqual({
      request_id: expect.stringMatching(UUID) as unknown,
      lease_id: "",
      renewable: false,
      lease_duration: 0,
      data: {
        data: { api_token: PROXMOX.api_token, user: "vmbot@pve" },
        metadata: {
          created_time: "2025-03-01T12:00:00Z",
          custom_metadata: null,
          deletion_time: "",
          destroyed: false,
          version: 1,
        },
      },
      wrap_info: null,
      warnings: null,
      auth: null,
      mount_type: "kv",
    });
    const request = lastRequest(vault);
    expect(request.method).toBe("GET");
    expect(request.path).toBe("/v1/secret/data/proxmox");
    expect(request.headers["x-vault-token"]).toBe(ROOT_TOKEN);
  });

  it("sorts the secret's keys as Go does, and shows custom metadata", async () => {
    const vault = await start({
      secrets: [
        {
          path: "gitlab",
          data: { zeta: "z", alpha: "a", nested: { b: 1, a: 2 } },
          customMetadata: { owner: "platform" },
        },
      ],
    });
    const read = (await clientOf(vault, ROOT_TOKEN).read("secret/data/gitlab")) as Envelope<KvRead>;
    expect(JSON.stringify(read.data?.data)).toBe('{"alpha":"a","nested":{"a":2,"b":1},"zeta":"z"}');
    expect(read.data?.metadata.custom_metadata).toStrictEqual({ owner: "platform" });
  });

  it("answers a missing secret, or a version it never had, with 404 and no errors", async () => {
    const vault = await start();
    const client = clientOf(vault, ROOT_TOKEN);

    expect(await failureOf(client.read("secret/data/nope"))).toStrictEqual({
      message: "Status 404",
      statusCode: 404,
      body: { errors: [] },
    });
    expect(await failureOf(client.read("secret/data/proxmox?version=7"))).toMatchObject({
      statusCode: 404,
      body: { errors: [] },
    });
  });

  it("writes a new version on each rotation, and still serves older ones by number", async () => {
    const vault = await start();
    const client = clientOf(vault, ROOT_TOKEN);
    vault.advance(90);
    const rotated = vault.writeSecret("proxmox", {
      ...PROXMOX,
      api_token: "PVEAPIToken=vmbot@pve!bot=99",
    });
    expect(rotated).toStrictEqual({ version: 2, createdTime: "2025-03-01T12:01:30Z" });

    const latest = (await client.read("secret/data/proxmox")) as Envelope<KvRead>;
    expect(latest.data?.data).toStrictEqual({
      ...PROXMOX,
      api_token: "PVEAPIToken=vmbot@pve!bot=99",
    });
    expect(latest.data?.metadata).toMatchObject({
      version: 2,
      created_time: "2025-03-01T12:01:30Z",
    });

    const first = (await client.read("secret/data/proxmox?version=1")) as Envelope<KvRead>;
    expect(first.data?.data).toStrictEqual(PROXMOX);
    expect(first.data?.metadata.version).toBe(1);
    expect(lastRequest(vault).query.get("version")).toBe("1");
  });

  it("answers a soft-deleted or destroyed version with 404 and its metadata, and a removed key with 404 alone", async () => {
    const vault = await start();
    const client = clientOf(vault, ROOT_TOKEN);
    vault.advance(5);
    vault.deleteSecret("proxmox");

    const deleted = await failureOf(client.read("secret/data/proxmox"));
    expect(deleted.statusCode).toBe(404);
    expect(deleted.message).toBe("Status 404");
    expect(deleted.body).toStrictEqual({
      request_id: expect.stringMatching(UUID) as unknown,
      lease_id: "",
      renewable: false,
      lease_duration: 0,
      data: {
        data: null,
        metadata: {
          created_time: "2025-03-01T12:00:00Z",
          custom_metadata: null,
          deletion_time: "2025-03-01T12:00:05Z",
          destroyed: false,
          version: 1,
        },
      },
      wrap_info: null,
      warnings: null,
      auth: null,
      mount_type: "",
    });

    vault.writeSecret("proxmox", PROXMOX);
    await client.read("secret/data/proxmox");
    await client.destroySecretVersions({ path: "proxmox", versions: [2] });
    expect(lastRequest(vault)).toMatchObject({
      method: "POST",
      path: "/v1/secret/destroy/proxmox",
    });
    expect(JSON.parse(lastRequest(vault).body)).toStrictEqual({ versions: [2] });
    const destroyed = await failureOf(client.read("secret/data/proxmox"));
    expect((destroyed.body as Envelope<KvRead>).data).toStrictEqual({
      data: null,
      metadata: {
        created_time: "2025-03-01T12:00:05Z",
        custom_metadata: null,
        deletion_time: "",
        destroyed: true,
        version: 2,
      },
    });
    expect(vault.secret("proxmox")?.versions.map((v) => [v.version, v.destroyed])).toStrictEqual([
      [1, false],
      [2, true],
    ]);

    vault.deleteSecretMetadata("proxmox");
    expect(await failureOf(client.read("secret/data/proxmox"))).toMatchObject({
      statusCode: 404,
      body: { errors: [] },
    });
    expect(vault.secret("proxmox")).toBeUndefined();
  });

  it("serves other mounts, and takes writes through the API as `vault kv put` does", async () => {
    const vault = await start({ kvMounts: ["secret", "bots"] });
    const client = clientOf(vault, ROOT_TOKEN);

    const written = (await client.write("bots/data/gitlab", {
      data: { token: "glpat-x" },
    })) as Envelope;
    expect(written.data).toStrictEqual({
      created_time: "2025-03-01T12:00:00Z",
      custom_metadata: null,
      deletion_time: "",
      destroyed: false,
      version: 1,
    });
    expect(written.mount_type).toBe("kv");
    expect(JSON.parse(lastRequest(vault).body)).toStrictEqual({ data: { token: "glpat-x" } });
    expect(vault.secret("gitlab", { mount: "bots" })?.currentVersion).toBe(1);

    const read = (await client.read("bots/data/gitlab")) as Envelope<KvRead>;
    expect(read.data?.data).toStrictEqual({ token: "glpat-x" });
    expect((await failureOf(client.read("secret/data/gitlab"))).statusCode).toBe(404);

    expect(
      await failureOf(
        client.write("bots/data/gitlab", { options: { cas: 0 }, data: { token: "y" } }),
      ),
    ).toStrictEqual({
      message: "check-and-set parameter did not match the current version",
      statusCode: 400,
      body: { errors: ["check-and-set parameter did not match the current version"] },
    });
  });

  it("answers a path under no mount with Vault's no-handler 404", async () => {
    const vault = await start();
    expect(await failureOf(clientOf(vault, ROOT_TOKEN).read("kv/data/proxmox"))).toStrictEqual({
      message: 'no handler for route "kv/data/proxmox". route entry not found.',
      statusCode: 404,
      body: { errors: ['no handler for route "kv/data/proxmox". route entry not found.'] },
    });
  });
});

describe("fake Vault: tokens and policies", () => {
  it("refuses a call without a token, with an unknown token, and with one whose TTL ran out", async () => {
    const vault = await start();

    expect(await failureOf(clientOf(vault).read("secret/data/proxmox"))).toStrictEqual({
      message: "permission denied",
      statusCode: 403,
      body: { errors: ["permission denied"] },
    });
    expect(lastRequest(vault).headers["x-vault-token"]).toBeUndefined();

    expect(
      await failureOf(clientOf(vault, "hvs.NotATokenVaultIssued0000").read("secret/data/proxmox")),
    ).toStrictEqual({
      message: INVALID_TOKEN,
      statusCode: 403,
      body: { errors: [INVALID_TOKEN] },
    });

    const token = vault.issueToken({ ttl: 60 });
    const client = clientOf(vault, token);
    await client.read("secret/data/proxmox");
    vault.advance(59);
    await client.read("secret/data/proxmox");
    vault.advance(1);
    expect(await failureOf(client.read("secret/data/proxmox"))).toMatchObject({
      statusCode: 403,
      body: { errors: [INVALID_TOKEN] },
    });
    expect(vault.token(token)).toMatchObject({ expired: true, ttl: 0 });
  });

  it("accepts the token as `Authorization: Bearer` too", async () => {
    const vault = await start();
    const response = await fetch(`${vault.url}/v1/secret/data/proxmox`, {
      headers: { authorization: `Bearer ${ROOT_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(((await response.json()) as Envelope<KvRead>).data?.data).toStrictEqual(PROXMOX);
  });

  it("shows in lookup-self a TTL that goes down as the clock moves, with a fixed expire_time", async () => {
    const vault = await start();
    const token = vault.issueToken({ ttl: 3600, policies: ["vmbot"] });
    const client = clientOf(vault, token);

    const first = (await client.tokenLookupSelf()) as Envelope<TokenLookup>;
    expect(first).toMatchObject({ mount_type: "token", auth: null, lease_duration: 0 });
    expect(first.data).toStrictEqual({
      accessor: expect.stringMatching(/^[A-Za-z0-9]{24}$/) as unknown,
      creation_time: START.getTime() / 1000,
      creation_ttl: 3600,
      display_name: "token",
      entity_id: "",
      expire_time: "2025-03-01T13:00:00Z",
      explicit_max_ttl: 0,
      id: token,
      issue_time: "2025-03-01T12:00:00Z",
      meta: null,
      num_uses: 0,
      orphan: false,
      path: "auth/token/create",
      policies: ["default", "vmbot"],
      renewable: true,
      ttl: 3600,
      type: "service",
    });
    expect(lastRequest(vault)).toMatchObject({ method: "GET", path: "/v1/auth/token/lookup-self" });

    vault.advance(600);
    const later = (await client.tokenLookupSelf()) as Envelope<TokenLookup>;
    expect(later.data).toMatchObject({ ttl: 3000, expire_time: "2025-03-01T13:00:00Z" });
    vault.advance(2999.6);
    expect(((await client.tokenLookupSelf()) as Envelope<TokenLookup>).data?.ttl).toBe(0);
  });

  it("shows the root token without a lease", async () => {
    const vault = await start();
    const lookup = (await clientOf(vault, ROOT_TOKEN).tokenLookupSelf()) as Envelope<TokenLookup>;
    expect(lookup.data).toMatchObject({
      id: ROOT_TOKEN,
      policies: ["root"],
      path: "auth/token/root",
      display_name: "root",
      ttl: 0,
      expire_time: null,
      creation_ttl: 0,
      orphan: true,
    });
    expect(lookup.data).not.toHaveProperty("renewable");
  });

  it("denies a path to one token or to all, as a policy would, but never to root", async () => {
    const vault = await start();
    const first = clientOf(vault, vault.issueToken());
    const second = clientOf(vault, vault.issueToken());
    const root = clientOf(vault, ROOT_TOKEN);

    vault.denyPath("secret/data/proxmox", { token: first.token });
    expect(await failureOf(first.read("secret/data/proxmox"))).toStrictEqual({
      message: POLICY_DENIED,
      statusCode: 403,
      body: { errors: [POLICY_DENIED] },
    });
    await second.read("secret/data/proxmox");
    await first.tokenLookupSelf();

    vault.denyPath("secret/data/*");
    expect((await failureOf(second.read("secret/data/proxmox"))).body).toStrictEqual({
      errors: [POLICY_DENIED],
    });
    await root.read("secret/data/proxmox");

    vault.allowPath("secret/data/*");
    await second.read("secret/data/proxmox");
    vault.allowPath("secret/data/proxmox", { token: first.token });
    await first.read("secret/data/proxmox");
  });

  it("treats a revoked token as invalid, whether revoked by the fake or by revoke-self", async () => {
    const vault = await start();
    const token = vault.issueToken();
    const client = clientOf(vault, token);
    await client.tokenRevokeSelf();
    expect(vault.token(token)?.revoked).toBe(true);
    expect((await failureOf(client.read("secret/data/proxmox"))).body).toStrictEqual({
      errors: [INVALID_TOKEN],
    });

    const other = vault.issueToken();
    vault.revokeToken(other);
    expect((await failureOf(clientOf(vault, other).tokenLookupSelf())).statusCode).toBe(403);
  });

  it("takes the tokens it starts with from the options", async () => {
    const vault = await start({
      tokens: [{ id: "hvs.DeployedTokenForVmbot000001", policies: ["vmbot"], ttl: 600 }],
    });
    const lookup = (await clientOf(
      vault,
      "hvs.DeployedTokenForVmbot000001",
    ).tokenLookupSelf()) as Envelope<TokenLookup>;
    expect(lookup.data).toMatchObject({ ttl: 600, policies: ["default", "vmbot"] });
  });
});

describe("fake Vault: AppRole login", () => {
  it("logs in with role_id and secret_id, and node-vault then uses the token it was given", async () => {
    const vault = await start({ appRole: { ...appRole, tokenTtl: 3600 } });
    const client = clientOf(vault);

    const login = (await client.approleLogin({
      role_id: ROLE_ID,
      secret_id: SECRET_ID,
    })) as Envelope;
    const loginRequest = lastRequest(vault);
    expect(loginRequest).toMatchObject({ method: "POST", path: "/v1/auth/approle/login" });
    expect(JSON.parse(loginRequest.body)).toStrictEqual({ role_id: ROLE_ID, secret_id: SECRET_ID });
    expect(loginRequest.headers["x-vault-token"]).toBeUndefined();

    expect(login).toStrictEqual({
      request_id: expect.stringMatching(UUID) as unknown,
      lease_id: "",
      renewable: false,
      lease_duration: 0,
      data: null,
      wrap_info: null,
      warnings: null,
      auth: {
        client_token: expect.stringMatching(/^hvs\.[A-Za-z0-9]{24}$/) as unknown,
        accessor: expect.stringMatching(/^[A-Za-z0-9]{24}$/) as unknown,
        policies: ["default", "vmbot"],
        token_policies: ["default", "vmbot"],
        metadata: { role_name: "vmbot" },
        lease_duration: 3600,
        renewable: true,
        entity_id: expect.stringMatching(UUID) as unknown,
        token_type: "service",
        orphan: true,
        mfa_requirement: null,
        num_uses: 0,
      },
      mount_type: "",
    });
    const token = login.auth!.client_token;
    expect(client.token).toBe(token);

    const read = (await client.read("secret/data/proxmox")) as Envelope<KvRead>;
    expect(read.data?.data).toStrictEqual(PROXMOX);
    expect(lastRequest(vault).headers["x-vault-token"]).toBe(token);

    const lookup = (await client.tokenLookupSelf()) as Envelope<TokenLookup>;
    expect(lookup.data).toMatchObject({
      path: "auth/approle/login",
      display_name: "approle",
      meta: { role_name: "vmbot" },
      orphan: true,
      entity_id: login.auth!.entity_id,
      creation_ttl: 3600,
    });

    // A second login gets a new token for the same identity entity.
    const again = (await client.approleLogin({
      role_id: ROLE_ID,
      secret_id: SECRET_ID,
    })) as Envelope;
    expect(again.auth!.client_token).not.toBe(token);
    expect(again.auth!.entity_id).toBe(login.auth!.entity_id);
  });

  it("answers a wrong role_id or secret_id with 400 invalid role or secret ID", async () => {
    const vault = await start({ appRole });
    const client = clientOf(vault);
    const expected = {
      message: "invalid role or secret ID",
      statusCode: 400,
      body: { errors: ["invalid role or secret ID"] },
    };
    expect(
      await failureOf(client.approleLogin({ role_id: ROLE_ID, secret_id: "wrong" })),
    ).toStrictEqual(expected);
    expect(
      await failureOf(client.approleLogin({ role_id: "wrong", secret_id: SECRET_ID })),
    ).toStrictEqual(expected);
    expect(await failureOf(client.approleLogin({ role_id: ROLE_ID }))).toMatchObject({
      statusCode: 400,
      message: "missing secret_id",
    });
    expect(client.token).toBe("");
  });

  it("gives login tokens the mounts' default TTL, capped at the role's max TTL with Vault's warning", async () => {
    const vault = await start({ defaultTtl: 7200, appRole: { ...appRole, tokenMaxTtl: 1800 } });
    const login = (await clientOf(vault).approleLogin({
      role_id: ROLE_ID,
      secret_id: SECRET_ID,
    })) as Envelope;
    expect(login.auth?.lease_duration).toBe(1800);
    expect(login.warnings).toStrictEqual([
      'TTL of "2h0m0s" exceeded the effective max_ttl of "30m0s"; TTL value is capped accordingly',
    ]);
  });

  it("follows a new secret ID, and has no login path once the method is disabled", async () => {
    const vault = await start({ appRole });
    const client = clientOf(vault);
    vault.configureAppRole({ ...appRole, secretId: "rotated-secret-id" });
    expect(
      (await failureOf(client.approleLogin({ role_id: ROLE_ID, secret_id: SECRET_ID }))).statusCode,
    ).toBe(400);
    await client.approleLogin({ role_id: ROLE_ID, secret_id: "rotated-secret-id" });

    vault.configureAppRole(null);
    const anonymous = clientOf(vault);
    expect(
      await failureOf(anonymous.approleLogin({ role_id: ROLE_ID, secret_id: SECRET_ID })),
    ).toMatchObject({
      statusCode: 403,
      message: "permission denied",
    });
  });
});

describe("fake Vault: Kubernetes login", () => {
  const kubernetes = {
    role: "vmbot",
    jwt: SA_JWT,
    serviceAccountUid: "0f6b3c8e-2a41-4d7c-b5e9-7c1d0a2f9e34",
    policies: ["vmbot"],
  };

  it("logs in with the role and the service account's JWT", async () => {
    const vault = await start({ kubernetes: { ...kubernetes, tokenTtl: 900 } });
    const client = clientOf(vault);
    const login = (await client.kubernetesLogin({
      role: "vmbot",
      jwt: SA_JWT,
      mount_point: "kubernetes",
    })) as Envelope;

    expect(lastRequest(vault)).toMatchObject({ method: "POST", path: "/v1/auth/kubernetes/login" });
    expect(JSON.parse(lastRequest(vault).body)).toStrictEqual({ role: "vmbot", jwt: SA_JWT });
    expect(login.auth).toMatchObject({
      policies: ["default", "vmbot"],
      metadata: {
        role: "vmbot",
        service_account_name: "vmbot",
        service_account_namespace: "default",
        service_account_secret_name: "",
        service_account_uid: kubernetes.serviceAccountUid,
      },
      lease_duration: 900,
      renewable: true,
      orphan: true,
    });
    expect(client.token).toBe(login.auth!.client_token);
    const lookup = (await client.tokenLookupSelf()) as Envelope<TokenLookup>;
    expect(lookup.data).toMatchObject({
      display_name: "kubernetes-default-vmbot",
      path: "auth/kubernetes/login",
    });
  });

  it("refuses a JWT the TokenReview rejects with 403, and an unknown role with 400", async () => {
    const vault = await start({ kubernetes });
    const client = clientOf(vault);
    expect(
      await failureOf(
        client.kubernetesLogin({ role: "vmbot", jwt: "eyJ.other.jwt", mount_point: "kubernetes" }),
      ),
    ).toStrictEqual({
      message: "permission denied",
      statusCode: 403,
      body: { errors: ["permission denied"] },
    });
    expect(
      await failureOf(
        client.kubernetesLogin({ role: "other", jwt: SA_JWT, mount_point: "kubernetes" }),
      ),
    ).toStrictEqual({
      message: 'invalid role name "other"',
      statusCode: 400,
      body: { errors: ['invalid role name "other"'] },
    });
  });

  it("shows node-vault 0.12 posting to auth//login without mount_point: Vault redirects, and the GET is refused", async () => {
    // node-vault renders `{{kubernetesPath}}` from the call's arguments only, so without
    // `mount_point` the path is `/auth//login`. Go's ServeMux answers 301 to `/v1/auth/login`,
    // and axios follows it as a GET without the body.
    const vault = await start({ kubernetes });
    const failure = await failureOf(
      clientOf(vault).kubernetesLogin({ role: "vmbot", jwt: SA_JWT }),
    );
    expect(failure).toStrictEqual({
      message: "permission denied",
      statusCode: 403,
      body: { errors: ["permission denied"] },
    });
    expect(vault.requests.map((r) => `${r.method} ${r.path}`)).toStrictEqual([
      "POST /v1/auth//login",
      "GET /v1/auth/login",
    ]);
  });
});

describe("fake Vault: renew-self", () => {
  it("extends the token by the role's TTL, or by the increment asked for", async () => {
    const vault = await start({ maxTtl: 86400, appRole: { ...appRole, tokenTtl: 3600 } });
    const client = clientOf(vault);
    await client.approleLogin({ role_id: ROLE_ID, secret_id: SECRET_ID });
    const token = client.token;

    vault.advance(1800);
    expect(((await client.tokenLookupSelf()) as Envelope<TokenLookup>).data?.ttl).toBe(1800);
    const renewed = (await client.tokenRenewSelf()) as Envelope;
    expect(lastRequest(vault)).toMatchObject({
      method: "POST",
      path: "/v1/auth/token/renew-self",
      body: "",
    });
    expect(renewed).toMatchObject({
      data: null,
      warnings: null,
      mount_type: "token",
      auth: {
        client_token: token,
        lease_duration: 3600,
        renewable: true,
        policies: ["default", "vmbot"],
      },
    });
    expect(client.token).toBe(token);
    const lookup = (await client.tokenLookupSelf()) as Envelope<TokenLookup>;
    expect(lookup.data).toMatchObject({
      ttl: 3600,
      expire_time: "2025-03-01T13:30:00Z",
      last_renewal_time: START.getTime() / 1000 + 1800,
      last_renewal: "2025-03-01T12:30:00Z",
    });

    const longer = (await client.tokenRenewSelf({ increment: "2h" })) as Envelope;
    expect(JSON.parse(lastRequest(vault).body)).toStrictEqual({ increment: "2h" });
    expect(longer.auth?.lease_duration).toBe(7200);
    const shorter = (await client.tokenRenewSelf({ increment: 600 })) as Envelope;
    expect(shorter.auth?.lease_duration).toBe(600);
    expect(vault.token(token)).toMatchObject({ ttl: 600, renewals: 3 });
  });

  it("caps a renewal at the max TTL with Vault's warning; past it the token is invalid and only a new login helps", async () => {
    const vault = await start({ appRole: { ...appRole, tokenTtl: 3600, tokenMaxTtl: 5400 } });
    const client = clientOf(vault);
    await client.approleLogin({ role_id: ROLE_ID, secret_id: SECRET_ID });
    const first = client.token;

    vault.advance(3000);
    const capped = (await client.tokenRenewSelf()) as Envelope;
    expect(capped.auth?.lease_duration).toBe(2400);
    expect(capped.warnings).toStrictEqual([
      'TTL of "1h0m0s" exceeded the effective max_ttl of "40m0s"; TTL value is capped accordingly',
    ]);
    vault.advance(1200);
    const again = (await client.tokenRenewSelf({ increment: 3600 })) as Envelope;
    expect(again.auth?.lease_duration).toBe(1200);
    expect(again.warnings).toStrictEqual([
      'TTL of "1h0m0s" exceeded the effective max_ttl of "20m0s"; TTL value is capped accordingly',
    ]);

    vault.advance(1200);
    expect((await failureOf(client.tokenRenewSelf())).body).toStrictEqual({
      errors: [INVALID_TOKEN],
    });
    expect((await failureOf(client.read("secret/data/proxmox"))).statusCode).toBe(403);

    await client.approleLogin({ role_id: ROLE_ID, secret_id: SECRET_ID });
    expect(client.token).not.toBe(first);
    await client.read("secret/data/proxmox");
  });

  it("refuses renewal when told to: 403 as a policy without renew-self, or 400 for a lease that is not renewable", async () => {
    const vault = await start({ appRole });
    const client = clientOf(vault);
    await client.approleLogin({ role_id: ROLE_ID, secret_id: SECRET_ID });

    vault.refuseRenewal();
    expect(await failureOf(client.tokenRenewSelf())).toStrictEqual({
      message: POLICY_DENIED,
      statusCode: 403,
      body: { errors: [POLICY_DENIED] },
    });
    await client.read("secret/data/proxmox"); // the token itself still works

    vault.refuseRenewal("not-renewable");
    expect(await failureOf(client.tokenRenewSelf())).toStrictEqual({
      message: "lease is not renewable",
      statusCode: 400,
      body: { errors: ["lease is not renewable"] },
    });
    expect(((await client.tokenLookupSelf()) as Envelope<TokenLookup>).data?.renewable).toBe(false);
    const login = (await client.approleLogin({
      role_id: ROLE_ID,
      secret_id: SECRET_ID,
    })) as Envelope;
    expect(login.auth?.renewable).toBe(false);

    vault.allowRenewal();
    expect(((await client.tokenRenewSelf()) as Envelope).auth?.renewable).toBe(true);

    expect(await failureOf(clientOf(vault, ROOT_TOKEN).tokenRenewSelf())).toMatchObject({
      statusCode: 400,
      message: "lease not found",
    });
  });

  it("makes node-vault's token renewal emit token:error:renew when renewal is refused", async () => {
    const vault = await start({ appRole });
    const client = clientOf(vault);
    await client.approleLogin({ role_id: ROLE_ID, secret_id: SECRET_ID });
    vault.refuseRenewal();

    const refused = new Promise<unknown>((resolve) => client.once("token:error:renew", resolve));
    await client.startTokenRenewal({ ttl: 1 });
    const error = (await refused) as { response?: { statusCode: number } };
    client.stopTokenRenewal();
    expect(error.response?.statusCode).toBe(403);
    expect(vault.requestsTo("POST", /renew-self$/)).toHaveLength(1);
  });
});

describe("fake Vault: sealing and health", () => {
  it("answers every call with 503 Vault is sealed while sealed, and takes the same token again once unsealed", async () => {
    const vault = await start({ appRole });
    const client = clientOf(vault, ROOT_TOKEN);
    const sealedError = {
      message: "Vault is sealed",
      statusCode: 503,
      body: { errors: ["Vault is sealed"] },
    };

    vault.seal();
    expect(vault.sealed).toBe(true);
    expect(await failureOf(client.read("secret/data/proxmox"))).toStrictEqual(sealedError);
    expect(await failureOf(client.tokenLookupSelf())).toStrictEqual(sealedError);
    expect(
      await failureOf(clientOf(vault).approleLogin({ role_id: ROLE_ID, secret_id: SECRET_ID })),
    ).toStrictEqual(sealedError);
    expect(
      await failureOf(clientOf(vault, "hvs.NotATokenVaultIssued0000").read("secret/data/proxmox")),
    ).toStrictEqual(sealedError);

    // node-vault hands back the health body whatever the status.
    expect(await client.health()).toMatchObject({ initialized: true, sealed: true, standby: true });
    expect(await client.status()).toMatchObject({
      sealed: true,
      initialized: true,
      type: "shamir",
    });

    vault.unseal();
    const read = (await client.read("secret/data/proxmox")) as Envelope<KvRead>;
    expect(read.data?.data).toStrictEqual(PROXMOX);
  });

  it("answers sys/health with Vault's documented status codes", async () => {
    const vault = await start();
    const statusOf = async (query = "", method = "GET") => {
      const response = await fetch(`${vault.url}/v1/sys/health${query}`, { method });
      return response.status;
    };

    expect(await statusOf()).toBe(200);
    vault.setNodeState("standby");
    expect(await statusOf()).toBe(429);
    expect(await statusOf("?standbyok=true")).toBe(200);
    expect(await statusOf("?standbycode=299")).toBe(299);
    vault.setNodeState("performance-standby");
    expect(await statusOf()).toBe(473);
    expect(await statusOf("?perfstandbyok=true")).toBe(200);
    vault.setNodeState("dr-secondary");
    expect(await statusOf()).toBe(472);
    vault.setNodeState("uninitialized");
    expect(await statusOf()).toBe(501);
    vault.setNodeState("active");
    vault.seal();
    expect(await statusOf()).toBe(503);
    expect(await statusOf("?sealedcode=200")).toBe(200);
    expect(await statusOf("?sealedcode=abc")).toBe(400);

    const head = await fetch(`${vault.url}/v1/sys/health`, { method: "HEAD" });
    expect(head.status).toBe(503);
    expect(await head.text()).toBe("");
  });

  it("gives node-vault the health body, with the query it sends", async () => {
    const vault = await start();
    const client = clientOf(vault);
    const active = (await client.health()) as Record<string, unknown>;
    expect(active).toStrictEqual({
      initialized: true,
      sealed: false,
      standby: false,
      performance_standby: false,
      replication_performance_mode: "disabled",
      replication_dr_mode: "disabled",
      server_time_utc: START.getTime() / 1000,
      version: "1.20.4",
      enterprise: false,
      cluster_name: expect.stringMatching(/^vault-cluster-[0-9a-f]{8}$/) as unknown,
      cluster_id: expect.stringMatching(UUID) as unknown,
      echo_duration_ms: 0,
      clock_skew_ms: 0,
      replication_primary_canary_age_ms: 0,
    });

    vault.setNodeState("standby");
    const standby = (await client.health({ standbyok: true })) as Record<string, unknown>;
    expect(lastRequest(vault).query.get("standbyok")).toBe("true");
    expect(standby).toMatchObject({ standby: true, sealed: false });
  });
});

describe("fake Vault: injected failures", () => {
  it("answers the next matching request with the status asked for, then normally", async () => {
    const vault = await start();
    const client = clientOf(vault, ROOT_TOKEN);
    vault.failNext({ method: "GET", path: /\/secret\/data\// }, { status: 500 });
    vault.failNext({ path: /lookup-self/ }, { status: 429, body: { errors: ["slow down"] } });

    expect(await failureOf(client.read("secret/data/proxmox"))).toStrictEqual({
      message: "internal error",
      statusCode: 500,
      body: { errors: ["internal error"] },
    });
    await client.read("secret/data/proxmox");
    expect((await failureOf(client.tokenLookupSelf())).message).toBe("slow down");
    await client.tokenLookupSelf();
    expect(vault.requestsTo("GET", /\/secret\/data\/proxmox$/)).toHaveLength(2);
  });

  it("can hang, delay or drop a request", async () => {
    const vault = await start();
    const client = clientOf(vault, ROOT_TOKEN, { timeout: 200 });

    vault.failNext({ path: /proxmox/ }, "hang");
    const hung = await transportErrorOf(client.read("secret/data/proxmox"));
    expect(hung.code).toBe("ECONNABORTED");

    vault.failNext({ path: /proxmox/ }, { delayMs: 50 });
    const mark = vault.mark();
    await client.read("secret/data/proxmox");
    expect(vault.requestsSince(mark)).toHaveLength(1);

    vault.failNext({ path: /proxmox/ }, "reset");
    const dropped = await transportErrorOf(client.read("secret/data/proxmox"));
    expect(dropped.code).toBe("ECONNRESET");
  });
});
