import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseAnsibleOutput } from "../src/ansible/recap.js";
import { parsePlanText } from "../src/terraform/plan-text.js";
import { fixturePath, readFixture } from "./support/fixtures.js";

/**
 * The corpus: real Terraform, OpenTofu and Ansible output from public sources (each in
 * `fixtures/SOURCES.md`), each file with its reading written down once beside it in
 * `<file>.expected.json`, by reading the file, not the parser's answer.
 */
const CORPUS = "corpus";
const EXPECTED_SUFFIX = ".expected.json";

const ActionSchema = z.enum(["create", "update", "delete", "replace", "read", "no-op"]);

const PlanExpectationSchema = z.object({
  parser: z.literal("plan-text"),
  note: z.string().optional(),
  counts: z
    .object({
      add: z.number(),
      change: z.number(),
      destroy: z.number(),
      import: z.number().optional(),
    })
    .nullable(),
  noChanges: z.boolean(),
  /** Every planned resource, in the order the output lists them. */
  resources: z.array(z.tuple([z.string(), ActionSchema])),
  outputs: z.array(z.tuple([z.string(), ActionSchema])).optional(),
  /** The counts and the listed resources disagree in the file itself. */
  mismatch: z.boolean().optional(),
  /** Each error's summary and the line of its detail that names the root cause. */
  errors: z.array(z.object({ summary: z.string(), rootCause: z.string() })).optional(),
});

const RecapExpectationSchema = z.object({
  parser: z.literal("recap"),
  note: z.string().optional(),
  /** host, ok, changed, unreachable, failed, skipped, rescued, ignored */
  hosts: z.array(
    z.tuple([
      z.string(),
      z.number(),
      z.number(),
      z.number(),
      z.number(),
      z.number(),
      z.number(),
      z.number(),
    ]),
  ),
  failures: z.array(
    z.object({
      host: z.string(),
      task: z.string(),
      kind: z.enum(["failed", "unreachable"]),
      message: z.string(),
      ignored: z.boolean(),
    }),
  ),
  plays: z.array(z.string()).optional(),
});

const ExpectationSchema = z.discriminatedUnion("parser", [
  PlanExpectationSchema,
  RecapExpectationSchema,
]);

function corpusFiles(dir = CORPUS): string[] {
  return readdirSync(fixturePath(dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    return entry.isDirectory() ? corpusFiles(relative) : [relative];
  });
}

const all = corpusFiles().sort();
const outputs = all.filter((file) => !file.endsWith(EXPECTED_SUFFIX));
const expectations = all.filter((file) => file.endsWith(EXPECTED_SUFFIX));

function expectationOf(file: string) {
  return ExpectationSchema.parse(JSON.parse(readFixture(`${file}${EXPECTED_SUFFIX}`)));
}

describe("the corpus of real outputs", () => {
  it("has a written-down reading for every file, and no reading without its file", () => {
    expect(expectations.map((file) => file.slice(0, -EXPECTED_SUFFIX.length))).toEqual(outputs);
  });

  it.each(outputs)("reads %s as written down", (file) => {
    const expected = expectationOf(file);
    const text = readFixture(file);

    if (expected.parser === "plan-text") {
      const plan = parsePlanText(text);
      expect(plan.counts ?? null).toEqual(expected.counts);
      expect(plan.noChanges).toBe(expected.noChanges);
      expect(plan.resources.map(({ address, action }) => [address, action])).toEqual(
        expected.resources,
      );
      if (expected.outputs !== undefined) {
        expect(plan.outputChanges.map(({ name, action }) => [name, action])).toEqual(
          expected.outputs,
        );
      }
      expect(plan.mismatch !== undefined).toBe(expected.mismatch ?? false);
      const errors = expected.errors ?? [];
      expect(plan.errors.map(({ summary }) => summary)).toEqual(errors.map((e) => e.summary));
      errors.forEach((error, index) => {
        expect(plan.errors[index]?.detail).toContain(error.rootCause);
      });
      return;
    }

    const run = parseAnsibleOutput(text);
    expect(run.recapFound).toBe(true);
    expect(
      run.hosts.map((h) => [
        h.host,
        h.ok,
        h.changed,
        h.unreachable,
        h.failed,
        h.skipped,
        h.rescued,
        h.ignored,
      ]),
    ).toEqual(expected.hosts);
    expect(
      run.failures.map(({ host, task, kind, message, ignored }) => ({
        host,
        task,
        kind,
        message,
        ignored,
      })),
    ).toEqual(expected.failures);
    if (expected.plays !== undefined) expect(run.plays).toEqual(expected.plays);
  });
});
