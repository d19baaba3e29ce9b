import { readFileSync } from "node:fs";
import { Agent, fetch, type Response } from "undici";
import { z } from "zod";
import { networkReason, VmbotError } from "../errors.js";
import type { Logger } from "../logger.js";
import { retryAfterMs, retrying, type Retryable } from "../retry.js";
import type { SecretSource } from "../secrets.js";

/**
 * The Proxmox VE API, read-only: the cluster's nodes with their load. Node's fetch (undici) with
 * `Authorization: PVEAPIToken=…`, TLS verification on unless told otherwise, a timeout on
 * every call.
 */

export interface ProxmoxNode {
  name: string;
  status: "online" | "offline" | "unknown";
  /** Maxima, known for every node Proxmox has seen. */
  cores?: number;
  memTotal?: number;
  diskTotal?: number;
  /** Current use, only for online nodes: CPU as a fraction of all cores, memory and disk in bytes. */
  cpu?: number;
  memUsed?: number;
  diskUsed?: number;
}

export interface Proxmox {
  /** Every node of the cluster, sorted by name. */
  nodes(): Promise<ProxmoxNode[]>;
  /** The API's address, for messages. */
  readonly url: string;
}

export interface ProxmoxOptions {
  url: string;
  token: SecretSource;
  /** PEM file of the CA that signed the cluster's certificate. */
  caFile?: string | undefined;
  /** Skips TLS verification (self-signed clusters without a CA file). */
  insecure?: boolean;
  timeoutMs?: number;
  log: Logger;
}

const DEFAULT_TIMEOUT_MS = 5_000;

const count = z.number().nonnegative().optional().catch(undefined);

const NodeItemSchema = z.object({
  type: z.string().optional(),
  node: z.string().min(1),
  status: z.string().optional(),
  cpu: count,
  maxcpu: count,
  mem: count,
  maxmem: count,
  disk: count,
  maxdisk: count,
});

const EnvelopeSchema = z.object({ data: z.array(z.unknown()) });

/** Failures of the cluster-wide listing that `/nodes` may still answer (old versions, narrow tokens). */
const FALLBACK_STATUSES = new Set([400, 403, 404, 500, 501]);

/** Node-level TLS failures: the certificate is not one this process trusts. */
const TLS_CODES =
  /^(SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|ERR_TLS_CERT_ALTNAME_INVALID|CERT_UNTRUSTED|CERT_REJECTED)$/;

function tlsReason(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === "string" && TLS_CODES.test(code)) return code;
    current = current.cause;
  }
  return undefined;
}

function toNode(item: z.infer<typeof NodeItemSchema>): ProxmoxNode {
  const status = item.status === "online" || item.status === "offline" ? item.status : "unknown";
  const node: ProxmoxNode = { name: item.node, status };
  if (item.maxcpu !== undefined && item.maxcpu > 0) node.cores = item.maxcpu;
  if (item.maxmem !== undefined && item.maxmem > 0) node.memTotal = item.maxmem;
  if (item.maxdisk !== undefined && item.maxdisk > 0) node.diskTotal = item.maxdisk;
  // What an offline node last reported is not its load now.
  if (status === "online") {
    if (item.cpu !== undefined) node.cpu = Math.min(1, item.cpu);
    if (item.mem !== undefined) node.memUsed = item.mem;
    if (item.disk !== undefined) node.diskUsed = item.disk;
  }
  return node;
}

class HttpStatus extends Error {
  constructor(
    readonly status: number,
    readonly retryAfter?: number,
  ) {
    super(`HTTP ${status}`);
  }
}

/** Reads are safe to repeat: after a 429 (as told), a 502/503/504, or a dropped connection. */
const retryable: Retryable = (error) => {
  if (error instanceof HttpStatus) {
    if (error.status === 429)
      return { ...(error.retryAfter === undefined ? {} : { afterMs: error.retryAfter }) };
    return [502, 503, 504].includes(error.status) ? {} : undefined;
  }
  const name = (error as Error | null)?.name;
  if (name === "TimeoutError" || name === "AbortError" || tlsReason(error) !== undefined) {
    return undefined;
  }
  return error instanceof TypeError || networkReason(error) !== undefined ? {} : undefined;
};

/** Where and how the API is reached. */
interface Connection {
  base: string;
  timeoutMs: number;
  dispatcher: Agent;
}

export function createProxmox(options: ProxmoxOptions): Proxmox {
  const base = options.url.replace(/\/+$/, "");
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const ca = options.caFile === undefined ? undefined : readCa(options.caFile);
  if (options.insecure === true) {
    options.log.warn(
      { url: base },
      "PROXMOX_INSECURE=true: the Proxmox API's TLS certificate is not verified; set PROXMOX_CA_FILE instead where you can",
    );
  }
  const dispatcher = new Agent({
    connect: {
      ...(ca === undefined ? {} : { ca }),
      rejectUnauthorized: options.insecure !== true,
    },
  });
  const connection: Connection = { base, timeoutMs, dispatcher };

  return {
    url: base,
    async nodes() {
      try {
        const used = await options.token.get();
        try {
          return await listNodes(connection, used);
        } catch (error) {
          // A token rotated in Vault: read it again, and try once more if it changed.
          if (
            error instanceof HttpStatus &&
            error.status === 401 &&
            (await options.token.refresh(used))
          ) {
            return await listNodes(connection, await options.token.get());
          }
          throw error;
        }
      } catch (error) {
        throw failure(connection, error);
      }
    },
  };
}

function readCa(caFile: string): string {
  try {
    return readFileSync(caFile, "utf8");
  } catch (error) {
    throw new VmbotError(
      {
        code: "proxmox_tls",
        why: "ca_unreadable",
        caFile,
        reason: (error as NodeJS.ErrnoException).code ?? (error as Error).message,
      },
      { cause: error },
    );
  }
}

async function getOnce(connection: Connection, path: string, token: string): Promise<unknown> {
  const response: Response = await fetch(`${connection.base}/api2/json${path}`, {
    headers: { authorization: `PVEAPIToken=${token}`, accept: "application/json" },
    dispatcher: connection.dispatcher,
    signal: AbortSignal.timeout(connection.timeoutMs),
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new HttpStatus(response.status, retryAfterMs(response.headers.get("retry-after")));
  }
  return response.json();
}

const get = (connection: Connection, path: string, token: string) =>
  retrying(() => getOnce(connection, path, token), retryable);

async function listNodes(connection: Connection, token: string): Promise<ProxmoxNode[]> {
  let items: unknown[];
  try {
    items = EnvelopeSchema.parse(await get(connection, "/cluster/resources?type=node", token)).data;
  } catch (error) {
    if (!(error instanceof HttpStatus) || !FALLBACK_STATUSES.has(error.status)) throw error;
    items = EnvelopeSchema.parse(await get(connection, "/nodes", token)).data;
  }
  const nodes = new Map<string, ProxmoxNode>();
  for (const item of items) {
    const parsed = NodeItemSchema.safeParse(item);
    if (!parsed.success || (parsed.data.type !== undefined && parsed.data.type !== "node")) {
      continue;
    }
    nodes.set(parsed.data.node, toNode(parsed.data));
  }
  return [...nodes.values()].sort((a, b) => a.name.localeCompare(b.name, "en", { numeric: true }));
}

function failure({ base, timeoutMs }: Connection, error: unknown): VmbotError {
  if (error instanceof VmbotError) return error;
  const options = { cause: error };
  if (error instanceof HttpStatus) {
    switch (error.status) {
      case 401:
        return new VmbotError({ code: "proxmox_unauthorized", url: base }, options);
      case 403:
        return new VmbotError({ code: "proxmox_forbidden", url: base }, options);
      default:
        return new VmbotError({ code: "proxmox_failed", url: base, status: error.status }, options);
    }
  }
  if (error instanceof z.ZodError || error instanceof SyntaxError) {
    return new VmbotError({ code: "proxmox_failed", url: base }, options);
  }
  const name = (error as Error | null)?.name;
  if (name === "TimeoutError" || name === "AbortError") {
    return new VmbotError({ code: "proxmox_timeout", url: base, timeoutMs }, options);
  }
  const tls = tlsReason(error);
  if (tls !== undefined) {
    return new VmbotError(
      { code: "proxmox_tls", why: "untrusted", url: base, reason: tls },
      options,
    );
  }
  return new VmbotError(
    { code: "proxmox_unreachable", url: base, reason: networkReason(error) ?? "network error" },
    options,
  );
}
