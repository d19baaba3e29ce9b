import Database from "better-sqlite3";
import { StoreWriteError, type Writable } from "./store.js";

/** Why SQLite refused, in words for an operator, from its error code. */
export function sqliteProblem(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof code !== "string") return message;
  if (code.startsWith("SQLITE_FULL")) return "the disk holding it is full";
  if (code.startsWith("SQLITE_READONLY")) return "its file is read-only";
  if (code.startsWith("SQLITE_CORRUPT") || code.startsWith("SQLITE_NOTADB"))
    return `its file is damaged (${message})`;
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))
    return "another program holds its write lock";
  if (code.startsWith("SQLITE_IOERR")) return `the disk refused a write (${code})`;
  if (code.startsWith("SQLITE_CANTOPEN")) return `its file cannot be opened (${message})`;
  return `${message} (${code})`;
}

/** Runs a write, turning SQLite's refusal into a StoreWriteError that says what and why. */
export function guardWrite<T>(what: string, write: () => T): T {
  try {
    return write();
  } catch (error) {
    if (error instanceof Database.SqliteError) {
      throw new StoreWriteError(what, sqliteProblem(error), { cause: error });
    }
    if (error instanceof TypeError && error.message.includes("not open")) {
      throw new StoreWriteError(what, "the store is closed", { cause: error });
    }
    // Not SQLite's refusal (a bad value, a record that does not parse): not a write problem.
    throw error;
  }
}

/**
 * SQLite's own check of the file's structure, run once at open: a damaged file is refused
 * before anything is read from it or written to it.
 */
export function checkIntegrity(db: Database.Database, path: string): void {
  const rows = db.pragma("quick_check(5)") as { quick_check: string }[];
  const problems = rows
    .map((row) => row.quick_check.replace(/\s+/g, " ").trim())
    .filter((line) => line !== "ok");
  if (problems.length > 0) {
    throw new Error(
      `the store ${path} is damaged (SQLite's check says: ${problems.join("; ")}). Restore it from a backup, or move it aside to start with an empty store.`,
    );
  }
}

/** How long a successful heartbeat write is trusted before the next check writes again. */
const TRUST_MS = 2_000;
/** How long the heartbeat waits for a write lock another program holds. */
const PROBE_BUSY_MS = 200;

/** The store's write probe: one heartbeat row, rewritten at most every TRUST_MS while it works. */
export function createWriteProbe(
  db: Database.Database,
  clock: () => Date,
  busyTimeoutMs: number,
): () => Writable {
  let okAt = Number.NEGATIVE_INFINITY;
  return () => {
    if (!db.open) return { ok: false, reason: "the store is closed" };
    const now = clock();
    if (now.getTime() - okAt < TRUST_MS) return { ok: true };
    try {
      db.pragma(`busy_timeout = ${PROBE_BUSY_MS}`);
      db.prepare(
        "INSERT INTO heartbeat (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at",
      ).run(now.toISOString());
      okAt = now.getTime();
      return { ok: true };
    } catch (error) {
      okAt = Number.NEGATIVE_INFINITY;
      return { ok: false, reason: `the store cannot be written: ${sqliteProblem(error)}` };
    } finally {
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    }
  };
}
