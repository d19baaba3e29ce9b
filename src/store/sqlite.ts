import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { MIGRATIONS } from "./migrations.js";
import { claimStore, type StoreOwnership } from "./owner.js";
import { createSqliteApprovals } from "./approvals.js";
import { createSqliteHomes } from "./homes.js";
import { createSqliteInventory } from "./inventory.js";
import { createSqliteAudit } from "./sqlite-audit.js";
import { checkIntegrity, createWriteProbe } from "./sqlite-checks.js";
import { createSqliteEffects } from "./sqlite-effects.js";
import {
  createSqliteDestroyRequest,
  createSqliteTransitionOnLiveVm,
  createSqliteVmRequest,
} from "./sqlite-guarded.js";
import {
  createRowReader,
  createSqliteRequestReads,
  createSqliteRequestWrites,
} from "./sqlite-requests.js";
import type { Store } from "./store.js";

/** Applies pending migrations inside one transaction each. */
function migrate(db: Database.Database): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(
      `The database schema is version ${current}, newer than this vmbot knows (${MIGRATIONS.length}): upgrade vmbot or use another VMBOT_DB.`,
    );
  }
  MIGRATIONS.slice(current).forEach((sql, index) => {
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${current + index + 1}`);
    })();
  });
}

export interface SqliteStoreOptions {
  clock?: () => Date;
  /**
   * Opens an existing store to read it (tooling, tests) while its bot runs: no lock, no
   * migration, and every write refused.
   */
  readOnly?: boolean;
}

/**
 * How long a write waits for a lock another program holds. One bot owns the store, so only an
 * outside program (an operator's open transaction) can hold it; better-sqlite3 waits on the event
 * loop, and Slack wants its answers within three seconds.
 */
const BUSY_TIMEOUT_MS = 1_000;

/** The database file, opened, checked and migrated, or an error that says why it cannot be. */
function openDatabase(path: string, readOnly: boolean): Database.Database {
  if (readOnly) return new Database(path, { readonly: true, fileMustExist: true });
  const db = new Database(path);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    if (path !== ":memory:") checkIntegrity(db, path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    migrate(db);
    return db;
  } catch (error) {
    db.close();
    const code = (error as { code?: unknown }).code;
    if (
      code === "SQLITE_NOTADB" ||
      (typeof code === "string" && code.startsWith("SQLITE_CORRUPT"))
    ) {
      throw new Error(
        `the store ${path} is damaged (${(error as Error).message}). Restore it from a backup, or move it aside to start with an empty store.`,
        { cause: error },
      );
    }
    throw error;
  }
}

/**
 * Opens (and creates on first run) the SQLite store at `path`; `:memory:` for a throwaway one.
 * A store on a file belongs to this process until it is closed: a second open of the same file
 * (here or in another process) throws StoreOwnedError. A damaged file, or one that cannot take
 * a write, is refused.
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const clock = options.clock ?? (() => new Date());
  const readOnly = options.readOnly === true;
  if (path !== ":memory:" && !readOnly) mkdirSync(dirname(path), { recursive: true });
  const ownership: StoreOwnership | undefined =
    path === ":memory:" || readOnly ? undefined : claimStore(path);
  let db: Database.Database;
  try {
    db = openDatabase(path, readOnly);
  } catch (error) {
    ownership?.release();
    throw error;
  }
  const probe = createWriteProbe(db, clock, BUSY_TIMEOUT_MS);
  if (!readOnly) {
    const first = probe();
    if (!first.ok) {
      db.close();
      ownership?.release();
      throw new Error(`${first.reason} (${path})`);
    }
  }

  const effects = createSqliteEffects(db, clock);
  const log = createSqliteAudit(db, clock);
  // One reader for the reads and the writes, so a review is parsed once whichever read it.
  const rows = createRowReader();
  const reads = createSqliteRequestReads(db, rows);
  const writes = createSqliteRequestWrites(db, clock, { ...effects, ...log }, rows);
  const inventory = createSqliteInventory(db, clock);
  return {
    inventory,
    approvals: createSqliteApprovals(db),
    homes: createSqliteHomes(db, clock),
    ...reads,
    ...writes,
    createVmRequest: createSqliteVmRequest(db, { ...reads, ...writes }, inventory),
    createDestroyRequest: createSqliteDestroyRequest(db, { ...reads, ...writes }),
    transitionOnLiveVm: createSqliteTransitionOnLiveVm(db, writes),
    ...effects,
    ...log,
    writable: probe,
    isOpen: () => db.open,
    close() {
      if (db.open) db.close();
      ownership?.release();
    },
  };
}
