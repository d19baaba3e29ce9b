/** Vault's defaults and texts, and the small helpers its answers are built with. */
import { randomBytes } from "node:crypto";

export const HOURS_768 = 768 * 3600;
export const DEFAULT_VERSION = "1.20.4";
/** KV v2 keeps 10 versions when neither the mount nor the key sets `max_versions`. */
export const KV_MAX_VERSIONS = 10;

export const PERMISSION_DENIED = "permission denied";
/** An unknown, revoked or expired token (multierror's text, as Vault sends it). */
export const INVALID_TOKEN = "2 errors occurred:\n\t* permission denied\n\t* invalid token\n\n";
/** A valid token whose policies do not grant the path. */
export const POLICY_DENIED = "1 error occurred:\n\t* permission denied\n\n";
export const SEALED = "Vault is sealed";

// ---------------------------------------------------------------------------------------------
// Small helpers

/** Base62, as Vault's token and accessor IDs are. */
function base62(length: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length)) {
      if (byte < 248 && out.length < length) out += alphabet.charAt(byte % 62);
    }
  }
  return out;
}

export const newTokenId = (): string => `hvs.${base62(24)}`;
export const newAccessor = (): string => base62(24);

/** Go's `time.Time` JSON form (RFC 3339 with nanoseconds, trailing zeros dropped), in UTC. */
export function goTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2024-01-02T03:04:05.678Z
  const [seconds, fraction = ""] = iso.slice(0, -1).split(".");
  const trimmed = fraction.replace(/0+$/, "");
  return `${seconds ?? ""}${trimmed === "" ? "" : `.${trimmed}`}Z`;
}

/** Go's `time.Duration` String() for whole seconds: `0s`, `45s`, `10m0s`, `1h0m0s`. */
export function goDuration(seconds: number): string {
  const total = Math.max(0, Math.trunc(seconds));
  if (total === 0) return "0s";
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/**
 * `parseutil.ParseDurationSecond`: a number of seconds, a numeric string, or a Go duration with
 * `d` allowed (`90s`, `30m`, `1h30m`, `2d`). Undefined for anything else.
 */
export function parseDurationSeconds(raw: unknown): number | undefined {
  if (typeof raw === "number") return Number.isFinite(raw) ? Math.trunc(raw) : undefined;
  if (typeof raw !== "string") return undefined;
  const text = raw.trim();
  if (text === "") return 0;
  if (/^-?\d+$/.test(text)) return Number(text);
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
  let total = 0;
  let rest = text;
  while (rest !== "") {
    const part = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)/.exec(rest);
    if (!part) return undefined;
    total += Number(part[1]) * (units[part[2] ?? ""] ?? 0);
    rest = rest.slice(part[0].length);
  }
  return Math.trunc(total);
}

/** `policyutil.SanitizePolicies`: trimmed, unique, sorted, with `default` added. */
export function sanitizePolicies(policies: readonly string[], addDefault: boolean): string[] {
  const set = new Set(policies.map((p) => p.trim()).filter((p) => p !== ""));
  if (addDefault && !set.has("root")) set.add("default");
  return [...set].sort();
}

/** Go encodes a `map[string]interface{}` with its keys sorted, at every depth. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return Object.fromEntries(entries.map(([k, v]) => [k, sortKeys(v)]));
  }
  return value;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Go's `path.Clean` for the request path, as `http.ServeMux` applies it before routing. */
export function cleanPath(path: string): string {
  const out: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  const cleaned = `/${out.join("/")}`;
  return path.endsWith("/") && cleaned !== "/" ? `${cleaned}/` : cleaned;
}
