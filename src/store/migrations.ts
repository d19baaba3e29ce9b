/**
 * Versioned schema migrations, applied in order; `PRAGMA user_version` records how many ran.
 * Append new ones; never edit one that has shipped.
 */
import { APPROVALS_MIGRATION } from "./approvals.js";
import { HOME_HASH_MIGRATION, HOMES_MIGRATION } from "./homes.js";
import { INVENTORY_MIGRATION, STATES_SEEN_MIGRATION } from "./inventory.js";

export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE requests (
    id             TEXT PRIMARY KEY,
    status         TEXT NOT NULL,
    requester      TEXT NOT NULL,
    spec           TEXT NOT NULL,
    notes          TEXT NOT NULL DEFAULT '[]',
    channel        TEXT NOT NULL,
    message_ts     TEXT,
    pipeline_id    INTEGER,
    pipeline_url   TEXT,
    error          TEXT,
    submission_key TEXT NOT NULL UNIQUE,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
  );
  CREATE INDEX requests_status ON requests (status);

  CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT REFERENCES requests (id),
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT '{}',
    at         TEXT NOT NULL
  );
  CREATE INDEX audit_log_request ON audit_log (request_id);
  `,
  `
  ALTER TABLE requests ADD COLUMN review TEXT;
  ALTER TABLE requests ADD COLUMN decision TEXT;
  `,
  `
  ALTER TABLE requests ADD COLUMN address TEXT;
  `,
  `
  CREATE TABLE effects (
    subject     TEXT NOT NULL,
    step        TEXT NOT NULL,
    state       TEXT NOT NULL,
    intent      TEXT NOT NULL DEFAULT '{}',
    result      TEXT,
    intended_at TEXT NOT NULL,
    done_at     TEXT,
    PRIMARY KEY (subject, step)
  );
  CREATE INDEX effects_state ON effects (state);
  `,
  `
  ALTER TABLE requests ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE requests ADD COLUMN rendered_revision INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE requests ADD COLUMN rendered_hash TEXT;
  CREATE INDEX requests_behind ON requests (updated_at) WHERE rendered_revision < revision;

  CREATE TABLE heartbeat (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at TEXT NOT NULL
  );
  `,
  `
  CREATE TABLE deliveries (
    key     TEXT PRIMARY KEY,
    seen_at TEXT NOT NULL
  );
  CREATE INDEX deliveries_seen ON deliveries (seen_at);
  `,
  `
  ALTER TABLE requests ADD COLUMN stage_at TEXT;
  `,
  `
  ALTER TABLE requests ADD COLUMN state_name TEXT;
  CREATE INDEX requests_vm_name ON requests (json_extract(spec, '$.name'), created_at);
  `,
  INVENTORY_MIGRATION,
  STATES_SEEN_MIGRATION,
  `
  ALTER TABLE requests ADD COLUMN failure TEXT;
  `,
  `
  ALTER TABLE requests ADD COLUMN stage_times TEXT;
  `,
  APPROVALS_MIGRATION,
  `
  ALTER TABLE requests ADD COLUMN kind TEXT NOT NULL DEFAULT 'create';
  `,
  `
  ALTER TABLE requests ADD COLUMN approvals TEXT;
  `,
  HOMES_MIGRATION,
  HOME_HASH_MIGRATION,
];
