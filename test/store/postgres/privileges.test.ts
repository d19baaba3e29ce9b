/**
 * The privileges vmbot's database role needs (README, "Running several replicas on
 * PostgreSQL"): with CREATE on the schema it migrates itself; without it, it runs on a schema an
 * owner role migrated, given only the right to read and write the tables.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, beforeEach, expect, it } from "vitest";
import { openPostgresStore } from "../../../src/store/postgres/store.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";

describeWithPostgres("the database role vmbot runs as", () => {
  const database = useDatabase();
  let admin: pg.Client;
  let role: string;

  /** The file's database as `user` (the test server trusts loopback: no password). */
  const as = (user: string) => {
    const url = new URL(database.url());
    url.username = user;
    return url.toString();
  };

  beforeEach(async () => {
    admin = new pg.Client({ connectionString: database.url() });
    await admin.connect();
    // Roles are the server's, not the file's database's: a name of this run's own.
    role = `vmbot_app_${randomBytes(4).toString("hex")}`;
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    await admin.query(
      `GRANT CONNECT ON DATABASE ${new URL(database.url()).pathname.slice(1)} TO ${role}`,
    );
  });
  afterEach(async () => {
    await admin.query(`DROP OWNED BY ${role}`);
    await admin.query(`DROP ROLE ${role}`);
    await admin.end();
  });

  it("runs with only USAGE on the schema and the right to read and write its tables once an owner migrated", async () => {
    const owner = await openPostgresStore(database.url(), { replica: "owner" });
    await owner.close();
    await admin.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
    await admin.query(
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`,
    );
    const store = await openPostgresStore(as(role), { replica: "app" });
    try {
      expect(await store.writable()).toEqual({ ok: true });
      await store.audit({ requestId: null, actor: "U0ALEX", action: "privileges_checked" });
      expect((await store.listAudit()).map((entry) => entry.action)).toContain(
        "privileges_checked",
      );
    } finally {
      await store.close();
    }
  });

  it("says it lacks a privilege when it may neither migrate nor read the tables", async () => {
    await admin.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
    await admin.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    await expect(openPostgresStore(as(role), { replica: "app" })).rejects.toThrow(
      /lacks a privilege/,
    );
  });
});
