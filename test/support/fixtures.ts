import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe } from "vitest";

/**
 * Real data shared between projects lives in `../shared/fixtures`, next to the project root
 * (SPEC §5). A checkout without that folder skips the tests that need it, with a reason; in CI
 * (`CI=true`) a missing folder is a failure, so CI can never pass by skipping them.
 */
export function sharedDir(): string {
  return path.resolve(process.cwd(), "../shared");
}

/** Absolute path of `../shared/fixtures`, or undefined when it is not there. */
export function fixturesDir(): string | undefined {
  const dir = path.join(sharedDir(), "fixtures");
  return existsSync(dir) && statSync(dir).isDirectory() ? dir : undefined;
}

function missingMessage(): string {
  return `shared fixtures not found at ${path.join(sharedDir(), "fixtures")} (tests read ../shared relative to the project root)`;
}

/** Absolute path of a fixture, e.g. `fixturePath("gitlab-trace/trace_with_sections")`. */
export function fixturePath(relPath: string): string {
  const dir = fixturesDir();
  if (dir === undefined) throw new Error(missingMessage());
  const resolved = path.resolve(dir, relPath);
  if (!resolved.startsWith(dir + path.sep)) {
    throw new Error(`fixture path ${relPath} points outside ${dir}`);
  }
  return resolved;
}

/** A fixture's text (UTF-8), byte for byte as stored. */
export function readFixture(relPath: string): string {
  return readFileSync(fixturePath(relPath), "utf8");
}

/** A JSON fixture, parsed. The caller validates its shape. */
export function readFixtureJson(relPath: string): unknown {
  return JSON.parse(readFixture(relPath)) as unknown;
}

/**
 * `describe` for tests that need the shared fixtures. Without them: skipped, with the reason in
 * its title; with `CI=true`: throws, which fails the test file.
 */
export function describeWithFixtures(name: string, fn: () => void): void {
  if (fixturesDir() !== undefined) {
    describe(name, fn);
    return;
  }
  if (process.env.CI === "true") {
    throw new Error(`${name}: ${missingMessage()}; in CI they are required`);
  }
  describe.skip(`${name} [skipped: ${missingMessage()}]`, fn);
}
