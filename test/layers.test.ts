/**
 * The layer rule (README, "Layout"), as `npm run lint` checks it: src/ never imports sandbox/,
 * test/ or bench/; sandbox/ may import src/; test/ may import both. And the test tree's shape:
 * it mirrors the folders it tests.
 */
import { existsSync, readdirSync } from "node:fs";
import { resolve } from "node:path";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..");

// The repository's own configuration, with only the two rules that carry the layer rule: the
// type-checked rules need files on disk, and these sources exist only here.
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
  ruleFilter: ({ ruleId }) =>
    ruleId === "no-restricted-imports" || ruleId === "no-restricted-syntax",
});

/** The messages of the layer rules for `code` as the file `path` (from the repository's root). */
async function layerErrors(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: resolve(ROOT, path) });
  if (result === undefined) throw new Error(`ESLint gave no result for ${path}`);
  const fatal = result.messages.filter((message) => message.fatal === true);
  expect(fatal).toEqual([]);
  return result.messages.map((message) => `${message.ruleId ?? ""}: ${message.message}`);
}

describe("the layer rule", () => {
  it.each([
    ["src/probe.ts", 'import { startSandbox } from "../sandbox/sandbox.js";'],
    [
      "src/tracker/probe.ts",
      'import { startFakeGitlab } from "../../sandbox/simulators/gitlab/index.js";',
    ],
    [
      "src/tracker/probe.ts",
      'import type { FakeSlack } from "../../sandbox/simulators/slack/index.js";',
    ],
    ["src/probe.ts", 'export { fakeNode } from "../sandbox/simulators/proxmox/index.js";'],
    ["src/gitlab/probe.ts", 'import { waitFor } from "../../test/support/wait.js";'],
    ["src/probe.ts", 'import { run } from "../bench/run.js";'],
    ["src/probe.ts", 'export const start = () => import("../sandbox/sandbox.js");'],
    ["src/views/probe.ts", 'export const fixture = () => import("../../test/support/harness.js");'],
  ])("fails a file in %s that imports from outside src/: %s", async (path, code) => {
    const errors = await layerErrors(path, `${code}\n`);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("src/ is the product alone");
  });

  it.each([
    ["src/tracker/probe.ts", 'import { loadConfig } from "../config.js";'],
    ["src/probe.ts", 'export const load = () => import("./config.js");'],
    ["sandbox/probe.ts", 'import { loadConfig } from "../src/config.js";'],
    ["test/probe.test.ts", 'import { startSandbox } from "../sandbox/sandbox.js";'],
    ["test/probe.test.ts", 'import { loadConfig } from "../src/config.js";'],
  ])("lets a file in %s import within its layer or below: %s", async (path, code) => {
    expect(await layerErrors(path, `${code}\n`)).toEqual([]);
  });
});

/** Folders of `test/` that hold what the tests share, or tests of the whole bot through the wire. */
const SHARED_TEST_FOLDERS = new Set(["integration", "support", "setup", "fixtures"]);

/** The folders under `dir`, as paths from the repository's root. */
function foldersUnder(dir: string): string[] {
  return readdirSync(resolve(ROOT, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      const path = `${dir}/${entry.name}`;
      return [path, ...foldersUnder(path)];
    });
}

/** The file or folder of the product, the sandbox or the examples a path under `test/` mirrors. */
function mirrored(path: string): string {
  const rest = path.slice("test/".length);
  return rest.startsWith("sandbox") || rest.startsWith("examples") ? rest : `src/${rest}`;
}

describe("the test tree", () => {
  it("mirrors src/, sandbox/ and examples/: each folder of tests names a folder there", () => {
    const folders = foldersUnder("test").filter(
      (path) => !SHARED_TEST_FOLDERS.has(path.split("/")[1] ?? ""),
    );
    expect(folders.length).toBeGreaterThan(10);
    const strays = folders.filter((path) => !existsSync(resolve(ROOT, mirrored(path))));
    expect(strays).toEqual([]);
  });

  it("keeps at its top only the tests of src/'s own top-level modules and the tree-wide checks", () => {
    const tests = readdirSync(resolve(ROOT, "test")).filter((name) => name.endsWith(".test.ts"));
    const treeWide = new Set(["layers.test.ts", "corpus.test.ts"]);
    const strays = tests.filter(
      (name) =>
        !treeWide.has(name) &&
        !existsSync(resolve(ROOT, "src", name.replace(/\.test\.ts$/, ".ts"))),
    );
    expect(strays).toEqual([]);
  });
});
