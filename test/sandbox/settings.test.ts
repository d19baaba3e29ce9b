import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config.js";
import { sandboxSettings } from "../../sandbox/settings.js";

/** The ConfigError that `run` throws; fails the test when it throws nothing or something else. */
function configErrorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError, but nothing was thrown");
}

describe("sandboxSettings", () => {
  it("has defaults", () => {
    expect(sandboxSettings({})).toEqual({
      port: 3000,
      dbPath: "./data/sandbox.sqlite",
      logLevel: "warn",
      paceMs: 1500,
      leaseMs: 180_000,
    });
  });

  it("treats blank values as unset", () => {
    expect(
      sandboxSettings({
        PORT: "",
        VMBOT_SANDBOX_DB: "  ",
        VMBOT_DB: "",
        LOG_LEVEL: " ",
        VMBOT_SANDBOX_PACE_MS: "",
      }),
    ).toEqual({
      port: 3000,
      dbPath: "./data/sandbox.sqlite",
      logLevel: "warn",
      paceMs: 1500,
      leaseMs: 180_000,
    });
  });

  it("takes overrides", () => {
    expect(
      sandboxSettings({
        PORT: "8123",
        VMBOT_SANDBOX_DB: "/tmp/elsewhere/sb.sqlite",
        LOG_LEVEL: "debug",
        VMBOT_SANDBOX_PACE_MS: "50",
        VMBOT_SANDBOX_LEASE: "1h",
      }),
    ).toEqual({
      port: 8123,
      dbPath: "/tmp/elsewhere/sb.sqlite",
      logLevel: "debug",
      paceMs: 50,
      leaseMs: 3_600_000,
    });
  });

  it("takes never for no lease, and refuses a lease it cannot read or too short to show", () => {
    expect(sandboxSettings({ VMBOT_SANDBOX_LEASE: "never" }).leaseMs).toBeNull();
    for (const bad of ["3 minutes", "10s", "0m"]) {
      expect(configErrorOf(() => sandboxSettings({ VMBOT_SANDBOX_LEASE: bad })).message).toContain(
        "VMBOT_SANDBOX_LEASE must be a duration of 30s or more",
      );
    }
  });

  it("accepts PORT 0 (any free port) and the range limits", () => {
    expect(sandboxSettings({ PORT: "0" }).port).toBe(0);
    expect(sandboxSettings({ PORT: "65535" }).port).toBe(65535);
    expect(sandboxSettings({ VMBOT_SANDBOX_PACE_MS: "60000" }).paceMs).toBe(60_000);
  });

  it.each(["abc", "-1", "65536", "80.5", "3000x"])("refuses PORT=%j, naming PORT", (port) => {
    const error = configErrorOf(() => sandboxSettings({ PORT: port }));
    expect(error.message).toContain("PORT");
    expect(error.message).not.toContain("VMBOT_SANDBOX_PACE_MS");
  });

  it.each(["soon", "49", "0", "60001", "100.5", "-5"])(
    "refuses VMBOT_SANDBOX_PACE_MS=%j, naming the variable",
    (pace) => {
      const error = configErrorOf(() => sandboxSettings({ VMBOT_SANDBOX_PACE_MS: pace }));
      expect(error.message).toContain("VMBOT_SANDBOX_PACE_MS");
    },
  );

  it("names every bad variable at once", () => {
    const error = configErrorOf(() =>
      sandboxSettings({ PORT: "nope", VMBOT_SANDBOX_PACE_MS: "nope" }),
    );
    expect(error.message).toContain("PORT");
    expect(error.message).toContain("VMBOT_SANDBOX_PACE_MS");
    expect(error.problems).toHaveLength(2);
  });

  it("refuses an unknown LOG_LEVEL, naming it", () => {
    const error = configErrorOf(() => sandboxSettings({ LOG_LEVEL: "loud" }));
    expect(error.message).toContain("LOG_LEVEL");
  });

  describe("refuses a sandbox store that is the bot's own", () => {
    it.each([
      ["the same spelling", "./data/x.sqlite", "./data/x.sqlite"],
      ["./ versus no prefix", "./data/x.sqlite", "data/x.sqlite"],
      ["no prefix versus ./", "data/x.sqlite", "./data/x.sqlite"],
      ["a detour through ..", "data/../data/x.sqlite", "./data/x.sqlite"],
      ["an absolute versus a relative path", resolve("data/x.sqlite"), "./data/x.sqlite"],
      ["a trailing space", "./data/x.sqlite ", "data/x.sqlite"],
    ])("%s", (_label, sandboxDb, botDb) => {
      const error = configErrorOf(() =>
        sandboxSettings({ VMBOT_SANDBOX_DB: sandboxDb, VMBOT_DB: botDb }),
      );
      expect(error.message).toContain("VMBOT_SANDBOX_DB");
      expect(error.message).toContain("VMBOT_DB");
    });

    it.each(["./data/vmbot.sqlite", "data/vmbot.sqlite", resolve("data/vmbot.sqlite")])(
      "with VMBOT_DB at its default and VMBOT_SANDBOX_DB=%j",
      (sandboxDb) => {
        const error = configErrorOf(() => sandboxSettings({ VMBOT_SANDBOX_DB: sandboxDb }));
        expect(error.message).toContain("VMBOT_SANDBOX_DB");
      },
    );

    it("through a symbolic link to the bot's store folder", () => {
      const dir = mkdtempSync(join(tmpdir(), "vmbot-mode-"));
      try {
        mkdirSync(join(dir, "real"));
        symlinkSync(join(dir, "real"), join(dir, "link"));
        const error = configErrorOf(() =>
          sandboxSettings({
            VMBOT_DB: join(dir, "real", "vmbot.sqlite"),
            VMBOT_SANDBOX_DB: join(dir, "link", "vmbot.sqlite"),
          }),
        );
        expect(error.message).toContain("VMBOT_SANDBOX_DB");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("through a hard link to the bot's store", () => {
      const dir = mkdtempSync(join(tmpdir(), "vmbot-mode-"));
      try {
        writeFileSync(join(dir, "vmbot.sqlite"), "store");
        linkSync(join(dir, "vmbot.sqlite"), join(dir, "other-name.sqlite"));
        const error = configErrorOf(() =>
          sandboxSettings({
            VMBOT_DB: join(dir, "vmbot.sqlite"),
            VMBOT_SANDBOX_DB: join(dir, "other-name.sqlite"),
          }),
        );
        expect(error.message).toContain("VMBOT_SANDBOX_DB");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("with the sandbox store at its default and VMBOT_DB pointing at it", () => {
      const error = configErrorOf(() => sandboxSettings({ VMBOT_DB: "data/sandbox.sqlite" }));
      expect(error.message).toContain("VMBOT_SANDBOX_DB");
    });
  });

  it("accepts a sandbox store beside the bot's own", () => {
    expect(
      sandboxSettings({ VMBOT_SANDBOX_DB: "./data/x.sqlite", VMBOT_DB: "./data/y.sqlite" }).dbPath,
    ).toBe("./data/x.sqlite");
  });
});
