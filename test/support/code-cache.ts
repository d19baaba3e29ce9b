/**
 * Runs one of the bot's entry points, compiled for the test run as CommonJS
 * (test/setup/bot-bundle.ts), with V8's code cache: `node code-cache.js <entry.cjs> [args…]`.
 * A process that finds no cache leaves the code V8 compiled for it beside the entry
 * (`<entry.cjs>.v8cache`) once it has run a while or as it exits (the global setup runs each entry
 * once so that the first test finds one); every later start takes the compiled code from there
 * instead of compiling the bundle's four megabytes again, which saves about 40% of loading it. Node 20 has
 * no `module.enableCompileCache` (Node 22), hence `vm.Script`'s `cachedData`. Nothing in the bot
 * changes: the entry runs as its own module, with its own `require`, the arguments after it and
 * `import.meta.url` its file's URL.
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { Script } from "node:vm";

declare global {
  /** What the bundle's `import.meta.url` reads (bot-bundle.ts defines it so). */
  var vmbotModuleUrl: string;
}

const entry = process.argv[2];
if (entry === undefined) throw new Error("code-cache: the entry point to run is missing");
const cacheFile = `${entry}.v8cache`;

function cached(): Buffer | undefined {
  try {
    return readFileSync(cacheFile);
  } catch {
    return undefined;
  }
}

const cachedData = cached();
const script = new Script(Module.wrap(readFileSync(entry, "utf8")), {
  filename: entry,
  cachedData,
});
/**
 * How long after its start a process without a cache leaves one: by then the bot has started and
 * V8 has compiled what a start runs. Most bots in the tests never exit normally (killed at a crash
 * point, or at the end of a test), and several start at once: waiting for an exit would leave
 * every one of them compiling the bundle again.
 */
const CACHE_AFTER_MS = 2_000;

if (cachedData === undefined || script.cachedDataRejected === true) {
  let written = false;
  const write = () => {
    if (written) return;
    written = true;
    // Written whole under another name, then renamed: a process starting meanwhile reads either
    // no cache or all of it.
    const part = `${cacheFile}.${process.pid}`;
    writeFileSync(part, script.createCachedData());
    renameSync(part, cacheFile);
  };
  setTimeout(write, CACHE_AFTER_MS).unref();
  process.once("exit", write);
}

globalThis.vmbotModuleUrl = pathToFileURL(entry).href;
// The entry reads its arguments as if started itself: `node <entry> [args…]`.
process.argv.splice(1, 1);
const module = { exports: {} };
const run = script.runInThisContext() as (
  exports: unknown,
  require: NodeJS.Require,
  module: unknown,
  filename: string,
  dirname: string,
) => void;
run(module.exports, createRequire(entry), module, entry, dirname(entry));
