import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import {
  chosenLeaseEnd,
  extendedEnd,
  leaseChoices,
  leaseEnd,
  parseLeaseDuration,
  readLeaseChoice,
} from "../../src/vm/lease.js";
import { TEST_SECRETS } from "../support/secrets.js";

const BASE = {
  SLACK_BOT_TOKEN: TEST_SECRETS.botToken,
  SLACK_SIGNING_SECRET: TEST_SECRETS.signingSecret,
  GITLAB_TOKEN: TEST_SECRETS.gitlabToken,
  GITLAB_PROJECT: "infra/vms",
  APPROVERS: "U0APPROVER",
  ADMINS: "U0ADMIN",
};

const problems = (env: Record<string, string>) => {
  try {
    loadConfig({ ...BASE, ...env });
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.message;
  }
};

describe("lease settings", () => {
  it("reads durations in seconds, minutes, hours and days, and nothing else", () => {
    expect(parseLeaseDuration("45s")).toBe(45_000);
    expect(parseLeaseDuration("90m")).toBe(5_400_000);
    expect(parseLeaseDuration("12h")).toBe(43_200_000);
    expect(parseLeaseDuration("30D")).toBe(2_592_000_000);
    for (const bad of ["", "0d", "30", "1w", "-1d", "3.5d"]) {
      expect(parseLeaseDuration(bad)).toBeUndefined();
    }
  });

  it("defaults to no lease, reminders 3 d and 1 d before, and a destroy request at the end", () => {
    expect(loadConfig(BASE).lease).toEqual({
      defaultMs: null,
      maxMs: null,
      warnMs: [259_200_000, 86_400_000],
      onExpiry: "request-destroy",
    });
    expect(
      loadConfig({ ...BASE, VM_LEASE_DEFAULT: "30s", VM_LEASE_MAX: "2m", VM_LEASE_WARN: "10s,20s" })
        .lease,
    ).toMatchObject({ defaultMs: 30_000, maxMs: 120_000, warnMs: [20_000, 10_000] });
  });

  it("refuses never as the default under a maximum, a default past the maximum, and bad words", () => {
    expect(problems({ VM_LEASE_MAX: "30d" })).toContain(
      "VM_LEASE_DEFAULT may be never only when VM_LEASE_MAX is never too",
    );
    expect(problems({ VM_LEASE_DEFAULT: "60d", VM_LEASE_MAX: "30d" })).toContain(
      "VM_LEASE_DEFAULT must not be longer than VM_LEASE_MAX",
    );
    expect(problems({ VM_LEASE_WARN: "3d,soon" })).toContain("VM_LEASE_WARN must be durations");
    expect(problems({ VM_LEASE_ON_EXPIRY: "delete" })).toContain("VM_LEASE_ON_EXPIRY");
  });

  it("takes VM_LEASE_ON_EXPIRY=destroy", () => {
    expect(loadConfig({ ...BASE, VM_LEASE_ON_EXPIRY: "destroy" }).lease.onExpiry).toBe("destroy");
  });

  it("starts a lease at its default and extends it from now, never past the maximum", () => {
    const now = new Date("2026-12-03T10:00:00.000Z");
    const settings = { defaultMs: 60_000, maxMs: 45_000, warnMs: [], onExpiry: "destroy" as const };
    expect(leaseEnd(settings, now)).toBe("2026-12-03T10:01:00.000Z");
    expect(extendedEnd(settings, now)).toBe("2026-12-03T10:00:45.000Z");
    expect(leaseEnd({ ...settings, defaultMs: null }, now)).toBeNull();
  });

  it("offers lengths up to the maximum, with never only when there is none", () => {
    const base = { warnMs: [], onExpiry: "request-destroy" as const };
    expect(leaseChoices({ ...base, defaultMs: null, maxMs: null })).toEqual([]);
    expect(leaseChoices({ ...base, defaultMs: 60_000, maxMs: 120_000 })).toEqual([60_000, 120_000]);
    const day = 86_400_000;
    expect(leaseChoices({ ...base, defaultMs: 30 * day, maxMs: 45 * day })).toEqual([
      3_600_000,
      day,
      7 * day,
      14 * day,
      30 * day,
      45 * day,
    ]);
    expect(leaseChoices({ ...base, defaultMs: 10 * day, maxMs: null }).slice(-3)).toEqual([
      180 * day,
      365 * day,
      null,
    ]);
  });

  it("reads the form's lease against the settings, whatever the form offered", () => {
    const settings = {
      defaultMs: 60_000,
      maxMs: 120_000,
      warnMs: [],
      onExpiry: "destroy" as const,
    };
    expect(readLeaseChoice(settings, "2m")).toEqual({ ok: true, ms: 120_000 });
    expect(readLeaseChoice(settings, "30s")).toEqual({ ok: true, ms: 30_000 });
    expect(readLeaseChoice(settings, undefined)).toEqual({ ok: true, ms: 60_000 });
    expect(readLeaseChoice(settings, "121s")).toEqual({ ok: false, problem: "over_max" });
    expect(readLeaseChoice(settings, "never")).toEqual({ ok: false, problem: "never_refused" });
    expect(readLeaseChoice(settings, "0s")).toEqual({ ok: false, problem: "unreadable" });
    expect(readLeaseChoice({ ...settings, maxMs: null }, "never")).toEqual({ ok: true, ms: null });
  });

  it("ends a chosen lease from when the VM was made, never past today's maximum", () => {
    const now = new Date("2026-12-03T10:00:00.000Z");
    const settings = { defaultMs: 60_000, maxMs: 90_000, warnMs: [], onExpiry: "destroy" as const };
    expect(chosenLeaseEnd(settings, 30_000, now)).toBe("2026-12-03T10:00:30.000Z");
    expect(chosenLeaseEnd(settings, 600_000, now)).toBe("2026-12-03T10:01:30.000Z");
    expect(chosenLeaseEnd(settings, undefined, now)).toBe("2026-12-03T10:01:00.000Z");
    expect(chosenLeaseEnd({ ...settings, maxMs: null }, null, now)).toBeNull();
  });
});
