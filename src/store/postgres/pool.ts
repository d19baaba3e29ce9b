import pg from "pg";
import { StoreWriteError } from "../store.js";
import type { PostgresTarget } from "./url.js";

/**
 * The connections of one replica to the shared PostgreSQL database, and the two ways the store
 * uses them: one statement, or one transaction on one connection.
 */

/**
 * The driver's types, but 8-byte integers (BIGINT, BIGSERIAL, count(*)) read as numbers:
 * pipeline IDs and audit IDs stay far below 2^53. Set on this pool alone.
 */
const types: pg.CustomTypesConfig = {
  getTypeParser: (id, format) =>
    id === pg.types.builtins.INT8 && format !== "binary"
      ? (value: string) => Number(value)
      : (pg.types.getTypeParser(id, format) as unknown),
};

export interface PoolOptions {
  /** Shown in pg_stat_activity: which replica holds a connection. */
  applicationName?: string;
  /** How long a new connection may take before the store gives up on it. */
  connectTimeoutMs?: number;
  /** How long the server lets a transaction wait on this replica before ending its session. */
  idleInTransactionMs?: number;
}

/**
 * The store's transactions wait on nothing but their own statements, so one left idle is a
 * replica that stopped mid-transaction (paused, or its host cut off). The server ends its session
 * after this long, and with it the row locks it held (the leader's lease row among them), so a
 * paused leader cannot keep another replica from taking the lead.
 */
export const IDLE_IN_TRANSACTION_MS = 10_000;

export function createPool(target: PostgresTarget, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max: target.poolMax,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    application_name: options.applicationName ?? "vmbot",
    idle_in_transaction_session_timeout: options.idleInTransactionMs ?? IDLE_IN_TRANSACTION_MS,
    types,
  });
  // A connection the server ends while idle in the pool (a restart, a failover): the pool drops
  // it and opens another on the next query; it must not end the process.
  pool.on("error", () => undefined);
  return pool;
}

/** The part of a pool or a client the store's statements need. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/**
 * Where the store's parts run their statements: the pool (each statement and transaction as it
 * comes), or the leader's fence (each one in a transaction that checks the epoch, leader.ts).
 */
export interface Runner extends Queryable {
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

/** The pool as a runner. */
export function poolRunner(pool: pg.Pool): Runner {
  return {
    query: (text, values) => pool.query(text, values),
    transaction: (work) => inTransaction(pool, work),
  };
}

/** Why PostgreSQL refused, in words for an operator, from its SQLSTATE or the socket's error. */
export function postgresProblem(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (message.startsWith("Connection terminated")) {
    return "the connection to the database server was lost";
  }
  if (typeof code !== "string") return message;
  const path = (error as { path?: unknown }).path;
  if ((code === "ENOENT" || code === "EACCES") && typeof path === "string") {
    // A certificate or key the connection string names (sslrootcert, sslcert, sslkey).
    return `the file ${path} named in the connection string cannot be read (${code})`;
  }
  if (code === "53100") return "the database server's disk is full";
  if (code === "25006") return "the database is read-only (a standby, or set read-only)";
  if (code === "42501") return `vmbot's database user lacks a privilege (${message})`;
  if (code === "57P01" || code === "57P02" || code === "57P03")
    return "the database server is shutting down or starting";
  if (code === "53300") return "the database server has no connection left for vmbot";
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "ETIMEDOUT")
    return `the database server cannot be reached (${code})`;
  return `${message} (${code})`;
}

/** Whether `error` is PostgreSQL's or the connection's, rather than a mistake in a value. */
function isDatabaseError(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return true;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return true;
  return (
    error instanceof Error && /Connection terminated|timeout exceeded|pool/i.test(error.message)
  );
}

/** Runs a write, turning the database's refusal into a StoreWriteError that says what and why. */
export async function guardWrite<T>(what: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isDatabaseError(error)) {
      throw new StoreWriteError(what, postgresProblem(error), { cause: error });
    }
    throw error;
  }
}

/** Runs `work` in one transaction on one connection: committed when it resolves. */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  /** Opens the transaction: `BEGIN`, or `BEGIN` and more in the same round trip. */
  begin: (client: pg.PoolClient) => Promise<unknown> = (client) => client.query("BEGIN"),
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A connection lost while checked out is reported as an 'error' event as well as through the
  // query that was running: the pool listens only to idle connections, so this one must.
  const lost = (error: Error) => {
    broken = error;
  };
  client.on("error", lost);
  try {
    await begin(client);
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch((rollback: unknown) => {
      broken = rollback as Error;
    });
    throw error;
  } finally {
    client.off("error", lost);
    client.release(broken);
  }
}
