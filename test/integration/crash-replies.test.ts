import { describe, it } from "vitest";
import { approvalCrashTest, expectDeclared, CRASH_POINTS } from "../support/crash-world.js";

/**
 * Crash tests (test/support/crash-world.ts) of the replies an approved request posts in its thread.
 */

/** The crash points a test below is declared for, filled as they are declared. */
const declared: string[] = [];

describe.concurrent(
  "crash between the intent and the result of each reply in a request's thread",
  () => {
    for (const crashAt of CRASH_POINTS.replies) {
      declared.push(crashAt);
      approvalCrashTest(crashAt);
    }

    it("has a test for each of its crash points, before and after", () => {
      expectDeclared("replies", declared);
    });
  },
);
