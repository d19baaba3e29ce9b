/**
 * A replica that stops in the middle of a transaction (paused, or cut off from the database)
 * holds its row locks only until the server ends its idle session: the leader's lease row, locked
 * by a paused leader's fenced write, cannot keep the other replicas from taking the lead for good.
 */
import { afterEach, expect, it } from "vitest";
import { createPool, IDLE_IN_TRANSACTION_MS } from "../../../src/store/postgres/pool.js";
import { parsePostgresUrl } from "../../../src/store/postgres/url.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";

describeWithPostgres("a transaction left waiting by a replica that stopped", () => {
  const database = useDatabase();
  const pools: ReturnType<typeof createPool>[] = [];
  const pool = (idleInTransactionMs?: number) => {
    const made = createPool(
      parsePostgresUrl(database.url()),
      idleInTransactionMs === undefined ? {} : { idleInTransactionMs },
    );
    pools.push(made);
    return made;
  };
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });

  it("is ended by the server after the replica's bound, 10 s unless said", async () => {
    const { rows } = await pool().query<{ idle_in_transaction_session_timeout: string }>(
      "SHOW idle_in_transaction_session_timeout",
    );
    expect(IDLE_IN_TRANSACTION_MS).toBe(10_000);
    expect(rows[0]?.idle_in_transaction_session_timeout).toBe("10s");
  });

  it("gives up its row locks when ended, so another replica's write on the row goes through", async () => {
    const stopped = pool(300);
    const other = pool();
    await other.query("CREATE TABLE lease (id INT PRIMARY KEY, epoch INT NOT NULL)");
    await other.query("INSERT INTO lease VALUES (1, 1)");
    const held = await stopped.connect();
    // The server's error first, then the connection it closes: both are this test's to expect.
    const ended = new Promise<Error>((resolve) => held.on("error", resolve));
    await held.query("BEGIN");
    await held.query("SELECT epoch FROM lease WHERE id = 1 FOR SHARE");
    // The stopped replica sends nothing more; the other takes the lead (an UPDATE of the row).
    const taken = await other.query("UPDATE lease SET epoch = 2 WHERE id = 1 RETURNING epoch");
    expect(taken.rows).toEqual([{ epoch: 2 }]);
    expect((await ended).message).toMatch(/idle-in-transaction timeout/);
    held.release(true);
  });
});
