import type pg from "pg";
import { inTransaction } from "./pool.js";

/**
 * The PostgreSQL store's schema migrations, applied in order; `schema_migrations` records each
 * one, when and by which replica. Append new ones; never edit one that has shipped. The first
 * is the SQLite store's schema as its 14 migrations (src/store/migrations.ts) left it, in
 * PostgreSQL's dialect; a migration appended there is appended here too.
 *
 * Times are ISO 8601 text, as in SQLite: every replica writes them with its clock's
 * toISOString, so they sort as text; the columns sorted on compare bytes (COLLATE "C"), as
 * SQLite does, whatever the database's locale. JSON is jsonb. `seq` keeps the order rows were written in
 * (SQLite's rowid).
 */
export const POSTGRES_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE requests (
    id                TEXT COLLATE "C" PRIMARY KEY,
    kind              TEXT NOT NULL DEFAULT 'create',
    status            TEXT NOT NULL,
    requester         TEXT NOT NULL,
    spec              JSONB NOT NULL,
    notes             JSONB NOT NULL DEFAULT '[]',
    channel           TEXT NOT NULL,
    message_ts        TEXT,
    pipeline_id       BIGINT,
    pipeline_url      TEXT,
    error             TEXT,
    submission_key    TEXT NOT NULL UNIQUE,
    created_at        TEXT COLLATE "C" NOT NULL,
    updated_at        TEXT COLLATE "C" NOT NULL,
    review            JSONB,
    decision          JSONB,
    address           TEXT,
    revision          INTEGER NOT NULL DEFAULT 0,
    rendered_revision INTEGER NOT NULL DEFAULT 0,
    rendered_hash     TEXT,
    stage_at          TEXT,
    state_name        TEXT,
    failure           JSONB,
    stage_times       JSONB,
    seq               BIGINT GENERATED ALWAYS AS IDENTITY
  );
  CREATE INDEX requests_status ON requests (status);
  CREATE INDEX requests_behind ON requests (updated_at) WHERE rendered_revision < revision;
  CREATE INDEX requests_vm_name ON requests ((spec ->> 'name'), created_at);

  CREATE TABLE audit_log (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id TEXT REFERENCES requests (id),
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    detail     JSONB NOT NULL DEFAULT '{}',
    at         TEXT COLLATE "C" NOT NULL
  );
  CREATE INDEX audit_log_request ON audit_log (request_id);

  CREATE TABLE effects (
    subject       TEXT NOT NULL,
    step          TEXT NOT NULL,
    state         TEXT NOT NULL,
    intent        JSONB NOT NULL DEFAULT '{}',
    result        JSONB,
    intended_at   TEXT COLLATE "C" NOT NULL,
    done_at       TEXT,
    claimed_by    TEXT,
    claimed_until TEXT COLLATE "C",
    seq           BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (subject, step)
  );
  CREATE INDEX effects_state ON effects (state);

  CREATE TABLE heartbeat (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at TEXT NOT NULL
  );

  CREATE TABLE deliveries (
    key     TEXT COLLATE "C" PRIMARY KEY,
    seen_at TEXT COLLATE "C" NOT NULL
  );
  CREATE INDEX deliveries_seen ON deliveries (seen_at);

  CREATE TABLE vms (
    name        TEXT COLLATE "C" PRIMARY KEY,
    request_id  TEXT NOT NULL,
    owner       TEXT NOT NULL,
    spec        JSONB NOT NULL,
    state_name  TEXT,
    address     TEXT,
    pipeline_id BIGINT,
    approved_by TEXT,
    created_at  TEXT COLLATE "C" NOT NULL,
    lease_until TEXT,
    status      TEXT NOT NULL DEFAULT 'live',
    status_note TEXT,
    checked_at  TEXT
  );
  CREATE INDEX vms_owner ON vms (owner, created_at);

  CREATE TABLE states_seen (
    name    TEXT COLLATE "C" PRIMARY KEY,
    seen_at TEXT COLLATE "C" NOT NULL
  );

  CREATE TABLE approvals (
    request_id  TEXT NOT NULL,
    plan_job_id BIGINT NOT NULL,
    user_id     TEXT COLLATE "C" NOT NULL,
    groups      JSONB NOT NULL DEFAULT '[]',
    at          TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (request_id, plan_job_id, user_id)
  );

  CREATE TABLE leadership (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    epoch      BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
  );
  `,
  // The approvals a request's message shows (the policy's tally), kept with the request.
  `ALTER TABLE requests ADD COLUMN approvals JSONB`,
  // Who has opened vmbot's Home tab (src/store/homes.ts); \`seq\` keeps the order they came in.
  `
  CREATE TABLE homes (
    user_id   TEXT PRIMARY KEY,
    opened_at TEXT NOT NULL,
    seq       BIGINT GENERATED ALWAYS AS IDENTITY
  )
  `,
  // Each replica's liveness (replicas.ts): a claim whose replica has died is taken over at once.
  `
  CREATE TABLE replicas (
    name        TEXT PRIMARY KEY,
    alive_until BIGINT NOT NULL
  )
  `,
  // The hash of the Home Slack last took for each person (src/store/homes.ts).
  `ALTER TABLE homes ADD COLUMN view_hash TEXT`,
];

/**
 * The advisory lock every replica takes to migrate: the first one applies what is missing, the
 * others wait for it and find nothing left. (Any fixed 64-bit number, vmbot's own.)
 */
const MIGRATION_LOCK = 0x766d626f74_01n;

/**
 * Applies the migrations not yet recorded, all in one transaction under the advisory lock, so
 * that of several replicas starting at once exactly one migrates. Throws when the database's
 * schema is newer than this vmbot.
 */
export async function migratePostgres(
  pool: pg.Pool,
  replica: string,
  clock: () => Date,
  migrations: readonly string[] = POSTGRES_MIGRATIONS,
): Promise<{ applied: number; version: number }> {
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK.toString()]);
    // Made only when missing: even with IF NOT EXISTS, CREATE TABLE asks for CREATE on the
    // schema, which a role running on a schema its owner migrated does not have.
    const { rows: found } = await client.query<{ table: string | null }>(
      "SELECT to_regclass('schema_migrations')::text AS table",
    );
    if (found[0]?.table == null) {
      await client.query(`
        CREATE TABLE schema_migrations (
          version    INTEGER PRIMARY KEY,
          applied_at TEXT NOT NULL,
          applied_by TEXT NOT NULL
        )`);
    }
    const { rows } = await client.query<{ version: number | null }>(
      "SELECT max(version) AS version FROM schema_migrations",
    );
    const current = rows[0]?.version ?? 0;
    if (current > migrations.length) {
      throw new Error(
        `The database schema is version ${current}, newer than this vmbot knows (${migrations.length}): upgrade vmbot or use another VMBOT_DB.`,
      );
    }
    const pending = migrations.slice(current);
    for (const [index, sql] of pending.entries()) {
      await client.query(sql);
      await client.query(
        "INSERT INTO schema_migrations (version, applied_at, applied_by) VALUES ($1, $2, $3)",
        [current + index + 1, clock().toISOString(), replica],
      );
    }
    return { applied: pending.length, version: migrations.length };
  });
}
