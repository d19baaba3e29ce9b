import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, inject } from "vitest";

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

/** The run's server's connection string with another database in it. */
function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * A database of its own on the run's server, made now: its connection string, and how to drop
 * it (connections still open are ended). For a bot the harness starts on PostgreSQL.
 */
export async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const postgres = inject("postgres");
  if (!("url" in postgres)) throw new Error(`VMBOT_TEST_DB=postgres: ${postgres.missing}`);
  const name = `vmbot_${randomBytes(6).toString("hex")}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE DATABASE ${name}`);
  return {
    url: withDatabase(postgres.url, name),
    drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * A database of this file's own on the run's server, created before its tests and dropped after
 * (connections still open are ended). Call inside `describeWithPostgres`; read `url()` in a test
 * or hook.
 */
export function useDatabase(): { url: () => string } {
  let url: string | undefined;
  let name: string | undefined;
  const admin = () => {
    const postgres = inject("postgres");
    if (!("url" in postgres)) throw new Error(postgres.missing);
    return { server: postgres.url, client: new pg.Client({ connectionString: postgres.url }) };
  };
  beforeAll(async () => {
    const { server, client } = admin();
    name = `vmbot_${randomBytes(6).toString("hex")}`;
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${name}`);
    } finally {
      await client.end();
    }
    url = withDatabase(server, name);
  });
  afterAll(async () => {
    if (name === undefined) return;
    const { client } = admin();
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await client.end();
    }
  });
  return {
    url() {
      if (url === undefined) throw new Error("the file's database is made in beforeAll");
      return url;
    },
  };
}
