import { readFileSync } from "node:fs";
import { resolve } from "node:path";

/**
 * The Node options the container image starts the bot with: what the Dockerfile's `CMD` gives
 * `node` before the script. The benchmarks that start the bot as a process of its own start it
 * the same way, so their figures are the image's.
 */
export function imageNodeOptions(
  dockerfile = readFileSync(resolve(import.meta.dirname, "../Dockerfile"), "utf8"),
) {
  const cmd = /^CMD\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1];
  if (cmd === undefined) throw new Error("the Dockerfile has no CMD in exec form");
  const argv: unknown = JSON.parse(cmd);
  if (!Array.isArray(argv) || argv[0] !== "node" || argv.at(-1) !== "dist/main.js") {
    throw new Error(`the Dockerfile's CMD is not node … dist/main.js: ${cmd}`);
  }
  return argv.slice(1, -1).map(String);
}
