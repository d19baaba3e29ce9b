import { existsSync, readFileSync } from "node:fs";
import { get as httpGet } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import { TLSSocket, type PeerCertificate } from "node:tls";

import { afterEach, describe, expect, it } from "vitest";

import {
  DEFAULT_NODES,
  fakeNode,
  PVEPROXY_UNAUTHORIZED_DELAY_MS,
  startFakeProxmox,
  type FakeProxmox,
  type FakeProxmoxOptions,
} from "../../../../sandbox/simulators/proxmox/index.js";
import { PROXMOX_TEST_TLS, proxmoxTestTls } from "../../../support/tls.js";

const TOKEN_ID = "vmbot@pve!nodes";
const SECRET = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f";
const TOKEN = `${TOKEN_ID}=${SECRET}`;
const GIB = 1024 ** 3;

let fake: FakeProxmox | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function start(options: Partial<FakeProxmoxOptions> = {}): Promise<FakeProxmox> {
  fake = await startFakeProxmox({ token: TOKEN, ...options });
  return fake;
}

/** A GET as vmbot makes it: global fetch, the token in `Authorization`. */
function api(
  target: FakeProxmox,
  path: string,
  init: { authorization?: string | null; signal?: AbortSignal; method?: string } = {},
): Promise<Response> {
  const headers: Record<string, string> = { accept: "application/json" };
  const authorization =
    init.authorization === undefined ? `PVEAPIToken=${TOKEN}` : init.authorization;
  if (authorization !== null) headers.authorization = authorization;
  return fetch(`${target.url}/api2/json${path}`, {
    method: init.method ?? "GET",
    headers,
    ...(init.signal === undefined ? {} : { signal: init.signal }),
  });
}

async function dataOf(response: Response): Promise<unknown> {
  expect(response.status).toBe(200);
  const body = (await response.json()) as { data: unknown };
  expect(Object.keys(body)).toEqual(["data"]);
  return body.data;
}

interface RawAnswer {
  status: number | undefined;
  statusMessage: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** What the TLS handshake gave, for HTTPS. */
  tls?: { authorized: boolean; authorizationError: string | undefined; peer: PeerCertificate };
}

/** A GET with node:https, whose TLS options (`ca`, `rejectUnauthorized`, …) can be set per call. */
function httpsGet(url: string, options: RequestOptions): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      url,
      { ...options, agent: false, headers: { authorization: `PVEAPIToken=${TOKEN}` } },
      (response) => {
        const socket = response.socket;
        const tls =
          socket instanceof TLSSocket
            ? {
                authorized: socket.authorized,
                authorizationError: socket.authorized
                  ? undefined
                  : String(socket.authorizationError),
                peer: socket.getPeerCertificate(),
              }
            : undefined;
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          resolve({
            status: response.statusCode,
            statusMessage: response.statusMessage,
            headers: response.headers,
            body: Buffer.concat(chunks).toString("utf8"),
            ...(tls === undefined ? {} : { tls }),
          });
        });
      },
    );
    request.on("error", reject);
    request.end();
  });
}

/** A GET with node:http, which sends no `Accept-Encoding`. */
function plainGet(url: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers: { authorization: `PVEAPIToken=${TOKEN}` } }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        resolve({
          status: response.statusCode,
          statusMessage: response.statusMessage,
          headers: response.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        });
      });
    }).on("error", reject);
  });
}

const ONLINE = fakeNode("pve1", {
  cores: 16,
  cpu: 0.125,
  memoryGiB: 128,
  memoryUsedGiB: 32,
  diskGiB: 200,
  diskUsedGiB: 50,
  uptimeSeconds: 3600,
  level: "c",
});
const OFFLINE_LONG = fakeNode("pve2", { status: "offline", cores: 8, memoryGiB: 64 });
const OFFLINE_RECENT = fakeNode("pve3", {
  status: "offline",
  cores: 4,
  memoryGiB: 32,
  diskGiB: 100,
  lastReport: "recent",
});
const UNKNOWN = fakeNode("pve4", { status: "unknown" });

describe("GET /cluster/resources", () => {
  it("lists every node, online ones with load and maxima, offline ones without load", async () => {
    const proxmox = await start({ nodes: [ONLINE, OFFLINE_LONG, OFFLINE_RECENT, UNKNOWN] });

    const response = await api(proxmox, "/cluster/resources?type=node");

    expect(response.headers.get("content-type")).toBe("application/json;charset=UTF-8");
    expect(response.headers.get("server")).toBe("pve-api-daemon/3.0");
    expect(response.headers.get("cache-control")).toBe("max-age=0");
    expect(response.headers.get("pragma")).toBe("no-cache");
    expect(await dataOf(response)).toEqual([
      {
        id: "node/pve1",
        type: "node",
        node: "pve1",
        status: "online",
        cpu: 0.125,
        maxcpu: 16,
        mem: 32 * GIB,
        maxmem: 128 * GIB,
        disk: 50 * GIB,
        maxdisk: 200 * GIB,
        uptime: 3600,
        level: "c",
        "cgroup-mode": 2,
      },
      // Offline for more than 5 minutes: pmxcfs has dropped its last report.
      { id: "node/pve2", type: "node", node: "pve2", status: "offline" },
      // Just gone: its last report still gives the level and the maxima, but no load.
      {
        id: "node/pve3",
        type: "node",
        node: "pve3",
        status: "offline",
        maxcpu: 4,
        maxmem: 32 * GIB,
        maxdisk: 100 * GIB,
        level: "",
        "cgroup-mode": 2,
      },
      { id: "node/pve4", type: "node", node: "pve4", status: "unknown" },
    ]);
  });

  it("lists the nodes without a type too, and nothing for the other resource types", async () => {
    const proxmox = await start({ nodes: [ONLINE, OFFLINE_LONG] });

    const all = (await dataOf(await api(proxmox, "/cluster/resources"))) as { id: string }[];
    expect(all.map((r) => r.id)).toEqual(["node/pve1", "node/pve2"]);
    for (const type of ["vm", "storage", "sdn"]) {
      expect(await dataOf(await api(proxmox, `/cluster/resources?type=${type}`))).toEqual([]);
    }
    // The GUI's cache buster is accepted everywhere.
    expect(
      await dataOf(await api(proxmox, "/cluster/resources?type=node&_dc=1700000000000")),
    ).toHaveLength(2);
  });

  it("refuses an unknown type or parameter as Proxmox's schema check does", async () => {
    const proxmox = await start();

    const badType = await api(proxmox, "/cluster/resources?type=nodes");
    expect(badType.status).toBe(400);
    expect(badType.statusText).toBe("Parameter verification failed.");
    expect(badType.headers.get("connection")).toBe("close");
    expect(await badType.json()).toEqual({
      data: null,
      errors: {
        type: "value 'nodes' does not have a value in the enumeration 'vm, storage, node, sdn'",
      },
      message: "Parameter verification failed.\n",
    });

    const extra = await api(proxmox, "/nodes?full=1");
    expect(extra.status).toBe(400);
    expect(await extra.json()).toMatchObject({
      errors: {
        full: "property is not defined in schema and the schema does not allow additional properties",
      },
    });
  });
});

describe("GET /nodes", () => {
  it("lists the same nodes with their certificate fingerprint and without cgroup-mode", async () => {
    const proxmox = await start({ nodes: [ONLINE, OFFLINE_LONG, OFFLINE_RECENT] });

    const nodes = (await dataOf(await api(proxmox, "/nodes"))) as Record<string, unknown>[];

    expect(nodes).toEqual([
      {
        id: "node/pve1",
        type: "node",
        node: "pve1",
        status: "online",
        cpu: 0.125,
        maxcpu: 16,
        mem: 32 * GIB,
        maxmem: 128 * GIB,
        disk: 50 * GIB,
        maxdisk: 200 * GIB,
        uptime: 3600,
        level: "c",
        ssl_fingerprint: ONLINE.sslFingerprint,
      },
      {
        id: "node/pve2",
        type: "node",
        node: "pve2",
        status: "offline",
        ssl_fingerprint: OFFLINE_LONG.sslFingerprint,
      },
      {
        id: "node/pve3",
        type: "node",
        node: "pve3",
        status: "offline",
        maxcpu: 4,
        maxmem: 32 * GIB,
        maxdisk: 100 * GIB,
        level: "",
        ssl_fingerprint: OFFLINE_RECENT.sslFingerprint,
      },
    ]);
    expect(ONLINE.sslFingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(OFFLINE_LONG.sslFingerprint).not.toBe(ONLINE.sslFingerprint);
  });

  it("answers /version", async () => {
    const proxmox = await start({ version: "8.3.2" });

    expect(await dataOf(await api(proxmox, "/version"))).toEqual({
      version: "8.3.2",
      release: "8.3",
      repoid: expect.any(String) as unknown,
    });
  });
});

describe("nodes", () => {
  it("builds a node from cores, GiB and load, with defaults", () => {
    expect(fakeNode("pve9")).toEqual({
      name: "pve9",
      status: "online",
      maxcpu: 8,
      cpu: 0.05,
      maxmem: 64 * GIB,
      mem: 16 * GIB,
      maxdisk: 100 * GIB,
      disk: 10 * GIB,
      uptime: 14 * 86_400,
      level: "",
      cgroupMode: 2,
      lastReport: "expired",
      sslFingerprint: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/) as unknown,
    });
    expect(fakeNode("pve9", { memoryGiB: 1.5, cgroupMode: null })).toMatchObject({
      maxmem: 1.5 * GIB,
      mem: 0.375 * GIB,
      cgroupMode: undefined,
    });
    expect(() => fakeNode("pve9", { cpu: 12 })).toThrow(/fraction/);
    expect(() => fakeNode("pve9", { memoryGiB: -1 })).toThrow(/memoryGiB/);
  });

  it("starts with the default cluster", async () => {
    const proxmox = await start();

    expect(proxmox.nodes).toEqual(DEFAULT_NODES);
    const listed = (await dataOf(await api(proxmox, "/cluster/resources?type=node"))) as {
      node: string;
      status: string;
    }[];
    expect(listed.map((n) => [n.node, n.status])).toEqual([
      ["pve1", "online"],
      ["pve2", "online"],
      ["pve3", "offline"],
    ]);
  });

  it("changes at runtime", async () => {
    const proxmox = await start({ nodes: [ONLINE] });

    proxmox.setNodes([fakeNode("a", { cpu: 0.5 }), fakeNode("b", { status: "offline" })]);
    let listed = (await dataOf(await api(proxmox, "/cluster/resources?type=node"))) as {
      node: string;
      status: string;
      cpu?: number;
    }[];
    expect(listed.map((n) => [n.node, n.status, n.cpu])).toEqual([
      ["a", "online", 0.5],
      ["b", "offline", undefined],
    ]);

    const updated = proxmox.updateNode("a", { status: "offline", lastReport: "recent" });
    expect(updated).toMatchObject({ name: "a", status: "offline", cpu: 0.5, maxcpu: 8 });
    listed = (await dataOf(await api(proxmox, "/nodes"))) as typeof listed;
    expect(listed[0]).toMatchObject({ node: "a", status: "offline", maxcpu: 8 });
    expect(listed[0]).not.toHaveProperty("cpu");
    expect(() => proxmox.updateNode("zz", { cpu: 0 })).toThrow(/no node zz/);
  });

  it("can list them in a different order on every call, as Proxmox's hash order may", async () => {
    const names = Array.from({ length: 8 }, (_, i) => `pve${i + 1}`);
    const proxmox = await start({ nodes: names.map((n) => fakeNode(n)), shuffleNodes: true });

    const orders = new Set<string>();
    for (let i = 0; i < 10; i += 1) {
      const listed = (await dataOf(await api(proxmox, "/nodes"))) as { node: string }[];
      expect(listed.map((n) => n.node).sort()).toEqual(names);
      orders.add(listed.map((n) => n.node).join());
    }
    expect(orders.size).toBeGreaterThan(1);
  });

  it("hides load and maxima of nodes the token may not audit, as for a narrow token", async () => {
    const proxmox = await start({ nodes: [ONLINE, OFFLINE_RECENT], auditableNodes: [] });

    expect(await dataOf(await api(proxmox, "/cluster/resources?type=node"))).toEqual([
      {
        id: "node/pve1",
        type: "node",
        node: "pve1",
        status: "online",
        level: "c",
        "cgroup-mode": 2,
      },
      {
        id: "node/pve3",
        type: "node",
        node: "pve3",
        status: "offline",
        level: "",
        "cgroup-mode": 2,
      },
    ]);

    proxmox.setAuditableNodes(["pve1"]);
    const nodes = (await dataOf(await api(proxmox, "/nodes"))) as Record<string, unknown>[];
    expect(nodes[0]).toMatchObject({ node: "pve1", cpu: 0.125, maxmem: 128 * GIB });
    expect(nodes[1]).not.toHaveProperty("maxmem");

    proxmox.setAuditableNodes("all");
    const all = (await dataOf(await api(proxmox, "/nodes"))) as Record<string, unknown>[];
    expect(all[1]).toMatchObject({ node: "pve3", maxmem: 32 * GIB });
  });
});

describe("failing calls", () => {
  it("makes /cluster/resources fail while /nodes still answers, as a client's fallback needs", async () => {
    const proxmox = await start({ nodes: [ONLINE] });

    proxmox.failEndpoint("/cluster/resources", { status: 403 });
    const forbidden = await api(proxmox, "/cluster/resources?type=node");
    expect(forbidden.status).toBe(403);
    expect(forbidden.statusText).toBe("Permission check failed (/, Sys.Audit)");
    expect(forbidden.headers.get("connection")).toBe("close");
    expect(await forbidden.json()).toEqual({
      data: null,
      message: "Permission check failed (/, Sys.Audit)\n",
    });
    expect(await dataOf(await api(proxmox, "/nodes"))).toHaveLength(1);

    proxmox.failEndpoint("/cluster/resources", { status: 501 });
    const missing = await api(proxmox, "/cluster/resources?type=node");
    expect(missing.status).toBe(501);
    expect(missing.statusText).toBe("Method 'GET /cluster/resources' not implemented");
    expect(await missing.json()).toEqual({
      data: null,
      message: "Method 'GET /cluster/resources' not implemented",
    });

    proxmox.failEndpoint("/cluster/resources", { status: 500 });
    const broken = await api(proxmox, "/cluster/resources?type=node");
    expect(broken.status).toBe(500);
    expect(broken.statusText).toBe("ipcc_send_rec[1] failed: Connection refused");

    proxmox.failEndpoint("/cluster/resources", {
      status: 403,
      message: "Permission check failed\n",
    });
    expect((await api(proxmox, "/cluster/resources?type=node")).statusText).toBe(
      "Permission check failed",
    );

    proxmox.failEndpoint("/cluster/resources", undefined);
    expect(await dataOf(await api(proxmox, "/cluster/resources?type=node"))).toHaveLength(1);
  });

  it("can answer with something in front of Proxmox instead", async () => {
    const proxmox = await start();

    proxmox.failEndpoint("/nodes", { status: 502, body: "<html><h1>502 Bad Gateway</h1></html>" });
    const response = await api(proxmox, "/nodes");
    expect(response.status).toBe(502);
    expect(response.statusText).toBe("Bad Gateway");
    expect(response.headers.get("content-type")).toBe("text/html");
    expect(await response.text()).toContain("502 Bad Gateway");
  });

  it("answers 501 for calls it does not serve, as pveproxy does for unknown ones", async () => {
    const proxmox = await start();

    const unknown = await api(proxmox, "/cluster/status");
    expect(unknown.status).toBe(501);
    expect(unknown.statusText).toBe("Method 'GET /cluster/status' not implemented");
    expect(await unknown.json()).toEqual({
      data: null,
      message: "Method 'GET /cluster/status' not implemented",
    });

    const post = await api(proxmox, "/nodes", { method: "POST" });
    expect(post.status).toBe(501);
    expect(post.statusText).toBe("Method 'POST /nodes' not implemented");

    const extjs = await fetch(`${proxmox.url}/api2/extjs/nodes`, {
      headers: { authorization: `PVEAPIToken=${TOKEN}` },
    });
    expect(extjs.status).toBe(501);
    expect(extjs.statusText).toBe("no formatter for uri /nodes, extjs");
  });

  it("injects failures, delays, hangs and dropped connections into the next requests", async () => {
    const proxmox = await start();

    proxmox.failNext({ status: 500, message: "got timeout\n" }, { path: /\/nodes$/, times: 2 });
    expect(await dataOf(await api(proxmox, "/cluster/resources?type=node"))).toHaveLength(3);
    expect((await api(proxmox, "/nodes")).statusText).toBe("got timeout");
    expect((await api(proxmox, "/nodes")).status).toBe(500);
    expect((await api(proxmox, "/nodes")).status).toBe(200);

    proxmox.failNext("reset");
    await expect(api(proxmox, "/nodes")).rejects.toThrow(/fetch failed/);

    proxmox.failNext({ delayMs: 250 });
    const started = Date.now();
    expect(await dataOf(await api(proxmox, "/nodes"))).toHaveLength(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);

    proxmox.failNext("hang");
    await expect(api(proxmox, "/nodes", { signal: AbortSignal.timeout(200) })).rejects.toThrow(
      expect.objectContaining({ name: "TimeoutError" }) as Error,
    );
    await proxmox.settled();
    expect(await dataOf(await api(proxmox, "/nodes"))).toHaveLength(3);
  });
});

describe("delays", () => {
  it("slows every answer by the delay set", async () => {
    const proxmox = await start();

    proxmox.setDelay(300);
    let started = Date.now();
    expect(await dataOf(await api(proxmox, "/nodes"))).toHaveLength(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);

    proxmox.setDelay(0);
    started = Date.now();
    await dataOf(await api(proxmox, "/nodes"));
    expect(Date.now() - started).toBeLessThan(290);
    expect(() => {
      proxmox.setDelay(-1);
    }).toThrow(/milliseconds/);
  });

  it("hangs until the client gives up, and answers again once the hang is lifted", async () => {
    const proxmox = await start();

    proxmox.setDelay("hang");
    const started = Date.now();
    await expect(
      api(proxmox, "/cluster/resources?type=node", { signal: AbortSignal.timeout(300) }),
    ).rejects.toThrow(expect.objectContaining({ name: "TimeoutError" }) as Error);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    // The client closed the connection: the fake has nothing left to answer.
    await proxmox.settled();
    expect(proxmox.requestsTo(/\/cluster\/resources$/)).toHaveLength(1);

    proxmox.setDelay(0);
    expect(await dataOf(await api(proxmox, "/nodes"))).toHaveLength(3);
  });

  it("drops hanging requests when closed", async () => {
    const proxmox = await start();
    proxmox.setDelay("hang");

    const pending = api(proxmox, "/nodes");
    await expect.poll(() => proxmox.requests.length).toBe(1);
    await proxmox.close();
    await expect(pending).rejects.toThrow(/fetch failed/);
    await proxmox.close(); // a second close is harmless
  });
});

describe("authentication", () => {
  it("accepts the token as PVEAPIToken=USER@REALM!TOKENID=SECRET, also space-separated or percent-encoded", async () => {
    const proxmox = await start();

    for (const authorization of [
      `PVEAPIToken=${TOKEN}`,
      `PVEAPIToken ${TOKEN}`,
      `PVEAPIToken=vmbot%40pve%21nodes=${SECRET}`,
    ]) {
      expect(await dataOf(await api(proxmox, "/nodes", { authorization }))).toHaveLength(3);
    }
  });

  it("refuses missing or wrong tokens with 401, the reason in the status line and no body", async () => {
    const proxmox = await start();

    const cases: [string | null, string][] = [
      [null, "No ticket"],
      [`Bearer ${SECRET}`, "No ticket"],
      [`PVEAPIToken=${TOKEN_ID}=wrong-secret`, "invalid token value!"],
      // Proxmox Backup Server separates the secret with ":"; Proxmox VE only with "=".
      [`PVEAPIToken=${TOKEN_ID}:${SECRET}`, "no tokenid specified"],
      [
        `PVEAPIToken=vmbot@pve=${SECRET}`,
        "'vmbot@pve' is not a valid token ID - not able to split into user and token parts",
      ],
      [`PVEAPIToken=other@pve!nodes=${SECRET}`, "no such user ('other@pve')"],
      [`PVEAPIToken=vmbot@pam!nodes=${SECRET}`, "no such user ('vmbot@pam')"],
      [`PVEAPIToken=vmbot@pve!other=${SECRET}`, "no such token 'other' for user 'vmbot@pve'"],
      [
        "PVEAuthCookie=PVE:vmbot@pve:65000000::c2lnbmF0dXJl",
        "permission denied - invalid PVE ticket",
      ],
    ];
    for (const [authorization, reason] of cases) {
      const response = await api(proxmox, "/cluster/resources?type=node", { authorization });
      expect([authorization, response.status, response.statusText]).toEqual([
        authorization,
        401,
        reason,
      ]);
      expect(response.headers.get("content-type")).toBeNull();
      expect(response.headers.get("connection")).toBe("close");
      expect(await response.text()).toBe("");
    }

    // Authentication comes before routing: an unknown call without a token is a 401 too.
    const unknown = await api(proxmox, "/cluster/status", { authorization: null });
    expect([unknown.status, unknown.statusText]).toEqual([401, "No ticket"]);
  });

  it("follows the token's state: deleted, expired, user disabled, rotated", async () => {
    const proxmox = await start();

    const reason = async (): Promise<string> => {
      const response = await api(proxmox, "/nodes");
      return response.status === 200 ? "ok" : `${response.status} ${response.statusText}`;
    };
    proxmox.setTokenState("deleted");
    expect(await reason()).toBe("401 no such token 'nodes' for user 'vmbot@pve'");
    proxmox.setTokenState("expired");
    expect(await reason()).toBe("401 token 'nodes' access expired");
    proxmox.setTokenState("user-disabled");
    expect(await reason()).toBe("401 user 'vmbot@pve' is disabled");
    proxmox.setTokenState("valid");
    expect(await reason()).toBe("ok");

    proxmox.setToken(`${TOKEN_ID}=0a0b0c0d-0000-4000-8000-000000000001`);
    expect(await reason()).toBe("401 invalid token value!");
    const rotated = await api(proxmox, "/nodes", {
      authorization: `PVEAPIToken=${TOKEN_ID}=0a0b0c0d-0000-4000-8000-000000000001`,
    });
    expect(rotated.status).toBe(200);

    expect(() => {
      proxmox.setToken("not-a-token");
    }).toThrow(/user@realm!tokenid=secret/);
  });

  it("holds 401s back when told, as pveproxy does for 3 seconds", async () => {
    expect(PVEPROXY_UNAUTHORIZED_DELAY_MS).toBe(3000);
    const proxmox = await start({ unauthorizedDelayMs: 300 });

    let started = Date.now();
    expect((await api(proxmox, "/nodes", { authorization: null })).status).toBe(401);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);

    started = Date.now();
    expect((await api(proxmox, "/nodes")).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(290);
  });
});

describe("the wire", () => {
  it("gzips bodies over 1024 bytes for clients that accept it, as pveproxy does", async () => {
    const many = Array.from({ length: 12 }, (_, i) => fakeNode(`pve${i + 1}`));
    const proxmox = await start({ nodes: many });

    const compressed = await api(proxmox, "/cluster/resources?type=node");
    expect(compressed.headers.get("content-encoding")).toBe("gzip");
    expect(await dataOf(compressed)).toHaveLength(12);

    const plain = await plainGet(`${proxmox.url}/api2/json/cluster/resources?type=node`);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect((JSON.parse(plain.body) as { data: unknown[] }).data).toHaveLength(12);

    const small = await api(proxmox, "/version");
    expect(small.headers.get("content-encoding")).toBeNull();
  });

  it("records every request, refused ones included", async () => {
    const proxmox = await start();

    await api(proxmox, "/cluster/resources?type=node");
    const mark = proxmox.mark();
    await api(proxmox, "/nodes", { authorization: null });
    await api(proxmox, "/nodes");

    expect(proxmox.requests.map((r) => [r.method, r.path])).toEqual([
      ["GET", "/api2/json/cluster/resources"],
      ["GET", "/api2/json/nodes"],
      ["GET", "/api2/json/nodes"],
    ]);
    expect(proxmox.requests[0]?.query.get("type")).toBe("node");
    expect(proxmox.requests[0]?.headers.authorization).toBe(`PVEAPIToken=${TOKEN}`);
    expect(proxmox.requestsSince(mark).map((r) => r.headers.authorization)).toEqual([
      undefined,
      `PVEAPIToken=${TOKEN}`,
    ]);
    expect(proxmox.requestsTo(/\/nodes$/)).toHaveLength(2);
  });
});

describe("TLS", () => {
  const ca = readFileSync(PROXMOX_TEST_TLS.caFile, "utf8");

  it("ships its test certificates", () => {
    for (const file of Object.values(PROXMOX_TEST_TLS)) expect(existsSync(file)).toBe(true);
    expect(ca).toContain("BEGIN CERTIFICATE");
  });

  it("is trusted by a client given the test CA, by IP and by name", async () => {
    const proxmox = await start({ tls: proxmoxTestTls() });
    expect(proxmox.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);

    for (const url of [proxmox.url, proxmox.url.replace("127.0.0.1", "localhost")]) {
      const answer = await httpsGet(`${url}/api2/json/nodes`, { ca });
      expect(answer.status).toBe(200);
      expect(answer.tls?.authorized).toBe(true);
      expect((JSON.parse(answer.body) as { data: unknown[] }).data).toHaveLength(3);
    }

    const answer = await httpsGet(`${proxmox.url}/api2/json/version`, { ca });
    const certificate = answer.tls?.peer;
    expect(certificate?.subject).toMatchObject({
      OU: "PVE Cluster Node",
      O: "Proxmox Virtual Environment",
    });
    expect(certificate?.issuer).toMatchObject({ O: "PVE Cluster Manager CA" });
  });

  it("is refused without the CA: the node certificate alone cannot be verified", async () => {
    const proxmox = await start({ tls: proxmoxTestTls() });

    await expect(httpsGet(`${proxmox.url}/api2/json/nodes`, {})).rejects.toMatchObject({
      code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    });
    // fetch has no CA option: it refuses the same way.
    await expect(api(proxmox, "/nodes")).rejects.toMatchObject({
      cause: expect.objectContaining({ code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" }) as unknown,
    });
    expect(proxmox.requests).toHaveLength(0);
  });

  it("is refused as a self-signed chain when it sends its CA along", async () => {
    const proxmox = await start({ tls: proxmoxTestTls({ chain: true }) });

    await expect(httpsGet(`${proxmox.url}/api2/json/nodes`, {})).rejects.toMatchObject({
      code: "SELF_SIGNED_CERT_IN_CHAIN",
    });
    const trusted = await httpsGet(`${proxmox.url}/api2/json/nodes`, { ca });
    expect(trusted.status).toBe(200);
  });

  it("is accepted without verification when the client skips it", async () => {
    const proxmox = await start({ tls: proxmoxTestTls() });

    const answer = await httpsGet(`${proxmox.url}/api2/json/nodes`, { rejectUnauthorized: false });
    expect(answer.status).toBe(200);
    expect(answer.tls).toMatchObject({
      authorized: false,
      authorizationError: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    });
  });

  it("authenticates over TLS like over HTTP", async () => {
    const proxmox = await start({ tls: proxmoxTestTls() });

    const refused = await new Promise<RawAnswer>((resolve, reject) => {
      httpsRequest(
        `${proxmox.url}/api2/json/nodes`,
        { ca, agent: false, headers: { authorization: `PVEAPIToken=${TOKEN_ID}=nope` } },
        (response) => {
          response.resume();
          response.on("end", () => {
            resolve({
              status: response.statusCode,
              statusMessage: response.statusMessage,
              headers: response.headers,
              body: "",
            });
          });
        },
      )
        .on("error", reject)
        .end();
    });
    expect([refused.status, refused.statusMessage]).toEqual([401, "invalid token value!"]);
  });
});
