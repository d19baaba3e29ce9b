import { z } from "zod";
import type { AsyncHomes } from "../async.js";
import { HashRowSchema } from "../homes.js";
import { guardWrite, type Runner } from "./pool.js";

const RowSchema = z.object({ user_id: z.string() });

/** Who has opened vmbot's Home tab (see ../homes.ts), shared by every replica. */
export function createPostgresHomes(pool: Runner, clock: () => Date): AsyncHomes {
  return {
    async opened(user) {
      await guardWrite(`remember the Home of ${user}`, () =>
        pool.query(
          "INSERT INTO homes (user_id, opened_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
          [user, clock().toISOString()],
        ),
      );
    },
    async has(user) {
      const { rowCount } = await pool.query("SELECT 1 FROM homes WHERE user_id = $1", [user]);
      return (rowCount ?? 0) > 0;
    },
    async list() {
      const { rows } = await pool.query("SELECT user_id FROM homes ORDER BY seq");
      return rows.map((row) => RowSchema.parse(row).user_id);
    },
    async viewHash(user) {
      const { rows } = await pool.query("SELECT view_hash FROM homes WHERE user_id = $1", [user]);
      return HashRowSchema.parse(rows[0] ?? {}).view_hash ?? undefined;
    },
    async published(user, hash) {
      await guardWrite(`record the Home of ${user}`, () =>
        pool.query("UPDATE homes SET view_hash = $1 WHERE user_id = $2", [hash, user]),
      );
    },
  };
}
