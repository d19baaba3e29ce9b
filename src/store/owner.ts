import Database from "better-sqlite3";

/**
 * One vmbot per store. The owner holds an OS-level lock (SQLite's own fcntl lock, on a small
 * companion file next to the store) for as long as it runs: a second process on the same store
 * cannot take it and refuses to start, and the kernel drops it when the owner dies, however it
 * dies, so a stale lock never blocks a restart. The store itself stays readable by other
 * programs (a backup, `sqlite3` for an operator) while the bot runs.
 */
export class StoreOwnedError extends Error {
  override name = "StoreOwnedError";
}

export interface StoreOwnership {
  /** The lock file's path. */
  readonly path: string;
  release(): void;
}

/** The lock file of the store at `storePath`. */
export const ownerLockPath = (storePath: string) => `${storePath}-owner`;

const BUSY = new Set(["SQLITE_BUSY", "SQLITE_LOCKED"]);

/**
 * Takes the store's lock, or throws StoreOwnedError naming the store when another process (or
 * another open store in this one) holds it.
 */
export function claimStore(storePath: string, pid = process.pid): StoreOwnership {
  const path = ownerLockPath(storePath);
  const db = new Database(path);
  try {
    db.pragma("busy_timeout = 0");
    // In exclusive locking mode the first write takes SQLite's EXCLUSIVE (fcntl write) lock on
    // the file and keeps it until the connection closes: this process's life.
    db.pragma("locking_mode = EXCLUSIVE");
    db.exec(
      "CREATE TABLE IF NOT EXISTS owner (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER, since TEXT)",
    );
    db.prepare("INSERT OR REPLACE INTO owner (id, pid, since) VALUES (1, ?, ?)").run(
      pid,
      new Date().toISOString(),
    );
  } catch (error) {
    db.close();
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && BUSY.has(code)) {
      throw new StoreOwnedError(
        `another vmbot process is using the store ${storePath} (it holds the lock on ${path}). One store serves one bot: stop the other one, or give this one its own VMBOT_DB.`,
        { cause: error },
      );
    }
    throw error;
  }
  return {
    path,
    release() {
      if (db.open) db.close();
    },
  };
}
