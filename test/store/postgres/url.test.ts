import { describe, expect, it } from "vitest";
import { isPostgresUrl, parsePostgresUrl } from "../../../src/store/postgres/url.js";

describe("a PostgreSQL connection string", () => {
  it("is told from a SQLite file by its scheme", () => {
    expect(isPostgresUrl("postgres://db/vmbot")).toBe(true);
    expect(isPostgresUrl(" postgresql://db/vmbot")).toBe(true);
    expect(isPostgresUrl("./data/vmbot.sqlite")).toBe(false);
    expect(isPostgresUrl("/var/lib/postgres://x")).toBe(false);
  });

  it("gives the driver its TLS settings, takes the pool size out, and hides the password", () => {
    const target = parsePostgresUrl(
      "postgres://vmbot:p%40ss-Word-1@db.example:5432/vmbot?sslmode=verify-full&pool_max=4",
    );
    expect(target).toEqual({
      connectionString: "postgres://vmbot:p%40ss-Word-1@db.example:5432/vmbot?sslmode=verify-full",
      poolMax: 4,
      shown: "postgres://vmbot:***@db.example:5432/vmbot?sslmode=verify-full",
      password: "p@ss-Word-1",
    });
    expect(parsePostgresUrl("postgres://db.example/vmbot").poolMax).toBe(10);
    expect(parsePostgresUrl("postgres://vmbot@db.example/vmbot?password=Query-Pw-2")).toMatchObject(
      {
        password: "Query-Pw-2",
        shown: "postgres://vmbot@db.example/vmbot?password=***",
      },
    );
  });

  it("is refused, without its password, when it names no host or database or a bad setting", () => {
    expect(() => parsePostgresUrl("postgres://vmbot:Hidden-Pw-3@db.example")).toThrow(
      "(postgres://vmbot:***@db.example) names no database after the host",
    );
    expect(() =>
      parsePostgresUrl("postgres://vmbot:Hidden-Pw-3@db.example/x?pool_max=many"),
    ).toThrow("has pool_max=many; it takes a whole number 1-100");
    expect(() => parsePostgresUrl("postgres://[bad")).toThrow(
      "is not a connection string PostgreSQL takes",
    );
  });
});
