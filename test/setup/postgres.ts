import type { TestProject } from "vitest/node";
import {
  findPostgresBin,
  INSTALL_POSTGRES,
  startPostgresServer,
} from "../support/postgres-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /**
     * The run's PostgreSQL server: a connection string to its `postgres` database as a superuser
     * (test/support/postgres.ts makes each file a database of its own from it), or why there is
     * none.
     */
    postgres: { url: string } | { missing: string };
  }
}

/**
 * Vitest's global setup: when PostgreSQL's server programs are installed, starts a throwaway
 * server for the run (test/support/postgres-server.ts) and stops and removes it after. Without
 * them, says once how to install them; the tests that need it skip (or fail, in CI).
 */
export default async function startPostgres(
  project: TestProject,
): Promise<(() => Promise<void>) | undefined> {
  const bin = findPostgresBin();
  if (bin === undefined) {
    const missing = `PostgreSQL's server programs (initdb, pg_ctl) are not installed: ${INSTALL_POSTGRES}, or put their folder on PATH`;
    project.provide("postgres", { missing });
    if (process.env.CI !== "true") {
      process.stdout.write(`\nThe PostgreSQL store tests are skipped: ${missing}.\n\n`);
    }
    return undefined;
  }
  const server = await startPostgresServer(bin);
  project.provide("postgres", { url: server.url });
  return () => server.stop();
}
