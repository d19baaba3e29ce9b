/**
 * TLS as VMBOT_DB asks for it (README, "TLS"): `sslmode=verify-full` never falls back to a
 * connection in clear, and a certificate authority file that is not there is named.
 */
import { expect, it } from "vitest";
import { openPostgresStore } from "../../../src/store/postgres/store.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";

describeWithPostgres("TLS to the database", () => {
  const database = useDatabase();

  /** The file's database with `params` added to its connection string. */
  const withParams = (params: Record<string, string>) => {
    const url = new URL(database.url());
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    return url.toString();
  };

  it("refuses a server that offers no TLS when sslmode asks for it, in every mode that asks", async () => {
    // The tests' server takes connections in clear only.
    for (const sslmode of ["verify-full", "verify-ca", "require", "prefer"]) {
      await expect(openPostgresStore(withParams({ sslmode })), sslmode).rejects.toThrow(
        /cannot be used: .*does not support SSL/,
      );
    }
    const clear = await openPostgresStore(withParams({ sslmode: "disable" }));
    await clear.close();
  });

  it("names the certificate authority file it cannot read", async () => {
    const missing = "/nonexistent/vmbot-db-ca.crt";
    await expect(
      openPostgresStore(withParams({ sslmode: "verify-full", sslrootcert: missing })),
    ).rejects.toThrow(
      "cannot be used: the file /nonexistent/vmbot-db-ca.crt named in the connection string cannot be read (ENOENT)",
    );
  });
});
