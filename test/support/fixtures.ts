import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Real data produced by real tools lives in `test/fixtures/`, each file's origin and licence in
 * its `SOURCES.md`. The tests read only this copy, so a fresh clone needs nothing beside it.
 */
export const FIXTURES_DIR = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../fixtures",
);

/** Absolute path of a fixture, e.g. `fixturePath("gitlab-trace/trace_with_sections")`. */
export function fixturePath(relPath: string): string {
  const resolved = path.resolve(FIXTURES_DIR, relPath);
  if (!resolved.startsWith(FIXTURES_DIR + path.sep)) {
    throw new Error(`fixture path ${relPath} points outside ${FIXTURES_DIR}`);
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
