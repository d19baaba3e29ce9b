/** sys/health and sys/seal-status. */
import { type RecordedRequest } from "../http.js";
import { VaultModel } from "./model.js";
import { type Reply } from "./replies.js";

function healthBody(model: VaultModel): Record<string, unknown> {
  const initialized = model.nodeState !== "uninitialized";
  const sealed = model.sealed || !initialized;
  const standby =
    sealed || model.nodeState === "standby" || model.nodeState === "performance-standby";
  const body: Record<string, unknown> = {
    initialized,
    sealed,
    standby,
    performance_standby: !sealed && model.nodeState === "performance-standby",
    replication_performance_mode: sealed ? "unknown" : "disabled",
    replication_dr_mode: sealed
      ? "unknown"
      : model.nodeState === "dr-secondary"
        ? "secondary"
        : "disabled",
    server_time_utc: Math.floor(model.nowMs / 1000),
    version: model.version,
    enterprise: false,
  };
  if (!sealed) {
    body.cluster_name = model.clusterName;
    body.cluster_id = model.clusterId;
  }
  body.echo_duration_ms = 0;
  body.clock_skew_ms = 0;
  body.replication_primary_canary_age_ms = 0;
  return body;
}

/** `sys/health` (http/sys_health.go): the status code comes from the state and the query. */
export function health(model: VaultModel, req: RecordedRequest): Reply {
  if (req.method !== "GET" && req.method !== "HEAD") return { status: 405, body: { errors: [] } };
  const codes = {
    uninitcode: 501,
    sealedcode: 503,
    standbycode: 429,
    activecode: 200,
    drsecondarycode: 472,
    performancestandbycode: 473,
  };
  for (const field of Object.keys(codes) as (keyof typeof codes)[]) {
    const raw = req.query.get(field);
    if (raw === null) continue;
    if (!/^-?\d+$/.test(raw)) return { status: 400, body: { errors: [] } };
    codes[field] = Number(raw);
  }
  const flag = (name: string): boolean =>
    ["1", "t", "T", "true", "TRUE", "True"].includes(req.query.get(name) ?? "");
  const body = healthBody(model);
  let status = codes.activecode;
  if (model.nodeState === "uninitialized") status = codes.uninitcode;
  else if (model.sealed) status = codes.sealedcode;
  else if (model.nodeState === "dr-secondary") status = codes.drsecondarycode;
  else if (model.nodeState === "performance-standby") {
    if (!flag("perfstandbyok")) status = codes.performancestandbycode;
  } else if (model.nodeState === "standby") {
    if (!flag("standbyok")) status = codes.standbycode;
  }
  if (req.method === "HEAD") return { status, headers: { "content-type": "application/json" } };
  return { status, body };
}

/** `sys/seal-status`: unauthenticated, answered sealed or not. */
export function sealStatus(model: VaultModel): Reply {
  const initialized = model.nodeState !== "uninitialized";
  const sealed = model.sealed || !initialized;
  const body: Record<string, unknown> = {
    type: "shamir",
    initialized,
    sealed,
    t: 1,
    n: 1,
    progress: 0,
    nonce: "",
    version: model.version,
    build_date: "2025-09-24T13:19:59Z",
    migration: false,
    recovery_seal: false,
    storage_type: "inmem",
  };
  if (!sealed) {
    body.cluster_name = model.clusterName;
    body.cluster_id = model.clusterId;
  }
  return { status: 200, body };
}
