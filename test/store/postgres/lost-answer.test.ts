/**
 * A write whose answer is lost after it took effect: a loopback proxy in front of the run's
 * PostgreSQL cuts the connection once the server has confirmed a statement and is ready for the
 * next (its transaction, explicit or the statement's own, committed), so the write is done but
 * the store never hears so.
 */
import { createServer, connect, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/store.js";
import { StoreWriteError } from "../../../src/store/store.js";
import { testClock } from "../../support/clock.js";
import { waitFor } from "../../support/wait.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";
import { SAMPLE_SPEC } from "../../support/requests.js";

/** PostgreSQL's CommandComplete message for a statement: 'C', its length, the tag. */
function commandComplete(tag: string): Buffer {
  const text = Buffer.from(`${tag}\0`);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(text.length + 4);
  return Buffer.concat([Buffer.from("C"), length, text]);
}

/** ReadyForQuery outside any transaction: 'Z', length 5, 'I' (idle). */
const READY_IDLE = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);

interface CuttingProxy {
  url: string;
  /**
   * Cuts the next connection whose server confirms a statement with `tag` (a COMMIT, or an
   * `INSERT 0 1` in a transaction of its own), once the server says it is idle again: nothing
   * from the statement's answer on reaches the client.
   */
  cutNextAnswer(tag: string): void;
  cuts(): number;
  close(): Promise<void>;
}

async function cuttingProxy(target: string): Promise<CuttingProxy> {
  const upstream = new URL(target);
  let armed: Buffer | undefined;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const server = connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(server);
    // This connection's answer is being held back: from its tag until the server is idle.
    let holding = false;
    client.on("data", (chunk) => server.write(chunk));
    server.on("data", (chunk: Buffer) => {
      if (armed !== undefined && !holding && chunk.includes(armed)) {
        armed = undefined;
        holding = true;
      }
      if (!holding) {
        client.write(chunk);
        return;
      }
      if (chunk.includes(READY_IDLE)) {
        cuts += 1;
        client.destroy();
        server.destroy();
      }
    });
    const end = () => {
      client.destroy();
      server.destroy();
    };
    client.on("close", end).on("error", end);
    server.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no proxy port");
  const url = new URL(target);
  url.port = String(address.port);
  return {
    url: url.toString(),
    cutNextAnswer(tag) {
      armed = commandComplete(tag);
    },
    cuts: () => cuts,
    async close() {
      for (const socket of sockets) socket.destroy();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
}

describeWithPostgres("a PostgreSQL write whose answer is lost", () => {
  const database = useDatabase();
  let proxy: CuttingProxy;
  let store: PostgresStore;
  const clock = testClock();

  beforeAll(async () => {
    proxy = await cuttingProxy(database.url());
    store = await openPostgresStore(proxy.url, { replica: "replica-a", clock: clock.now });
  });
  afterAll(async () => {
    await store.close();
    await proxy.close();
  });

  it("reports a move it could not confirm, and a retry neither moves it again nor records its intent twice", async () => {
    const { request } = await store.createRequest({
      requester: "U0REQ",
      spec: SAMPLE_SPEC,
      notes: [],
      channel: "C0CHAN",
      submissionKey: "view:lost",
    });
    await store.transition(request.id, ["queued"], "awaiting_approval");
    proxy.cutNextAnswer("COMMIT");
    const move = () =>
      store.transition(
        request.id,
        ["awaiting_approval"],
        "applying",
        {},
        { step: "play_apply" },
        {
          actor: "U0APP",
          action: "approved",
        },
      );
    await expect(move()).rejects.toBeInstanceOf(StoreWriteError);
    expect(proxy.cuts()).toBe(1);
    // The move took effect; the retry (another click, another replica) finds it made.
    expect(await move()).toBeUndefined();
    expect(await store.getRequest(request.id)).toMatchObject({ status: "applying", revision: 2 });
    expect((await store.pendingEffects()).map((e) => e.step)).toEqual(["play_apply"]);
    expect((await store.listAudit(request.id)).map((e) => e.action)).toEqual(["approved"]);
  });

  it("reports a delivery it could not confirm, and the same delivery again is a repeat", async () => {
    // The delivery is recorded by one statement in a transaction of its own.
    const cuts = proxy.cuts();
    proxy.cutNextAnswer("INSERT 0 1");
    await expect(store.firstDelivery("command:lost", 60_000)).rejects.toBeInstanceOf(
      StoreWriteError,
    );
    expect(proxy.cuts()).toBe(cuts + 1);
    expect(await store.firstDelivery("command:lost", 60_000)).toBe(false);
    expect(await store.firstDelivery("command:found", 60_000)).toBe(true);
  });

  it("says the store cannot take writes while the database cannot be reached, and why", async () => {
    expect(await store.writable()).toEqual({ ok: true });
    // The database goes away (the proxy stops, its connections cut).
    await proxy.close();
    clock.advance(2_001);
    // A connection the pool held is found cut first; new ones are refused.
    expect(await store.writable()).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^the store cannot be written: the (connection to the database server was lost|database server cannot be reached \(ECONNREFUSED\))$/,
      ) as string,
    });
    await waitFor(async () => {
      const writable = await store.writable();
      return !writable.ok && writable.reason.endsWith("(ECONNREFUSED)") ? true : undefined;
    }, "the store to say the database server cannot be reached");
    await expect(store.audit({ requestId: null, actor: "vmbot", action: "x" })).rejects.toThrow(
      "the store could not audit x: the database server cannot be reached (ECONNREFUSED)",
    );
  });
});
