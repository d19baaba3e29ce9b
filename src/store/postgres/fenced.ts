import type pg from "pg";
import type { Leader } from "./leader.js";
import type { Runner } from "./pool.js";

/** A statement that only reads, taking no lock: it runs on the pool, as any replica's would. */
const READ = /^\s*SELECT\b/i;
const LOCKS = /\bFOR\s+(UPDATE|SHARE|NO\s+KEY\s+UPDATE|KEY\s+SHARE)\b/i;

/** What a refused statement would have done, for the FencedError: its first words. */
const described = (text: string) =>
  `write to the store (${text.trim().split(/\s+/).slice(0, 3).join(" ")})`;

/**
 * The led work's runner: every write, and every transaction, runs through the leader's fence
 * (leader.ts), in one transaction that first checks this replica's epoch is still the current
 * one; a replica that lost the lead, whether it knows yet or not, writes nothing (FencedError).
 * Reads run on the pool.
 */
export function fencedRunner(pool: pg.Pool, leader: Pick<Leader, "fenced">): Runner {
  return {
    query: (text, values) =>
      READ.test(text) && !LOCKS.test(text)
        ? pool.query(text, values)
        : leader.fenced(described(text), (client) => client.query(text, values)),
    transaction: (work) => leader.fenced("change the store", work),
  };
}
