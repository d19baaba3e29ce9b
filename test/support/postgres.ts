import { afterAll, beforeAll, describe, inject } from "vitest";
import { createDatabase } from "./postgres-server.js";

/**
 * `describe` for tests that need PostgreSQL: without the run's server (test/setup/postgres.ts)
 * they are skipped with the reason in the title; with `CI=true` a missing server fails the file
 * (`.ci/run` installs it).
 */
export function describeWithPostgres(name: string, fn: () => void): void {
  const postgres = inject("postgres");
  if ("url" in postgres) {
    describe(name, fn);
    return;
  }
  if (process.env.CI === "true") {
    throw new Error(`${name}: ${postgres.missing}; in CI it is required`);
  }
  describe.skip(`${name} [skipped: ${postgres.missing}]`, fn);
}

/**
 * A database of its own on the run's server, made now: its connection string, and how to drop
 * it (connections still open are ended). For a bot the harness starts on PostgreSQL.
 */
export async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const postgres = inject("postgres");
  if (!("url" in postgres)) throw new Error(`VMBOT_TEST_DB=postgres: ${postgres.missing}`);
  return createDatabase(postgres.url);
}

/**
 * A database of this file's own on the run's server, created before its tests and dropped after
 * (connections still open are ended). Call inside `describeWithPostgres`; read `url()` in a test
 * or hook.
 */
export function useDatabase(): { url: () => string } {
  let database: { url: string; drop: () => Promise<void> } | undefined;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });
  return {
    url() {
      if (database === undefined) throw new Error("the file's database is made in beforeAll");
      return database.url;
    },
  };
}
