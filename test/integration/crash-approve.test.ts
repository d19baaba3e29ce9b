import { describe, expect, it } from "vitest";
import {
  approvalCrashTest,
  approveFlow,
  expectDeclared,
  CRASH_POINTS,
  TEST_MS,
} from "../support/crash-world.js";

/**
 * Crash tests (test/support/crash-world.ts) of a request approved and made: its message, its
 * pipeline, its plan's upload and the apply's play.
 */

/** The crash points a test below is declared for, filled as they are declared. */
const declared: string[] = [];

describe.concurrent("crash between the intent and the result of each effect of an approval", () => {
  it(
    "runs the whole flow without a crash as the baseline",
    async () => {
      expect(await approveFlow(undefined)).toBe(0);
    },
    TEST_MS,
  );

  for (const crashAt of CRASH_POINTS.approve) {
    declared.push(crashAt);
    approvalCrashTest(crashAt);
  }

  it("has a test for each of its crash points, before and after", () => {
    expectDeclared("approve", declared);
  });
});
