import { z } from "zod";

/**
 * How long a VM is lent: VM_LEASE_DEFAULT (what a new VM gets), VM_LEASE_MAX (how far Extend can
 * take it from now), VM_LEASE_WARN (when before its end the owner is reminded) and
 * VM_LEASE_ON_EXPIRY (a destroy request for approval, or a destroy played without one).
 * Durations are `30d`, `12h`, `90m` or `45s` (seconds so that tests can run leases for real).
 */

export interface LeaseSettings {
  /** Null: VMs get no lease unless asked (and never expire). */
  defaultMs: number | null;
  /** Null: no maximum. */
  maxMs: number | null;
  /** Reminders before the end, longest first. */
  warnMs: number[];
  onExpiry: "request-destroy" | "destroy";
}

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30d` → milliseconds; undefined for anything else. */
export function parseLeaseDuration(text: string): number | undefined {
  const match = /^(\d{1,6})([smhd])$/.exec(text.trim().toLowerCase());
  if (match === null) return undefined;
  const amount = Number(match[1]);
  return amount > 0 ? amount * UNIT_MS[match[2] as keyof typeof UNIT_MS] : undefined;
}

const blank = (value: unknown) =>
  typeof value === "string" && value.trim() === "" ? undefined : value;

/** A duration, or `never` (null). */
const durationOrNever = (fallback: string, what: string) =>
  z.preprocess(
    blank,
    z
      .string()
      .default(fallback)
      .transform((value, ctx) => {
        if (value.trim().toLowerCase() === "never") return null;
        const ms = parseLeaseDuration(value);
        if (ms === undefined) {
          ctx.addIssue({
            code: "custom",
            message: `must be a duration like 30d, 12h, 90m or 45s, or never (${what})`,
          });
          return z.NEVER;
        }
        return ms;
      }),
  );

export const LEASE_ENV = {
  VM_LEASE_DEFAULT: durationOrNever("never", "the lease a new VM gets"),
  VM_LEASE_MAX: durationOrNever("never", "how far Extend can take a lease"),
  VM_LEASE_WARN: z.preprocess(
    blank,
    z
      .string()
      .default("3d,1d")
      .transform((value, ctx) => {
        const parts = value
          .split(",")
          .map((part) => part.trim())
          .filter((part) => part !== "");
        const ms = parts.map(parseLeaseDuration);
        if (ms.some((each) => each === undefined)) {
          ctx.addIssue({
            code: "custom",
            message:
              "must be durations like 3d,1d (when before a lease ends its owner is reminded)",
          });
          return z.NEVER;
        }
        return [...new Set(ms as number[])].sort((a, b) => b - a);
      }),
  ),
  VM_LEASE_ON_EXPIRY: z.preprocess(
    blank,
    z.enum(["request-destroy", "destroy"]).default("request-destroy"),
  ),
};

/** What the lease settings cannot be together, in words for the operator. */
export function leaseProblems(settings: LeaseSettings): string[] {
  const problems: string[] = [];
  if (settings.maxMs !== null && settings.defaultMs === null) {
    problems.push("VM_LEASE_DEFAULT may be never only when VM_LEASE_MAX is never too");
  }
  if (
    settings.maxMs !== null &&
    settings.defaultMs !== null &&
    settings.defaultMs > settings.maxMs
  ) {
    problems.push("VM_LEASE_DEFAULT must not be longer than VM_LEASE_MAX");
  }
  return problems;
}

/** `30d`, `2h`, `90s`: a length in its largest whole unit, as the form's option values carry it. */
export function durationText(ms: number): string {
  for (const unit of ["d", "h", "m"] as const) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${Math.ceil(ms / 1_000)}s`;
}

/** The lengths the create form offers when no setting names them: an hour to a year. */
const LADDER_MS = [1, 24, 7 * 24, 14 * 24, 30 * 24, 60 * 24, 90 * 24, 180 * 24, 365 * 24].map(
  (hours) => hours * UNIT_MS.h,
);

/**
 * The lease lengths the create form offers, shortest first: the usual ones up to VM_LEASE_MAX,
 * the default and the maximum themselves, and never (null, last) only when there is no maximum.
 * Empty when leases are off (no default and no maximum).
 */
export function leaseChoices(settings: LeaseSettings): (number | null)[] {
  if (settings.defaultMs === null && settings.maxMs === null) return [];
  const max = settings.maxMs;
  const lengths = [...LADDER_MS, settings.defaultMs, max].filter(
    (ms): ms is number => ms !== null && (max === null || ms <= max),
  );
  const sorted = [...new Set(lengths)].sort((a, b) => a - b);
  return max === null ? [...sorted, null] : sorted;
}

/** The lease a form's answer asks for: a length, or never (null); why not, when it may not be. */
export type LeaseChoice =
  | { ok: true; ms: number | null }
  | { ok: false; problem: "unreadable" | "over_max" | "never_refused" };

/**
 * Reads the lease chosen on the create form, on the server's side: anything but a duration up
 * to VM_LEASE_MAX, or never where there is no maximum, is refused. Blank (a form from before the
 * field) takes the default.
 */
export function readLeaseChoice(settings: LeaseSettings, raw: string | undefined): LeaseChoice {
  const text = raw?.trim().toLowerCase() ?? "";
  if (text === "") return { ok: true, ms: settings.defaultMs };
  if (text === "never") {
    return settings.maxMs === null
      ? { ok: true, ms: null }
      : { ok: false, problem: "never_refused" };
  }
  const ms = parseLeaseDuration(text);
  if (ms === undefined) return { ok: false, problem: "unreadable" };
  if (settings.maxMs !== null && ms > settings.maxMs) return { ok: false, problem: "over_max" };
  return { ok: true, ms };
}

/**
 * When the lease of a VM made at `from` ends: the length chosen on the form (null: never),
 * never past today's maximum; the default for a request made before the form offered a choice.
 */
export function chosenLeaseEnd(
  settings: LeaseSettings,
  chosenMs: number | null | undefined,
  from: Date,
): string | null {
  if (chosenMs === undefined) return leaseEnd(settings, from);
  const length = chosenMs ?? settings.maxMs;
  if (length === null) return null;
  const capped = settings.maxMs === null ? length : Math.min(length, settings.maxMs);
  return new Date(from.getTime() + capped).toISOString();
}

/** When a lease starting at `from` ends; null for none. */
export function leaseEnd(settings: LeaseSettings, from: Date): string | null {
  return settings.defaultMs === null
    ? null
    : new Date(from.getTime() + settings.defaultMs).toISOString();
}

/** Extend: the default length again from now, never past the maximum from now. */
export function extendedEnd(settings: LeaseSettings, now: Date): string | null {
  const length = settings.defaultMs ?? settings.maxMs;
  if (length === null) return null;
  const capped = settings.maxMs === null ? length : Math.min(length, settings.maxMs);
  return new Date(now.getTime() + capped).toISOString();
}
