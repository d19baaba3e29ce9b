/** The fake Proxmox VE's public types: nodes, options, injected failures and drivers. */
import { type RecordedRequest } from "../http.js";

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
