/**
 * Hooks wake the leader across replicas: one replica's pool notifies, another replica's
 * listener (a connection of its own) hears it, on the run's PostgreSQL.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createLogger } from "../../../src/logger.js";
import { createRedactor } from "../../../src/redact.js";
import { createPool } from "../../../src/store/postgres/pool.js";
import { parsePostgresUrl } from "../../../src/store/postgres/url.js";
import {
  createWakeListener,
  createWakeNotifier,
  WAKE_CHANNEL,
  wakeThroughDatabase,
  type WakeListener,
} from "../../../src/store/postgres/wake.js";
import { captureLogs } from "../../support/logs.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";
import { waitFor } from "../../support/wait.js";

describeWithPostgres("waking the leader across replicas", () => {
  const database = useDatabase();
  let pools: pg.Pool[];
  let listeners: WakeListener[];
  let clients: pg.Client[];

  beforeEach(() => {
    const target = parsePostgresUrl(database.url());
    pools = [createPool(target), createPool(target)];
    listeners = [];
    clients = [];
  });
  afterEach(async () => {
    await Promise.all(listeners.map((listener) => listener.stop()));
    await Promise.all(clients.map((client) => client.end()));
    await Promise.all(pools.map((pool) => pool.end()));
  });

  /** Replica `replica`'s listener, recording each wake it passes on. */
  const listen = async (replica: string, leads: () => boolean = () => true) => {
    const woken: (number | undefined)[] = [];
    const errors: unknown[] = [];
    const listener = createWakeListener({
      target: parsePostgresUrl(database.url()),
      replica,
      leads,
      onWake: (pipelineId) => woken.push(pipelineId),
      onError: (error) => errors.push(error),
      maxRetryMs: 200,
    });
    listeners.push(listener);
    await listener.start();
    expect(listener.listening()).toBe(true);
    return { listener, woken, errors };
  };

  /** A plain session listening on the channel, as any other user of the database could. */
  const eavesdrop = async () => {
    const client = new pg.Client({ connectionString: database.url() });
    clients.push(client);
    const payloads: string[] = [];
    client.on("notification", (message) => payloads.push(message.payload ?? ""));
    await client.connect();
    await client.query(`LISTEN ${WAKE_CHANNEL}`);
    return payloads;
  };

  const notifyFrom = (index: number) => {
    const pool = pools[index];
    if (pool === undefined) throw new Error(`no pool ${index}`);
    return createWakeNotifier(pool);
  };

  it("wakes the leading replica with the hook's pipeline when another replica took the hook", async () => {
    const leader = await listen("replica-b");
    await notifyFrom(0)(4211);
    await notifyFrom(0)();
    await waitFor(() => (leader.woken.length >= 2 ? true : undefined), "two wakes on replica-b");
    expect(leader.woken).toEqual([4211, undefined]);
    expect(leader.errors).toEqual([]);
  });

  it("leaves a wake alone on a replica that does not lead, until it leads", async () => {
    let leading = false;
    // Each wake the follower hears asks whether it leads: a wake heard is a question asked.
    let asked = 0;
    const follower = await listen("replica-a", () => {
      asked += 1;
      return leading;
    });
    const other = await listen("replica-b");
    await notifyFrom(0)(1);
    // Both heard it, each on its own connection and in its own time; this one did not lead then.
    await waitFor(() => (other.woken.includes(1) ? true : undefined), "replica-b to hear 1");
    await waitFor(() => (asked >= 1 ? true : undefined), "replica-a to hear 1");
    leading = true;
    await notifyFrom(1)(2);
    await waitFor(() => (follower.woken.includes(2) ? true : undefined), "replica-a to hear 2");
    expect(follower.woken).toEqual([2]);
  });

  it("listens again after its connection is ended, wakes once for what it may have missed, and hears later wakes", async () => {
    const leader = await listen("replica-b");
    const admin = pools[0];
    if (admin === undefined) throw new Error("no pool");
    const ended = await admin.query<{ ended: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1",
      ["vmbot replica-b wake"],
    );
    expect(ended.rows.map((row) => row.ended)).toEqual([true]);
    await waitFor(
      () => (leader.woken.length > 0 ? true : undefined),
      "the listener to come back and wake once",
    );
    expect(leader.woken).toEqual([undefined]);
    expect(leader.errors.length).toBeGreaterThan(0);
    expect(leader.listener.listening()).toBe(true);
    await notifyFrom(0)(77);
    await waitFor(() => (leader.woken.includes(77) ? true : undefined), "the wake after it");
    expect(leader.woken).toEqual([undefined, 77]);
  });

  it("keeps trying while the database refuses it, and listens once it can", async () => {
    // A role that may not log in yet: the server refuses each attempt until it may.
    const admin = pools[0];
    if (admin === undefined) throw new Error("no pool");
    // Roles are the server's, not the file's database's: a name of this run's own.
    const role = `vmbot_wake_${randomBytes(4).toString("hex")}`;
    await admin.query(`CREATE ROLE ${role} NOLOGIN`);
    const url = new URL(database.url());
    url.username = role;
    const woken: (number | undefined)[] = [];
    const errors: unknown[] = [];
    const listener = createWakeListener({
      target: { connectionString: url.toString() },
      replica: "replica-late",
      leads: () => true,
      onWake: (pipelineId) => woken.push(pipelineId),
      onError: (error) => errors.push(error),
      maxRetryMs: 100,
    });
    listeners.push(listener);
    try {
      await listener.start();
      expect(listener.listening()).toBe(false);
      await waitFor(() => (errors.length >= 2 ? true : undefined), "a second refused attempt");
      await admin.query(`ALTER ROLE ${role} LOGIN`);
      await waitFor(() => (listener.listening() ? true : undefined), "the listener to listen");
      await notifyFrom(1)(5);
      await waitFor(() => (woken.includes(5) ? true : undefined), "the wake");
      expect(String(errors[0])).toMatch(/not permitted to log in/);
    } finally {
      await listener.stop();
      await admin.query(`DROP ROLE ${role}`);
    }
  });

  it("sends nothing but the pipeline's number, which every session of the database can read", async () => {
    const payloads = await eavesdrop();
    const leader = await listen("replica-b");
    await notifyFrom(0)(4211);
    await notifyFrom(0)(Number.NaN);
    await notifyFrom(0)();
    await waitFor(() => (payloads.length >= 3 ? true : undefined), "three payloads");
    expect(payloads).toEqual(['{"pipelineId":4211}', "{}", "{}"]);
    // Another program's payload on the channel is a wake with no pipeline named.
    await pools[0]?.query("SELECT pg_notify($1, $2)", [WAKE_CHANNEL, "not json"]);
    await pools[0]?.query("SELECT pg_notify($1, $2)", [WAKE_CHANNEL, '{"pipelineId":"1; x"}']);
    await waitFor(() => (leader.woken.length >= 5 ? true : undefined), "five wakes");
    expect(leader.woken).toEqual([4211, undefined, undefined, undefined, undefined]);
  });

  it("stops listening when stopped, and does not come back", async () => {
    const stopping = await listen("replica-a");
    const staying = await listen("replica-b");
    await stopping.listener.stop();
    expect(stopping.listener.listening()).toBe(false);
    await notifyFrom(0)(9);
    await waitFor(() => (staying.woken.includes(9) ? true : undefined), "replica-b to hear 9");
    const sessions = await pools[0]?.query(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1",
      ["vmbot replica-a wake"],
    );
    expect(sessions?.rows[0]).toEqual({ n: 0 });
    expect(stopping.woken).toEqual([]);
  });

  it("passes a hook on from the HTTP server, and logs a wake it could not send", async () => {
    const leader = await listen("replica-b");
    const logs = captureLogs();
    const log = createLogger({
      level: "info",
      redactor: createRedactor(),
      destination: logs.stream,
    });
    const pool = pools[0];
    if (pool === undefined) throw new Error("no pool");
    const wake = wakeThroughDatabase(createWakeNotifier(pool), log);
    wake(31);
    await waitFor(() => (leader.woken.includes(31) ? true : undefined), "the wake about 31");
    await pool.end();
    wake(32);
    const line = await waitFor(
      () => logs.lines.find((each) => each.includes("could not pass a GitLab hook")),
      "the warning",
    );
    expect(JSON.parse(line)).toMatchObject({ level: 40, pipelineId: 32 });
    pools = pools.slice(1);
  });
});
