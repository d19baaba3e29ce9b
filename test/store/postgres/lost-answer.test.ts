/**
 * A write whose answer is lost after it took effect: a loopback proxy in front of the run's
 * PostgreSQL cuts the connection as the server confirms a COMMIT, so the transaction is done
 * but the store never hears so.
 */
import { createServer, connect, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/store.js";
import { StoreWriteError } from "../../../src/store/store.js";
import { testClock } from "../../support/clock.js";
import { waitFor } from "../../support/wait.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";
import { SAMPLE_SPEC } from "../../support/requests.js";

/** PostgreSQL's CommandComplete message for a COMMIT: 'C', its length, the tag. */
const COMMIT_COMPLETE = Buffer.concat([
  Buffer.from("C"),
  Buffer.from([0, 0, 0, 11]),
  Buffer.from("COMMIT\0"),
]);

interface CuttingProxy {
  url: string;
  /** Cuts the next connection whose server confirms a COMMIT, before the client hears it. */
  cutNextCommit(): void;
  cuts(): number;
  close(): Promise<void>;
}

async function cuttingProxy(target: string): Promise<CuttingProxy> {
  const upstream = new URL(target);
  let armed = false;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const server = connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(server);
    client.on("data", (chunk) => server.write(chunk));
    server.on("data", (chunk: Buffer) => {
      if (armed && chunk.includes(COMMIT_COMPLETE)) {
        armed = false;
        cuts += 1;
        client.destroy();
        server.destroy();
        return;
      }
      client.write(chunk);
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
    cutNextCommit() {
      armed = true;
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
    proxy.cutNextCommit();
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
    proxy.cutNextCommit();
    await expect(store.firstDelivery("command:lost", 60_000)).rejects.toBeInstanceOf(
      StoreWriteError,
    );
    expect(await store.firstDelivery("command:lost", 60_000)).toBe(false);
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
