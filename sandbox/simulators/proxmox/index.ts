/**
 * A fake Proxmox VE API (pveproxy on port 8006) that answers the read-only calls vmbot makes for
 * the node picker: `GET /api2/json/cluster/resources[?type=…]`, `GET /api2/json/nodes` and
 * `GET /api2/json/version`, with API-token authentication, over HTTP or HTTPS.
 *
 * It keeps a list of nodes (`fakeNode` builds one from cores, GiB and load) and derives both
 * listings from it the way `PVE::API2Tools::extract_node_stats` does:
 * - every node of the cluster is listed, as `{id: "node/<name>", node, type: "node", status}`;
 * - an online node adds its load (`cpu` as a fraction of all cores, `mem`, `disk`, `uptime`),
 *   its support `level` and its maxima (`maxcpu`, `maxmem`, `maxdisk`);
 * - a node that is offline or unknown has no load at all. pmxcfs forgets a node's last status
 *   report 5 minutes after it stopped sending them: until then (`lastReport: "recent"`) the node
 *   still shows `level` and its maxima, afterwards (`"expired"`, the default) only its name and
 *   status;
 * - without `Sys.Audit` on `/nodes/<name>` (a privilege-separated token, see `auditableNodes`) a
 *   node keeps its status and level but loses its load and maxima;
 * - `/cluster/resources` adds `cgroup-mode`, `/nodes` adds `ssl_fingerprint`.
 * Proxmox lists nodes in hash order; the fake keeps the order given unless `shuffleNodes` is set.
 *
 * Wire format (pve-http-server's `PVE::APIServer::AnyEvent` with the JSON formatter):
 * - success: 200 `{"data": …}`, `Content-Type: application/json;charset=UTF-8`, gzip-encoded when
 *   the client accepts gzip and the body is over 1024 bytes;
 * - a failed call: the status line carries the message (`HTTP/1.1 403 Permission check failed`)
 *   and the body is `{"data": null, "message": "…\n"}`, with `errors` per parameter for 400;
 *   every answer from 400 up closes the connection;
 * - an unknown call: 501 `Method 'GET /x' not implemented`;
 * - authentication failures are answered before any routing, with 401, the reason in the status
 *   line and no body: `No ticket` without credentials, `no tokenid specified`, `'…' is not a valid
 *   token ID - not able to split into user and token parts`, `no such user ('…')`,
 *   `user '…' is disabled`, `no such token '…' for user '…'`, `token '…' access expired`,
 *   `invalid token value!`. pveproxy holds every 401 back for 3 seconds
 *   (`PVEPROXY_UNAUTHORIZED_DELAY_MS`); the fake only does when told (`unauthorizedDelayMs`).
 *
 * The `Authorization` header is read as pveproxy reads it: `PVEAPIToken=USER@REALM!TOKENID=SECRET`
 * (or `PVEAPIToken USER@…`), up to the first `;`, percent-decoded; the token ID and the secret are
 * split at the last `=`. `:` is not a separator (that is Proxmox Backup Server's
 * `PBSAPIToken=…:secret`): such a header gets `no tokenid specified`.
 *
 * Driving it: `setNodes`/`updateNode` change the cluster, `failEndpoint` makes one call fail until
 * restored (e.g. `/cluster/resources` answering 403 or 501, so a client falls back to `/nodes`),
 * `failNext` injects a failure, delay, hang or dropped connection into the next requests,
 * `setDelay` slows or stalls every answer, `setToken`/`setTokenState` rotate or revoke the token.
 */
import { createHash } from "node:crypto";
import { STATUS_CODES, type ServerResponse } from "node:http";
import { gzipSync } from "node:zlib";
import { FaultQueue, InFlight, matchesPath, RequestLog, Waits } from "../faults.js";
import { startFakeServer, type RecordedRequest } from "../http.js";

// ---------------------------------------------------------------------------------------------
// Public types

export type NodeStatus = "online" | "offline" | "unknown";

/** One cluster node as the fake keeps it; sizes in bytes, as the API gives them. */
export interface FakeNode {
  readonly name: string;
  readonly status: NodeStatus;
  /** CPU threads (`maxcpu`). */
  readonly maxcpu: number;
  /** CPU utilization as a fraction of all `maxcpu`, 0..1 (`cpu`). */
  readonly cpu: number;
  readonly maxmem: number;
  readonly mem: number;
  /** Root file system size and use. */
  readonly maxdisk: number;
  readonly disk: number;
  /** Seconds. */
  readonly uptime: number;
  /** Subscription level: `""` without a subscription, else `c`, `b`, `s` or `p`. */
  readonly level: string;
  /** `cgroup-mode` in `/cluster/resources` (2 on current versions); undefined: not shown. */
  readonly cgroupMode: number | undefined;
  /**
   * For a node that is not online: `recent` while pmxcfs still holds its last status report (up
   * to 5 minutes after it stopped reporting), so `level` and the maxima are still listed;
   * `expired` afterwards. Ignored for online nodes.
   */
  readonly lastReport: "recent" | "expired";
  /** SHA-256 fingerprint of the node's certificate, `AA:BB:…`, shown by `/nodes`. */
  readonly sslFingerprint: string;
}

export interface NodeOptions {
  /** Default `online`. */
  status?: NodeStatus;
  /** CPU threads. Default 8. */
  cores?: number;
  /** CPU utilization, 0..1. Default 0.05. */
  cpu?: number;
  /** Default 64. */
  memoryGiB?: number;
  /** Default a quarter of `memoryGiB`. */
  memoryUsedGiB?: number;
  /** Default 100. */
  diskGiB?: number;
  /** Default a tenth of `diskGiB`. */
  diskUsedGiB?: number;
  /** Default 14 days. */
  uptimeSeconds?: number;
  /** Default `""` (no subscription). */
  level?: string;
  /** Default 2; null: not shown. */
  cgroupMode?: number | null;
  /** Default `expired`. See `FakeNode.lastReport`. */
  lastReport?: "recent" | "expired";
  /** Default derived from the name. */
  sslFingerprint?: string;
}

/** The calls the fake serves, relative to `/api2/json`. */
export type ProxmoxPath = "/cluster/resources" | "/nodes" | "/version";

/**
 * A failed call as Proxmox answers it: `status`, the reason in the status line and
 * `{"data": null, "message", "errors"?}` as the body. Without `message`, a text Proxmox gives for
 * that status: 400 `Parameter verification failed.`, 403 `Permission check failed (/, Sys.Audit)`,
 * 500 `ipcc_send_rec[1] failed: Connection refused` (pmxcfs down), 501
 * `Method 'GET <path>' not implemented`; otherwise the standard reason phrase. A 401 is answered
 * like an authentication failure: the reason only, no body (default `invalid token value!`).
 */
export interface ProxmoxError {
  status: number;
  message?: string;
  /** Per-parameter errors (a 400's `errors`). */
  errors?: Readonly<Record<string, string>>;
}

/** Something in front of Proxmox answering instead of it (a reverse proxy's error page). */
export interface RawAnswer {
  status: number;
  body: string;
  /** Default `text/html`. */
  contentType?: string;
}

/**
 * - a `ProxmoxError` or `RawAnswer`: answered instead of the call;
 * - `{ delayMs }`: the call is answered normally after the delay;
 * - `"hang"`: never answered; the connection stays open until the client gives up or the fake
 *   is closed;
 * - `"reset"`: the connection is dropped without an answer.
 */
export type InjectedFailure = ProxmoxError | RawAnswer | { delayMs: number } | "hang" | "reset";

/**
 * - `valid`: accepted;
 * - `deleted`: the token was removed (`no such token '…' for user '…'`);
 * - `expired`: its expiry date has passed (`token '…' access expired`);
 * - `user-disabled`: its user was disabled (`user '…' is disabled`).
 */
export type TokenState = "valid" | "deleted" | "expired" | "user-disabled";

export interface FakeProxmoxOptions {
  /** The API token the cluster knows, `USER@REALM!TOKENID=SECRET` (as `PROXMOX_TOKEN` holds it). */
  token: string;
  /** Default `DEFAULT_NODES`. */
  nodes?: readonly FakeNode[];
  /**
   * Serve HTTPS with this key and certificate (PEM). pveproxy serves the node certificate alone
   * (`pve-ssl.pem`); a custom certificate chain appends its CA certificates to `cert`.
   */
  tls?: { key: string; cert: string };
  /**
   * Nodes on which the token has `Sys.Audit`; the others are listed without load or maxima, as
   * for a privilege-separated token with narrower ACLs. Default `all`.
   */
  auditableNodes?: "all" | readonly string[];
  /** Hold every 401 back this long, as pveproxy does (`PVEPROXY_UNAUTHORIZED_DELAY_MS`). Default 0. */
  unauthorizedDelayMs?: number;
  /** List nodes in a new random order on every call, as Proxmox's hash order may. Default false. */
  shuffleNodes?: boolean;
  /** What `/version` answers. Default `8.4.1` (release `8.4`). */
  version?: string;
}

export interface FakeProxmox {
  /** Base URL (`http://127.0.0.1:<port>` or `https://…`), without `/api2/json`. */
  readonly url: string;
  /** Every request received, in order, including refused and failed ones. */
  readonly requests: readonly RecordedRequest[];
  /** Requests whose path (e.g. `/api2/json/nodes`) matches. */
  requestsTo(pathPattern: RegExp): RecordedRequest[];
  readonly nodes: readonly FakeNode[];
  /** Replaces the cluster's nodes. */
  setNodes(nodes: readonly FakeNode[]): void;
  /** Changes one node, as `fakeNode` options (e.g. `{ status: "offline" }`). */
  updateNode(name: string, changes: NodeOptions): FakeNode;
  /** Nodes on which the token has `Sys.Audit` (see `FakeProxmoxOptions.auditableNodes`). */
  setAuditableNodes(nodes: "all" | readonly string[]): void;
  /**
   * Every answer waits `ms` first. `"hang"`: requests received from now on are never answered;
   * each stays open until its client gives up or the fake is closed (`setDelay(0)` ends it for
   * later requests).
   */
  setDelay(delay: number | "hang"): void;
  /**
   * Makes a call answer `error` until called again with undefined. Real Proxmox VE has served
   * `/cluster/resources` to every authenticated caller since 2.0 and filters what a narrow token
   * sees instead of refusing it (see `setAuditableNodes`); a failure here stands for what else can
   * happen: pmxcfs down (500), a proxy or API gateway in front answering 403/501/502, and so on.
   */
  failEndpoint(path: ProxmoxPath, error: ProxmoxError | RawAnswer | undefined): void;
  /**
   * Injects `failure` into the next `times` (default 1) requests whose path matches `path`
   * (default: any request).
   */
  failNext(failure: InjectedFailure, options?: { path?: RegExp; times?: number }): void;
  /** Replaces the token the cluster knows (a rotation: the old secret stops working). */
  setToken(token: string): void;
  setTokenState(state: TokenState): void;
  /** A mark for `requestsSince`: the number of requests received so far. */
  mark(): number;
  requestsSince(mark: number): RecordedRequest[];
  /** Resolves when no request is being handled (answered, dropped, or given up by its client). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Constants

/** How long pveproxy holds back a 401 (`$delay = 3` in `PVE::APIServer::AnyEvent`). */
export const PVEPROXY_UNAUTHORIZED_DELAY_MS = 3000;

const GIB = 1024 ** 3;

/** Two online nodes with some load and one that has been offline for a while. */
export const DEFAULT_NODES: readonly FakeNode[] = [
  fakeNode("pve1", { cores: 16, cpu: 0.08, memoryGiB: 128, memoryUsedGiB: 40 }),
  fakeNode("pve2", { cores: 8, cpu: 0.35, memoryGiB: 64, memoryUsedGiB: 50 }),
  fakeNode("pve3", { status: "offline", cores: 8, memoryGiB: 64 }),
];

/** `enum` of `/cluster/resources`' `type` parameter (PVE::API2::Cluster). */
const RESOURCE_TYPES = ["vm", "storage", "node", "sdn"] as const;

/** The API's parameters per call; any other is refused (`additionalProperties => 0`). */
const PARAMETERS: Readonly<Record<ProxmoxPath, readonly string[]>> = {
  "/cluster/resources": ["type"],
  "/nodes": [],
  "/version": [],
};

/** Methods pveproxy handles at all; others get 501 before authentication. */
const KNOWN_METHODS = new Set(["GET", "POST", "PUT", "DELETE"]);

// Token IDs: PVE::Auth::Plugin's `$user_regex` and `$realm_regex`, and PVE::AccessControl's
// `$token_full_regex` (the token name follows the realm's rule).
const USER_PATTERN = String.raw`[^\s:/]+`;
const REALM_PATTERN = String.raw`[A-Za-z][A-Za-z0-9.\-_]+`;
const TOKEN_ID = new RegExp(`^((${USER_PATTERN})@(${REALM_PATTERN}))!(${REALM_PATTERN})$`);

// ---------------------------------------------------------------------------------------------
// Nodes

function fingerprintOf(name: string): string {
  const hex = createHash("sha256").update(`pve-ssl:${name}`).digest("hex").toUpperCase();
  return (hex.match(/../g) ?? []).join(":");
}

function nonNegative(value: number, what: string, node: string): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new Error(`fakeNode(${node}): ${what} must be a number >= 0, not ${value}`);
  }
  return value;
}

/** Builds a node from human sizes; see `NodeOptions` for the defaults. */
export function fakeNode(name: string, options: NodeOptions = {}): FakeNode {
  const memoryGiB = nonNegative(options.memoryGiB ?? 64, "memoryGiB", name);
  const diskGiB = nonNegative(options.diskGiB ?? 100, "diskGiB", name);
  const cpu = nonNegative(options.cpu ?? 0.05, "cpu", name);
  if (cpu > 1)
    throw new Error(`fakeNode(${name}): cpu is a fraction of all cores (0..1), not ${cpu}`);
  return {
    name,
    status: options.status ?? "online",
    maxcpu: Math.round(nonNegative(options.cores ?? 8, "cores", name)),
    cpu,
    maxmem: Math.round(memoryGiB * GIB),
    mem: Math.round(
      nonNegative(options.memoryUsedGiB ?? memoryGiB / 4, "memoryUsedGiB", name) * GIB,
    ),
    maxdisk: Math.round(diskGiB * GIB),
    disk: Math.round(nonNegative(options.diskUsedGiB ?? diskGiB / 10, "diskUsedGiB", name) * GIB),
    uptime: Math.round(nonNegative(options.uptimeSeconds ?? 14 * 86_400, "uptimeSeconds", name)),
    level: options.level ?? "",
    cgroupMode: options.cgroupMode === null ? undefined : (options.cgroupMode ?? 2),
    lastReport: options.lastReport ?? "expired",
    sslFingerprint: options.sslFingerprint ?? fingerprintOf(name),
  };
}

function optionsOf(node: FakeNode): NodeOptions {
  return {
    status: node.status,
    cores: node.maxcpu,
    cpu: node.cpu,
    memoryGiB: node.maxmem / GIB,
    memoryUsedGiB: node.mem / GIB,
    diskGiB: node.maxdisk / GIB,
    diskUsedGiB: node.disk / GIB,
    uptimeSeconds: node.uptime,
    level: node.level,
    cgroupMode: node.cgroupMode ?? null,
    lastReport: node.lastReport,
    sslFingerprint: node.sslFingerprint,
  };
}

/** A node's entry as `PVE::API2Tools::extract_node_stats` builds it. */
function nodeStats(node: FakeNode, canAudit: boolean): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    id: `node/${node.name}`,
    type: "node",
    node: node.name,
    status: node.status,
  };
  // Without a status report from the node (pmxcfs's RRD data) there is nothing more to show.
  if (node.status !== "online" && node.lastReport === "expired") return entry;
  const load = node.status === "online" && canAudit;
  if (load) entry.cpu = node.cpu;
  if (canAudit) entry.maxcpu = node.maxcpu;
  if (load) entry.mem = node.mem;
  if (canAudit) entry.maxmem = node.maxmem;
  if (load) entry.disk = node.disk;
  if (canAudit) entry.maxdisk = node.maxdisk;
  if (load) entry.uptime = node.uptime;
  entry.level = node.level;
  return entry;
}

// ---------------------------------------------------------------------------------------------
// Answers

interface Reply {
  status: number;
  /** The status line's reason. */
  reason: string;
  /** JSON body; undefined: no body (authentication failures). */
  body?: unknown;
  raw?: { text: string; contentType: string };
}

function firstLine(text: string): string {
  // Node refuses control characters in a reason phrase; pveproxy sends only the first line.
  return (text.split("\n")[0] ?? "").replace(/[^\t\x20-\x7e]/g, "?");
}

function data(value: unknown): Reply {
  return { status: 200, reason: "OK", body: { data: value } };
}

function apiError(
  status: number,
  message: string,
  errors?: Readonly<Record<string, string>>,
): Reply {
  return {
    status,
    reason: firstLine(message),
    body: { data: null, ...(errors === undefined ? {} : { errors }), message },
  };
}

function unauthorized(message: string): Reply {
  return { status: 401, reason: firstLine(message) };
}

function defaultMessage(status: number, method: string, relPath: string): string {
  switch (status) {
    case 400:
      return "Parameter verification failed.\n";
    case 401:
      return "invalid token value!\n";
    case 403:
      return "Permission check failed (/, Sys.Audit)\n";
    case 500:
      return "ipcc_send_rec[1] failed: Connection refused\n";
    case 501:
      return `Method '${method} ${relPath}' not implemented`;
    default:
      return STATUS_CODES[status] ?? "Unknown";
  }
}

function injected(error: ProxmoxError | RawAnswer, method: string, relPath: string): Reply {
  if ("body" in error) {
    return {
      status: error.status,
      reason: STATUS_CODES[error.status] ?? "Unknown",
      raw: { text: error.body, contentType: error.contentType ?? "text/html" },
    };
  }
  const message = error.message ?? defaultMessage(error.status, method, relPath);
  if (error.status === 401) return unauthorized(message);
  return apiError(error.status, message, error.errors);
}

function write(req: RecordedRequest, res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.writableEnded) return; // the client has gone
  const now = new Date().toUTCString();
  const headers: Record<string, string | number> = {
    "cache-control": "max-age=0",
    expires: now,
    pragma: "no-cache",
    server: "pve-api-daemon/3.0",
  };
  // pveproxy ends keep-alive after every error.
  if (reply.status >= 400) headers.connection = "close";
  let content: Buffer | undefined;
  if (reply.raw !== undefined) {
    content = Buffer.from(reply.raw.text, "utf8");
    headers["content-type"] = reply.raw.contentType;
  } else if (reply.body !== undefined) {
    content = Buffer.from(JSON.stringify(reply.body), "utf8");
    headers["content-type"] = "application/json;charset=UTF-8";
  }
  const acceptEncoding = req.headers["accept-encoding"];
  if (content !== undefined && content.length > 1024 && acceptEncoding?.includes("gzip")) {
    content = gzipSync(content);
    headers["content-encoding"] = "gzip";
  }
  headers["content-length"] = content?.length ?? 0;
  res.writeHead(reply.status, reply.reason, headers);
  res.end(content);
}

// ---------------------------------------------------------------------------------------------
// Authentication, as pveproxy does it

/** Perl's truth for a string: defined, not empty, not "0". */
function perlTrue(value: string | undefined): value is string {
  return value !== undefined && value !== "" && value !== "0";
}

/** URI::Escape's uri_unescape: %XX sequences only (no `+`). */
function uriUnescape(value: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i += 1) {
    const hex = value.slice(i + 1, i + 3);
    if (value[i] === "%" && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(value[i] ?? "", "utf8"));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/** PVE::APIServer::Formatter::extract_auth_value. */
function extractAuthValue(header: string | undefined, key: string): string | undefined {
  if (header === undefined) return undefined;
  const value = new RegExp(String.raw`(?:^|\s)${key}(?:=| )([^;]*)`).exec(header)?.[1];
  return perlTrue(value) ? uriUnescape(value) : value;
}

interface TokenRecord {
  userid: string;
  tokenName: string;
  secret: string;
}

function parseToken(token: string): TokenRecord {
  const match = /^(.*)=(.*)$/.exec(token);
  const tokenId = TOKEN_ID.exec(match?.[1] ?? "");
  if (!match || !tokenId) {
    // The secret stays out of the message.
    const shown = match ? `${match[1]}=…` : "a value without =";
    throw new Error(`the fake Proxmox needs a token like user@realm!tokenid=secret, not ${shown}`);
  }
  return { userid: tokenId[1] ?? "", tokenName: tokenId[4] ?? "", secret: match[2] ?? "" };
}

/** PVE::AccessControl::verify_token against the one token the fake knows; the failure, if any. */
function verifyToken(apiToken: string, known: TokenRecord, state: TokenState): string | undefined {
  const match = /^(.*)=(.*)$/.exec(apiToken);
  if (!match) return "no tokenid specified";
  const tokenId = match[1] ?? "";
  const parts = TOKEN_ID.exec(tokenId);
  if (!parts) {
    return `'${tokenId}' is not a valid token ID - not able to split into user and token parts`;
  }
  const userid = parts[1] ?? "";
  const tokenName = parts[4] ?? "";
  if (userid !== known.userid) return `no such user ('${userid}')`;
  if (state === "user-disabled") return `user '${userid}' is disabled`;
  if (tokenName !== known.tokenName || state === "deleted") {
    return `no such token '${tokenName}' for user '${userid}'`;
  }
  if (state === "expired") return `token '${tokenName}' access expired`;
  if (match[2] !== known.secret) return "invalid token value!";
  return undefined;
}

/** pveproxy's header stage: the 401 to answer, or undefined when the caller is authenticated. */
function authenticate(
  req: RecordedRequest,
  known: TokenRecord,
  state: TokenState,
): Reply | undefined {
  const authorization = req.headers.authorization;
  // A ticket (cookie first, then the Authorization header) wins over a token. The fake issues no
  // tickets, so any ticket is one PVE::Ticket::verify_rsa_ticket refuses.
  let ticket = extractAuthValue(req.headers.cookie, "PVEAuthCookie");
  if (!perlTrue(ticket)) ticket = extractAuthValue(authorization, "PVEAuthCookie");
  if (perlTrue(ticket)) return unauthorized("permission denied - invalid PVE ticket");
  const apiToken = extractAuthValue(authorization, "PVEAPIToken");
  if (!perlTrue(apiToken)) return unauthorized("No ticket");
  const failure = verifyToken(apiToken, known, state);
  return failure === undefined ? undefined : unauthorized(failure);
}

// ---------------------------------------------------------------------------------------------
// The server

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    const [a, b] = [copy[i], copy[j]];
    if (a !== undefined && b !== undefined) [copy[i], copy[j]] = [b, a];
  }
  return copy;
}

function releaseOf(version: string): string {
  return version.split(".").slice(0, 2).join(".");
}

export async function startFakeProxmox(options: FakeProxmoxOptions): Promise<FakeProxmox> {
  let known = parseToken(options.token);
  let tokenState: TokenState = "valid";
  let nodes: readonly FakeNode[] = [...(options.nodes ?? DEFAULT_NODES)];
  let auditable: "all" | ReadonlySet<string> =
    options.auditableNodes === undefined || options.auditableNodes === "all"
      ? "all"
      : new Set(options.auditableNodes);
  let delay: number | "hang" = 0;
  const version = options.version ?? "8.4.1";
  const endpointFailures = new Map<ProxmoxPath, ProxmoxError | RawAnswer>();
  const faults = new FaultQueue<RegExp | undefined, InjectedFailure>(
    (path, req) => path === undefined || matchesPath(path, req.path),
  );
  const log = new RequestLog();
  const waits = new Waits();
  const inFlight = new InFlight();
  let closed = false;

  const canAudit = (name: string): boolean => auditable === "all" || auditable.has(name);
  const listed = (): readonly FakeNode[] =>
    options.shuffleNodes === true ? shuffled(nodes) : nodes;

  /** What pveproxy answers, from the request line to the handler. */
  const dispatch = (req: RecordedRequest): Reply => {
    if (!KNOWN_METHODS.has(req.method)) {
      return { status: 501, reason: `method '${req.method}' not available` };
    }
    if (!req.path.startsWith("/api2")) return { status: 501, reason: `no such file '${req.path}'` };
    const format = /^\/api2\/+([a-z][a-z0-9]+)(\/.*)?$/.exec(req.path);
    if (!format) return { status: 501, reason: "no such uri" };
    const denied = authenticate(req, known, tokenState);
    if (denied !== undefined) return denied;
    const relPath = (format[2] ?? "/").replace(/\/+$/, "") || "/";
    if (format[1] !== "json") {
      return { status: 501, reason: `no formatter for uri ${relPath}, ${format[1]}` };
    }
    if (req.body.length > 0 && req.method !== "POST" && req.method !== "PUT") {
      return { status: 501, reason: `Unexpected content for method '${req.method}'` };
    }
    const notImplemented = apiError(501, `Method '${req.method} ${relPath}' not implemented`);
    if (req.method !== "GET" || !Object.hasOwn(PARAMETERS, relPath)) return notImplemented;
    const path = relPath as ProxmoxPath;

    const params = new URLSearchParams(req.query);
    params.delete("_dc"); // the GUI's cache buster, dropped before validation
    const errors: Record<string, string> = {};
    for (const key of params.keys()) {
      if (!PARAMETERS[path].includes(key)) {
        errors[key] =
          "property is not defined in schema and the schema does not allow additional properties";
      }
    }
    const type = params.get("type");
    if (
      path === "/cluster/resources" &&
      type !== null &&
      !(RESOURCE_TYPES as readonly string[]).includes(type)
    ) {
      errors.type = `value '${type}' does not have a value in the enumeration '${RESOURCE_TYPES.join(", ")}'`;
    }
    if (Object.keys(errors).length > 0) {
      return apiError(400, "Parameter verification failed.\n", errors);
    }

    const failure = endpointFailures.get(path);
    if (failure !== undefined) return injected(failure, req.method, relPath);

    switch (path) {
      case "/cluster/resources":
        if (type !== null && type !== "node") return data([]);
        return data(
          listed().map((node) => {
            const entry = nodeStats(node, canAudit(node.name));
            // From the node's `static-info`, which the fake keeps as long as its status report.
            const reported = node.status === "online" || node.lastReport === "recent";
            if (reported && node.cgroupMode !== undefined) entry["cgroup-mode"] = node.cgroupMode;
            return entry;
          }),
        );
      case "/nodes":
        return data(
          listed().map((node) => ({
            ...nodeStats(node, canAudit(node.name)),
            ssl_fingerprint: node.sslFingerprint,
          })),
        );
      case "/version":
        return data({ version, release: releaseOf(version), repoid: "c0ffee00d15ea5e5" });
    }
  };

  const answer = async (req: RecordedRequest, res: ServerResponse): Promise<void> => {
    log.record(req);
    const failure = faults.take(req);
    if (failure === "reset") {
      res.socket?.destroy();
      return;
    }
    if (failure === "hang" || delay === "hang") {
      await waits.hang(res);
      return;
    }
    let waitMs = delay;
    if (failure !== undefined && "delayMs" in failure) waitMs += failure.delayMs;
    if (waitMs > 0 && !(await waits.sleep(waitMs))) {
      res.destroy();
      return;
    }
    const format = /^\/api2\/+[a-z][a-z0-9]+(\/.*)?$/.exec(req.path);
    const relPath = (format?.[1] ?? "/").replace(/\/+$/, "") || "/";
    const reply =
      failure !== undefined && "status" in failure
        ? injected(failure, req.method, relPath)
        : dispatch(req);
    const holdMs = options.unauthorizedDelayMs ?? 0;
    if (reply.status === 401 && holdMs > 0 && !(await waits.sleep(holdMs))) {
      res.destroy();
      return;
    }
    write(req, res, reply);
  };

  const server = await startFakeServer(
    (req, res) => inFlight.run(() => answer(req, res)),
    options.tls === undefined ? {} : { tls: options.tls },
  );

  return {
    url: server.url,
    requests: log.requests,
    requestsTo: (pathPattern) => log.to(pathPattern),
    get nodes() {
      return nodes;
    },
    setNodes: (next) => {
      nodes = [...next];
    },
    updateNode: (name, changes) => {
      const current = nodes.find((n) => n.name === name);
      if (current === undefined) throw new Error(`no node ${name} in the fake Proxmox`);
      const updated = fakeNode(name, { ...optionsOf(current), ...changes });
      nodes = nodes.map((n) => (n.name === name ? updated : n));
      return updated;
    },
    setAuditableNodes: (next) => {
      auditable = next === "all" ? "all" : new Set(next);
    },
    setDelay: (next) => {
      if (next !== "hang" && (!Number.isFinite(next) || next < 0)) {
        throw new Error(`setDelay needs a number of milliseconds >= 0 or "hang", not ${next}`);
      }
      delay = next;
    },
    failEndpoint: (path, error) => {
      if (error === undefined) endpointFailures.delete(path);
      else endpointFailures.set(path, error);
    },
    failNext: (failure, failOptions) => {
      faults.add(failOptions?.path, failure, failOptions?.times);
    },
    setToken: (token) => {
      known = parseToken(token);
      tokenState = "valid";
    },
    setTokenState: (state) => {
      tokenState = state;
    },
    mark: () => log.mark(),
    requestsSince: (mark) => log.since(mark),
    settled: () => inFlight.idle(),
    close: async () => {
      if (closed) return;
      closed = true;
      waits.close();
      await server.close();
    },
  };
}
