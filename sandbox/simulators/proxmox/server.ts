/** The server: the fake Proxmox VE API on a loopback port, and its drivers. */
import { type ServerResponse } from "node:http";
import { FaultQueue, InFlight, matchesPath, RequestLog, Waits } from "../faults.js";
import { type RecordedRequest, startFakeServer } from "../http.js";
import { apiError, data, injected, type Reply, write } from "./answers.js";
import { authenticate, parseToken } from "./auth.js";
import {
  DEFAULT_NODES,
  fakeNode,
  KNOWN_METHODS,
  nodeStats,
  optionsOf,
  PARAMETERS,
  RESOURCE_TYPES,
} from "./nodes.js";
import {
  type FakeNode,
  type FakeProxmox,
  type FakeProxmoxOptions,
  type InjectedFailure,
  type ProxmoxError,
  type ProxmoxPath,
  type RawAnswer,
  type TokenState,
} from "./types.js";

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
