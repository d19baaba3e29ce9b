import { z } from "zod";
import { isIpv4 } from "../net/ipv4.js";

/** The building blocks of the environment schema: each reads one variable's text. */

const SLACK_ID = /^[UWS][A-Z0-9]{2,}$/;
/** Slack's static_select holds at most 100 options. */
export const MAX_FORM_OPTIONS = 100;
/** The inputs vmbot sends whose values are numbers, so a pipeline may declare them `type: number`. */
export const NUMERIC_INPUTS = [
  "template_vm_id",
  "vm_id",
  "vlan_id",
  "cpu_cores",
  "memory_mb",
  "disk_size_gb",
];
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

export const blankToUndefined = (value: unknown): unknown =>
  typeof value === "string" && value.trim() === "" ? undefined : value;

/** A variable that may be unset; an empty string counts as unset. */
export const optionalString = () => z.preprocess(blankToUndefined, z.string().trim().optional());

export const prefixed = (prefix: string, what: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string({ error: `is required: set it to ${what}` })
      .trim()
      .refine((value) => value.startsWith(prefix), {
        error: `must start with ${prefix} (${what})`,
      }),
  );

export const optionalPrefixed = (prefix: string, what: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .trim()
      .refine((value) => value.startsWith(prefix), {
        error: `must start with ${prefix} (${what})`,
      })
      .optional(),
  );

export const integer = (fallback: number, min: number, max: number, what: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .default(String(fallback))
      .refine((value) => /^\d+$/.test(value.trim()), {
        error: `must be a whole number (${what})`,
      })
      .transform((value) => Number(value.trim()))
      .refine((value) => value >= min && value <= max, {
        error: `must be between ${min} and ${max} (${what})`,
      }),
  );

export const boolean = (fallback: boolean) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .default(String(fallback))
      .transform((value) => value.trim().toLowerCase())
      .refine((value) => ["true", "false", "1", "0", "yes", "no"].includes(value), {
        error: "must be true or false",
      })
      .transform((value) => ["true", "1", "yes"].includes(value)),
  );

export const httpUrl = (what: string) =>
  z
    .string()
    .trim()
    .refine(
      (value) => {
        try {
          return ["http:", "https:"].includes(new URL(value).protocol);
        } catch {
          return false;
        }
      },
      { error: `must be an http(s) URL (${what})` },
    )
    .refine(
      (value) => {
        try {
          const url = new URL(value);
          return url.username === "" && url.password === "";
        } catch {
          return true;
        }
      },
      { error: "must not carry a user name or password: vmbot shows this address to people" },
    )
    .transform((value) => value.replace(/\/+$/, ""));

export const ipv4 = (fallback: string, what: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .default(fallback)
      .transform((value) => value.trim())
      .refine(isIpv4, { error: `must be an IPv4 address like 192.168.1.1 (${what})` }),
  );

export const list = (value: string | undefined): string[] =>
  (value ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");

export const slackIdList = (what: string, requiredHint?: string) => {
  const text =
    requiredHint === undefined
      ? z.string().optional()
      : z.string({ error: `is required: ${requiredHint}` });
  return z.preprocess(
    blankToUndefined,
    text
      .transform(list)
      .refine((ids) => requiredHint === undefined || ids.length > 0, {
        error: `must name at least one Slack user or user group (${what})`,
      })
      .refine((ids) => ids.every((id) => SLACK_ID.test(id)), {
        error: `must be a comma-separated list of Slack user IDs (U…/W…) or user-group IDs (S…) (${what})`,
      }),
  );
};
