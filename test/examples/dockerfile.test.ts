/**
 * The Dockerfile builds what the README says it does: a multi-stage build whose runtime stage
 * installs production dependencies only and runs as the image's non-root user, starting the bot
 * with Node options this Node accepts, which the benchmarks read back to start the bot as the
 * image does.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { imageNodeOptions } from "../../bench/image.js";

const dockerfile = readFileSync(resolve(import.meta.dirname, "../../Dockerfile"), "utf8");

/** The instructions of each stage, by the stage's name. */
function stages(): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  let current: string[] = [];
  for (const line of dockerfile.split("\n")) {
    const from = /^FROM\s+\S+\s+AS\s+(\S+)/i.exec(line);
    if (from?.[1] !== undefined) byName.set(from[1], (current = []));
    else if (/^[A-Z]+\s/.test(line)) current.push(line);
  }
  return byName;
}

describe("the Dockerfile", () => {
  it("builds in stages and runs from a stage with production dependencies only, as `node`", () => {
    const byName = stages();
    expect([...byName.keys()]).toEqual(["build", "deps", "runtime"]);
    expect(byName.get("deps")).toContain("RUN npm ci --omit=dev --no-audit --no-fund");
    const runtime = byName.get("runtime") ?? [];
    expect(runtime).toContain("USER node");
    expect(runtime.filter((line) => line.startsWith("RUN npm"))).toEqual([]);
    expect(runtime.at(-1)).toMatch(/^CMD \[/);
  });

  it("starts the bot with V8's young generation held small, with options this Node accepts", () => {
    const options = imageNodeOptions();
    expect(options).toContain("--max-semi-space-size=2");
    const check = spawnSync(process.execPath, [...options, "-e", "0"], { encoding: "utf8" });
    expect(check.stderr).toBe("");
    expect(check.status).toBe(0);
  });

  it("is read by the benchmarks only in the form the image runs, `node <options> dist/main.js`", () => {
    expect(imageNodeOptions('CMD ["node", "dist/main.js"]')).toEqual([]);
    expect(() => imageNodeOptions('CMD ["npm", "start"]')).toThrow(/not node … dist\/main\.js/);
    expect(() => imageNodeOptions("CMD node dist/main.js")).toThrow(/no CMD in exec form/);
  });
});
