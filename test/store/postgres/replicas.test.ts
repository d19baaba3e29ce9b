/**
 * Several replicas on one PostgreSQL database: each "replica" here is a store with a pool of its
 * own, and the races are real ones (concurrent statements on separate connections).
 */
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MIGRATIONS } from "../../../src/store/migrations.js";
import { POSTGRES_MIGRATIONS } from "../../../src/store/postgres/migrations.js";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/store.js";
import type { NewRequest } from "../../../src/store/store.js";
import { testClock } from "../../support/clock.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";
import { SAMPLE_SPEC } from "../../support/requests.js";

const ROUNDS = 20;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

let submissions = 0;
const newRequest = (key = `view:R${++submissions}`): NewRequest => ({
  requester: "U0REQ",
  spec: SAMPLE_SPEC,
  notes: [],
  channel: "C0CHAN",
  submissionKey: key,
});

describeWithPostgres("replicas sharing one PostgreSQL database", () => {
  const database = useDatabase();
  const fresh = useDatabase();
  const clock = testClock(new Date("2026-12-02T10:00:00.000Z"));
  let a: PostgresStore;
  let b: PostgresStore;

  beforeAll(async () => {
    const open = (replica: string) =>
      openPostgresStore(database.url(), { clock: clock.now, replica });
    [a, b] = await Promise.all([open("replica-a"), open("replica-b")]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  it("runs the migrations once when three replicas start at once", async () => {
    const stores = await Promise.all(
      ["one", "two", "three"].map((replica) => openPostgresStore(fresh.url(), { replica })),
    );
    const admin = new pg.Client({ connectionString: fresh.url() });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ version: number; applied_by: string }>(
        "SELECT version, applied_by FROM schema_migrations ORDER BY version",
      );
      expect(rows.map((row) => row.version)).toEqual(
        range(POSTGRES_MIGRATIONS.length).map((i) => i + 1),
      );
      expect(new Set(rows.map((row) => row.applied_by)).size).toBe(1);
      expect(await Promise.all(stores.map((store) => store.writable()))).toEqual(
        stores.map(() => ({ ok: true })),
      );
      // A replica of an older vmbot refuses a schema newer than it knows.
      await admin.query(
        "INSERT INTO schema_migrations (version, applied_at, applied_by) VALUES ($1, 'now', 'newer')",
        [POSTGRES_MIGRATIONS.length + 1],
      );
      await expect(openPostgresStore(fresh.url(), { replica: "old" })).rejects.toThrow(
        `newer than this vmbot knows (${POSTGRES_MIGRATIONS.length})`,
      );
    } finally {
      await admin.end();
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it("refuses a database it cannot reach or cannot write, saying why without the password", async () => {
    const unreachable = openPostgresStore("postgres://vmbot:Pg-Hidden-0003@127.0.0.1:1/vmbot");
    await expect(unreachable).rejects.toThrow(
      "the database postgres://vmbot:***@127.0.0.1:1/vmbot cannot be used: the database server cannot be reached (ECONNREFUSED)",
    );
    await expect(unreachable).rejects.not.toThrow("Pg-Hidden-0003");
    const readOnly = new URL(database.url());
    readOnly.searchParams.set("options", "-c default_transaction_read_only=on");
    await expect(openPostgresStore(readOnly.toString())).rejects.toThrow(
      "cannot be used: the database is read-only (a standby, or set read-only)",
    );
  });

  it("has every column of the SQLite store's schema, table by table, and only the replicas' tables besides", async () => {
    const memory = new Database(":memory:");
    for (const sql of MIGRATIONS) memory.exec(sql);
    const tables = memory
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all() as { name: string }[];
    const sqliteColumns = tables.flatMap(({ name }) =>
      (memory.pragma(`table_info(${name})`) as { name: string }[]).map((c) => `${name}.${c.name}`),
    );
    memory.close();
    const { rows } = await a.pool.query<{ column: string }>(
      "SELECT table_name || '.' || column_name AS column FROM information_schema.columns WHERE table_schema = 'public'",
    );
    const postgresColumns = new Set(rows.map((row) => row.column));
    expect(sqliteColumns.filter((column) => !postgresColumns.has(column))).toEqual([]);
    // PostgreSQL's own: the migrations replicas apply once between them (SQLite keeps its version
    // in the file's header), and who leads and which replicas are alive. SQLite's store has one
    // process, which always leads and whose claims die with it: it has no use for the last two.
    const sqliteTables = new Set(tables.map(({ name }) => name));
    const postgresTables = [...new Set(rows.map((row) => row.column.split(".")[0]))];
    expect(postgresTables.filter((table) => !sqliteTables.has(table!)).sort()).toEqual([
      "leadership",
      "replicas",
      "schema_migrations",
    ]);
  });

  it("lets exactly one of two replicas move a request, with its intent and audit entry", async () => {
    const requests = await Promise.all(range(ROUNDS).map(() => a.createRequest(newRequest())));
    for (const { request } of requests) {
      await a.transition(request.id, ["queued"], "awaiting_approval");
    }
    const outcomes = await Promise.all(
      requests.map(({ request }) =>
        Promise.all([
          a.transition(
            request.id,
            ["awaiting_approval"],
            "applying",
            {},
            { step: "play_apply" },
            {
              actor: "U0A",
              action: "approved",
            },
          ),
          b.transition(
            request.id,
            ["awaiting_approval"],
            "rejected",
            {},
            { step: "cancel" },
            {
              actor: "U0B",
              action: "rejected",
            },
          ),
        ]),
      ),
    );
    for (const [index, [byA, byB]] of outcomes.entries()) {
      const id = requests[index]?.request.id ?? "";
      expect([byA, byB].filter((moved) => moved !== undefined)).toHaveLength(1);
      const winner = byA ?? byB;
      const effects = (await b.pendingEffects()).filter((effect) => effect.subject === id);
      expect(effects.map((effect) => effect.step)).toEqual([
        winner?.status === "applying" ? "play_apply" : "cancel",
      ]);
      expect((await b.listAudit(id)).map((entry) => entry.action)).toEqual([
        winner?.status === "applying" ? "approved" : "rejected",
      ]);
      expect((await a.getRequest(id))?.revision).toBe(2);
    }
  });

  it("creates one request for a form delivered to two replicas at once", async () => {
    const keys = range(ROUNDS).map((i) => `view:twice-${i}`);
    const results = await Promise.all(
      keys.map((key) =>
        Promise.all([a.createRequest(newRequest(key)), b.createRequest(newRequest(key))]),
      ),
    );
    for (const [first, second] of results) {
      expect([first.created, second.created].filter(Boolean)).toHaveLength(1);
      expect(second.request.id).toBe(first.request.id);
    }
  });

  it("claims an effect for exactly one replica, and lets another take it over once the claim lapses", async () => {
    const subjects = range(ROUNDS).map((i) => `claim-${i}`);
    const claims = await Promise.all(
      subjects.map((subject) =>
        Promise.all([
          a.claim(subject, "create_pipeline", 60_000),
          b.claim(subject, "create_pipeline", 60_000),
        ]),
      ),
    );
    for (const pair of claims) {
      expect(pair.filter((claim) => claim.claimed)).toHaveLength(1);
      const holder = pair.find((claim) => claim.claimed)?.holder;
      expect(pair.map((claim) => claim.holder)).toEqual([holder, holder]);
    }
    const [first] = subjects;
    if (first === undefined) throw new Error("no subject");
    const holderOfFirst = claims[0]?.[0]?.claimed === true ? a : b;
    const other = holderOfFirst === a ? b : a;
    // The holder renews its claim; the other still cannot take it.
    expect((await holderOfFirst.claim(first, "create_pipeline", 60_000)).claimed).toBe(true);
    expect((await other.claim(first, "create_pipeline", 60_000)).claimed).toBe(false);
    // The holder stops (its replica died): once its claim lapses, the other takes it over.
    clock.advance(60_001);
    expect(await other.claim(first, "create_pipeline", 60_000)).toMatchObject({
      claimed: true,
      holder: other.replica,
      effect: { state: "intended" },
    });
    expect((await holderOfFirst.claim(first, "create_pipeline", 60_000)).claimed).toBe(false);
    // A done effect is claimed by no one, however late.
    await other.complete(first, "create_pipeline", { id: 1 });
    clock.advance(120_000);
    expect(await holderOfFirst.claim(first, "create_pipeline", 60_000)).toMatchObject({
      claimed: false,
      holder: null,
      effect: { state: "done", result: { id: 1 } },
    });
  });

  it("acts on a delivery sent to two replicas once", async () => {
    const keys = range(ROUNDS * 2).map((i) => `command:T${i}`);
    const firsts = await Promise.all(
      keys.map((key) => Promise.all([a.firstDelivery(key, 60_000), b.firstDelivery(key, 60_000)])),
    );
    for (const pair of firsts) expect(pair.filter(Boolean)).toHaveLength(1);
  });
});
