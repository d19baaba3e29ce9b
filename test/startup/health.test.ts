/**
 * `/healthz` with the database's part, asked over HTTP: the engine, whether it takes a write,
 * and with replicas sharing PostgreSQL which one leads.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { createHttpServer, type Health } from "../../src/server.js";
import {
  postgresHealth,
  sqliteHealth,
  withDatabase,
  type DatabaseHealth,
} from "../../src/startup/health.js";
import { createLeader, type Leader } from "../../src/store/postgres/leader.js";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/store.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { testClock, type TestClock } from "../support/clock.js";
import { describeWithPostgres, useDatabase } from "../support/postgres.js";

const log = createLogger({ level: "silent", redactor: createRedactor() });
let servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(resolve);
        }),
    ),
  );
  servers = [];
});

/** An HTTP server on loopback answering `/healthz` from `health` and `database`. */
async function serve(
  database: DatabaseHealth,
  health: () => Health = () => ({ ok: true }),
  timeoutMs?: number,
) {
  const server = createHttpServer(
    {
      slackEvents: undefined,
      gitlabWebhook: undefined,
      health: withDatabase(health, database, timeoutMs),
    },
    log,
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return async () => {
    const response = await fetch(`http://127.0.0.1:${port}/healthz`);
    return { status: response.status, body: await response.json() };
  };
}

describe("/healthz with SQLite", () => {
  it("says the engine and that it takes a write, keeping today's fields", async () => {
    const store = openSqliteStore(":memory:");
    try {
      const ask = await serve(sqliteHealth(store), () => ({ ok: true, policy: "refused" }));
      expect(await ask()).toEqual({
        status: 200,
        body: {
          status: "ok",
          policy: "refused",
          database: { engine: "sqlite", reachable: true },
        },
      });
    } finally {
      store.close();
    }
  });

  it("is 503 with the store's reason once it cannot be written, and names no leader", async () => {
    const store = openSqliteStore(":memory:");
    const ask = await serve(sqliteHealth(store));
    store.close();
    expect(await ask()).toEqual({
      status: 503,
      body: {
        status: "unavailable",
        reason: expect.stringMatching(/store/) as unknown,
        database: { engine: "sqlite", reachable: false },
      },
    });
  });

  it("keeps the reason something else gave, with the database's state beside it", async () => {
    const store = openSqliteStore(":memory:");
    try {
      const ask = await serve(sqliteHealth(store), () => ({
        ok: false,
        reason: "Slack is not reachable (ECONNREFUSED); retrying",
      }));
      expect(await ask()).toEqual({
        status: 503,
        body: {
          status: "unavailable",
          reason: "Slack is not reachable (ECONNREFUSED); retrying",
          database: { engine: "sqlite", reachable: true },
        },
      });
    } finally {
      store.close();
    }
  });
});

describe("/healthz with a database that does not answer", () => {
  it("answers 503 after its wait, and asks the database once for checks made at once", async () => {
    let asked = 0;
    let answer: (() => void) | undefined;
    const stuck: DatabaseHealth = {
      engine: "postgres",
      reachable: () => {
        asked += 1;
        return new Promise((resolve) => {
          answer = () => {
            resolve({ ok: true });
          };
        });
      },
    };
    const ask = await serve(stuck, undefined, 100);
    const [first, second] = await Promise.all([ask(), ask()]);
    const late = {
      status: 503,
      body: {
        status: "unavailable",
        reason: "the database did not answer within 0.1 s",
        database: { engine: "postgres", reachable: false },
      },
    };
    expect(first).toEqual(late);
    expect(second).toEqual(late);
    expect(asked).toBe(1);
    answer?.();
  });

  it("answers 503 with the reason when the check throws", async () => {
    const ask = await serve({
      engine: "postgres",
      reachable: () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:5432")),
    });
    expect(await ask()).toEqual({
      status: 503,
      body: {
        status: "unavailable",
        reason: "the database cannot be reached: connect ECONNREFUSED 127.0.0.1:5432",
        database: { engine: "postgres", reachable: false },
      },
    });
  });
});

describeWithPostgres("/healthz with replicas on PostgreSQL", () => {
  const database = useDatabase();
  let clock: TestClock;
  let stores: PostgresStore[];
  let leaders: Leader[];

  beforeEach(async () => {
    clock = testClock(new Date("2026-12-03T10:00:00.000Z"));
    stores = await Promise.all(
      ["replica-a", "replica-b"].map((replica) =>
        openPostgresStore(database.url(), { clock: clock.now, replica }),
      ),
    );
    leaders = stores.map((store) =>
      createLeader({ pool: store.pool, replica: store.replica, clock: clock.now, ttlMs: 3_000 }),
    );
  });
  afterEach(async () => {
    await Promise.all(leaders.map((leader) => leader.stop()));
    await Promise.all(stores.map((store) => store.close()));
  });

  const healthOf = (index: number) => {
    const [store, leader] = [stores[index], leaders[index]];
    if (store === undefined || leader === undefined) throw new Error(`no replica ${index}`);
    return postgresHealth(store, leader);
  };

  it("names each replica and says which one leads; both are ready", async () => {
    const [a, b] = [await serve(healthOf(0)), await serve(healthOf(1))];
    expect(await leaders[0]?.step()).toBe(true);
    expect(await leaders[1]?.step()).toBe(false);
    expect(await a()).toEqual({
      status: 200,
      body: {
        status: "ok",
        database: { engine: "postgres", reachable: true },
        replica: "replica-a",
        leader: true,
      },
    });
    expect(await b()).toEqual({
      status: 200,
      body: {
        status: "ok",
        database: { engine: "postgres", reachable: true },
        replica: "replica-b",
        leader: false,
      },
    });
  });

  it("says nothing of leading before the replica takes part in it", async () => {
    const store = stores[0];
    if (store === undefined) throw new Error("no store");
    const ask = await serve(postgresHealth(store));
    expect(await ask()).toEqual({
      status: 200,
      body: { status: "ok", database: { engine: "postgres", reachable: true } },
    });
  });

  it("is 503 while the database refuses connections, and 200 again once it takes them", async () => {
    const ask = await serve(healthOf(0));
    expect((await ask()).status).toBe(200);
    const name = new URL(database.url()).pathname.slice(1);
    // From the server's own database: PostgreSQL refuses to close the one a session is in.
    const server = new URL(database.url());
    server.pathname = "/postgres";
    const admin = new pg.Client({ connectionString: server.toString() });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
        [name],
      );
      // Past the store's trust in its last heartbeat.
      clock.advance(5_000);
      const refused = await ask();
      expect(refused).toEqual({
        status: 503,
        body: {
          status: "unavailable",
          reason: expect.stringMatching(/^the store cannot be written: /) as unknown,
          database: { engine: "postgres", reachable: false },
          replica: "replica-a",
          leader: false,
        },
      });
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      expect((await ask()).status).toBe(200);
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => undefined);
      await admin.end().catch(() => undefined);
    }
  });
});
