import type Database from "better-sqlite3";
import { z } from "zod";
import { guardWrite } from "./sqlite-checks.js";

/**
 * The people who have opened vmbot's Home tab: only their Home is published again when
 * something they see changes (Slack shows nothing to someone who never opened it), and the list
 * outlives a restart.
 */
export interface Homes {
  /** Records that `user` opened their Home; opening it again changes nothing new. */
  opened(user: string): void;
  has(user: string): boolean;
  /** Everyone with a Home, in the order they first opened it. */
  list(): string[];
  /**
   * The hash Slack gave the Home it last took for `user` (from any replica): a publish sends it,
   * and Slack refuses one that another publish has overtaken since (`hash_conflict`).
   */
  viewHash(user: string): string | undefined;
  /** Records the hash Slack gave the Home it has just taken for `user`. */
  published(user: string, hash: string): void;
}

export const HOMES_MIGRATION = `
  CREATE TABLE homes (
    user_id   TEXT PRIMARY KEY,
    opened_at TEXT NOT NULL
  );
  `;

const RowSchema = z.object({ user_id: z.string() });
export const HashRowSchema = z.object({ view_hash: z.string().nullish() });

/** The hash of the Home Slack last took for each person (`Homes.viewHash`). */
export const HOME_HASH_MIGRATION = "ALTER TABLE homes ADD COLUMN view_hash TEXT";

export function createSqliteHomes(db: Database.Database, clock: () => Date): Homes {
  const insert = db.prepare("INSERT OR IGNORE INTO homes (user_id, opened_at) VALUES (?, ?)");
  const selectOne = db.prepare("SELECT user_id FROM homes WHERE user_id = ?");
  const selectAll = db.prepare("SELECT user_id FROM homes ORDER BY rowid");
  const selectHash = db.prepare("SELECT view_hash FROM homes WHERE user_id = ?");
  const updateHash = db.prepare("UPDATE homes SET view_hash = ? WHERE user_id = ?");
  return {
    opened(user) {
      guardWrite(`remember the Home of ${user}`, () => insert.run(user, clock().toISOString()));
    },
    has: (user) => selectOne.get(user) !== undefined,
    list: () => selectAll.all().map((row) => RowSchema.parse(row).user_id),
    viewHash: (user) => HashRowSchema.parse(selectHash.get(user) ?? {}).view_hash ?? undefined,
    published(user, hash) {
      guardWrite(`record the Home of ${user}`, () => updateHash.run(hash, user));
    },
  };
}
