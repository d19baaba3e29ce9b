import { build, type BuildOptions } from "esbuild";
import { spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /**
     * A folder holding the bot's entry point (`src/main.cjs`), `npm start`'s (`sandbox/main.cjs`)
     * and the modules the tests preload into the bot (`test/support/*.js`), each compiled once
     * for the whole run into one file of plain JavaScript with the packages it uses
     * (better-sqlite3, a native module, is imported from the repository's node_modules); beside
     * the sandbox, its page's scripts and style in `sandbox/ui/`, as `npm run build:sandbox`
     * places them.
     */
    botBundle: string;
  }
}

const ROOT = resolve(import.meta.dirname, "../..");

/**
 * JavaScript source with every character beyond ASCII written as its `\u` escape: esbuild
 * escapes them in strings but leaves them in regular expressions (`/│/`), where the escape means
 * the same. Node decodes a file of ASCII alone about twice as fast as one with a few characters
 * beyond it: reading the bot's bundle takes about 30 ms, against 56–60 ms with them.
 */
function asciiOnly(code: string): string {
  return code.replace(
    // eslint-disable-next-line no-control-regex -- the range is every character ASCII holds
    /[^\x00-\x7f]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * Runs an entry point once, as far as loading everything it imports, so that its code cache is
 * there for the first test that starts it: without the settings to start (an unknown `VMBOT_MODE`,
 * and for the crash tests' entry no crash point) every entry stops right after its modules are
 * loaded, and the process leaves the code V8 compiled as it exits. Without it the
 * crash tests' own entry, killed at its crash point within a second or two, would seldom live long
 * enough to leave one, and every crash test would compile it again.
 */
async function warmCodeCache(dir: string, entry: string): Promise<void> {
  const runner = join(dir, "test/support/code-cache.js");
  const code = join(dir, entry.replace(/\.ts$/, ".cjs"));
  await new Promise<void>((resolveRun, rejectRun) => {
    const child = spawn(process.execPath, [runner, code], {
      env: { PATH: process.env.PATH ?? "", VMBOT_MODE: "none" },
      stdio: "ignore",
    });
    child.once("error", rejectRun);
    child.once("exit", () => {
      resolveRun();
    });
  });
  if (!existsSync(`${code}.v8cache`)) throw new Error(`no code cache was left for ${entry}`);
}

/** The sandbox page's scripts, each compiled to a module of its own as the browser loads them. */
const UI_SCRIPTS = ["sandbox/ui/page.ts", "sandbox/ui/blockkit.ts", "sandbox/ui/form-state.ts"];

/**
 * The entry points the tests run in a bot process of their own, paths from the repository's root:
 * compiled to CommonJS (`.cjs`) and started through test/support/code-cache.ts, which keeps V8's
 * compiled code for the next start.
 */
const ENTRY_POINTS = ["src/main.ts", "sandbox/main.ts", "test/support/crash-entry.ts"];

/** The modules the tests preload into a bot process, and the code cache's runner: ES modules. */
const MODULES = ["test/support/stray-errors.ts", "test/support/code-cache.ts"];

/**
 * Vitest's global setup: compiles the bot (and `npm start`'s sandbox) once for the run, so a test
 * that starts it in a process of its own (and the crash tests start dozens) spawns plain Node
 * instead of compiling the sources at every start, and reads one file instead of hundreds of its
 * packages': a start costs a third of the CPU time it did through tsx.
 */
export default async function bundleBot(project: TestProject): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-bundle-"));
  // better-sqlite3 (and its compiled binding) is imported by name.
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  // The sandbox finds the example policy upward from its own module.
  symlinkSync(join(ROOT, "examples"), join(dir, "examples"), "dir");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  const node: BuildOptions = {
    absWorkingDir: ROOT,
    outbase: ROOT,
    outdir: dir,
    bundle: true,
    external: ["better-sqlite3"],
    platform: "node",
    target: "node20",
    // Without comments and indentation the bundle is 30% smaller to read and compile; names
    // stay as written, for the stacks a failing test prints.
    minifyWhitespace: true,
    legalComments: "none",
    logLevel: "warning",
  };
  const entries = await build({
    ...node,
    entryPoints: ENTRY_POINTS,
    format: "cjs",
    outExtension: { ".js": ".cjs" },
    // The sandbox finds its page and the example policy from its own module's URL.
    define: { "import.meta.url": "globalThis.vmbotModuleUrl" },
    write: false,
  });
  for (const file of entries.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path, asciiOnly(file.text));
  }
  await build({
    ...node,
    entryPoints: MODULES,
    format: "esm",
    // The CommonJS packages inside call require for Node's own modules.
    banner: {
      js: 'import { createRequire as vmbotCreateRequire } from "node:module"; const require = vmbotCreateRequire(import.meta.url);',
    },
  });
  await build({
    absWorkingDir: ROOT,
    entryPoints: UI_SCRIPTS,
    outbase: ROOT,
    outdir: dir,
    platform: "browser",
    format: "esm",
    target: "es2023",
    logLevel: "warning",
  });
  copyFileSync(join(ROOT, "sandbox/ui/page.css"), join(dir, "sandbox/ui/page.css"));
  await Promise.all(ENTRY_POINTS.map((entry) => warmCodeCache(dir, entry)));
  project.provide("botBundle", dir);
  return () => {
    rmSync(dir, { recursive: true, force: true });
  };
}
