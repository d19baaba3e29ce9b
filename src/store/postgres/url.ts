import { z } from "zod";

/**
 * A PostgreSQL connection string as VMBOT_DB takes it: `postgres://user:password@host:5432/db`,
 * with libpq's `sslmode` (disable, prefer, require, verify-ca, verify-full) and vmbot's own
 * `pool_max` (connections per replica, 10 unless said) in its query.
 */

const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const;
const DEFAULT_POOL_MAX = 10;

export interface PostgresTarget {
  /** The connection string for the driver, vmbot's own settings taken out. */
  connectionString: string;
  /** The most connections this replica holds open at once. */
  poolMax: number;
  /** The connection string with its password replaced: safe to log or show. */
  shown: string;
  /** The password, when the string holds one: for the log redactor. */
  password: string | undefined;
}

/** Whether VMBOT_DB names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(text: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(text.trim());
}

/** The connection string with its password (after the user, or as `password=`) replaced by `***`. */
export function hidePassword(url: URL): string {
  const copy = new URL(url.toString());
  if (copy.password !== "") copy.password = "***";
  if (copy.searchParams.has("password")) copy.searchParams.set("password", "***");
  return copy.toString();
}

/**
 * Reads a PostgreSQL connection string, or throws an error in words for an operator (never
 * quoting the password).
 */
export function parsePostgresUrl(text: string): PostgresTarget {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new Error(
      "is not a connection string PostgreSQL takes; write it as postgres://user:password@host:5432/database",
    );
  }
  const problems: string[] = [];
  if (url.hostname === "" && url.searchParams.get("host") === null) {
    problems.push("names no host");
  }
  if (url.pathname.replace(/^\//, "") === "") problems.push("names no database after the host");
  const sslmode = url.searchParams.get("sslmode");
  if (sslmode !== null && !(SSL_MODES as readonly string[]).includes(sslmode)) {
    problems.push(`has sslmode=${sslmode}; PostgreSQL knows ${SSL_MODES.join(", ")}`);
  }
  const rawMax = url.searchParams.get("pool_max");
  const max = z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .safeParse(rawMax ?? DEFAULT_POOL_MAX);
  if (!max.success) problems.push(`has pool_max=${rawMax ?? ""}; it takes a whole number 1-100`);
  if (problems.length > 0) {
    throw new Error(`(${hidePassword(url)}) ${problems.join("; ")}`);
  }
  url.searchParams.delete("pool_max");
  return {
    connectionString: url.toString(),
    poolMax: max.success ? max.data : DEFAULT_POOL_MAX,
    shown: hidePassword(url),
    password:
      url.password === ""
        ? (url.searchParams.get("password") ?? undefined)
        : decodeURIComponent(url.password),
  };
}

/** Why VMBOT_DB, naming a PostgreSQL database, cannot be used as written; undefined when it can. */
export function postgresUrlProblem(text: string): string | undefined {
  if (!isPostgresUrl(text)) return undefined;
  try {
    parsePostgresUrl(text);
    return undefined;
  } catch (error) {
    return `must be a SQLite file or a PostgreSQL connection string; this one ${(error as Error).message}`;
  }
}
