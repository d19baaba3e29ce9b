import { join } from "node:path";
import { asAsyncStore, type AsyncStore } from "../../src/store/async.js";
import { openPostgresStore } from "../../src/store/postgres/store.js";
import { isPostgresUrl } from "../../src/store/postgres/url.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { freshDatabase } from "./postgres.js";

/**
 * The store of a bot a test runs as a process, on the run's engine: a SQLite file in the test's
 * folder, or with VMBOT_TEST_DB=postgres (`npm run test:postgres`) a fresh PostgreSQL database
 * on the run's server. A test reads and seeds it through the store's interface, the same on
 * either engine.
 */
export interface StoreLocation {
  /** What VMBOT_DB says: the SQLite file's path, or the database's connection string. */
  db: string;
  /**
   * The bot's environment where a test kills it and starts it again on this store. On PostgreSQL
   * the killed replica still holds the lead until its lease runs out, and what it claimed until
   * its liveness does (LEADER_TTL, 15 s unless said): the shortest lease, 3 s, lets the bot
   * started again lead soon. SQLite's one process needs nothing.
   */
  restartEnv: Record<string, string>;
  /** Drops the PostgreSQL database (its connections ended); a SQLite file goes with its folder. */
  drop(): Promise<void>;
}

/** Where a bot's store is to be: `file` in `dir`, or a database of its own on PostgreSQL. */
export async function storeLocation(dir: string, file = "vmbot.sqlite"): Promise<StoreLocation> {
  if (process.env.VMBOT_TEST_DB === "postgres") {
    const database = await freshDatabase();
    return { db: database.url, restartEnv: { LEADER_TTL: "3s" }, drop: database.drop };
  }
  return { db: join(dir, file), restartEnv: {}, drop: () => Promise.resolve() };
}

let readers = 0;

/**
 * Opens the store at `db` as the bot does, a bot may be running on it: a SQLite file read-only
 * unless `write` (a seed before the bot starts, or a read after it stopped), a PostgreSQL
 * database as one more replica's (its migrations applied when none has yet).
 */
export async function openStoreAt(
  db: string,
  options: { write?: boolean } = {},
): Promise<AsyncStore> {
  if (isPostgresUrl(db)) {
    readers += 1;
    return openPostgresStore(db, { replica: `test-store-${process.pid}-${readers}` });
  }
  return asAsyncStore(openSqliteStore(db, options.write === true ? {} : { readOnly: true }));
}

/** Runs `use` on the store at `db` (see openStoreAt), closing it after. */
export async function withStoreAt<T>(
  db: string,
  use: (store: AsyncStore) => T | Promise<T>,
  options: { write?: boolean } = {},
): Promise<T> {
  const store = await openStoreAt(db, options);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}
