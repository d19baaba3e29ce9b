import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/setup/log-scan.ts"],
    globalSetup: ["test/setup/chromium.ts", "test/setup/bot-bundle.ts"],
    // Most tests wait on sockets, simulated pipelines and child processes rather than compute:
    // more files at once than there are cores keeps the cores busy (Vitest's default is one
    // worker fewer than the cores, a single one on two).
    maxWorkers: 4,
    // A worker imports the bot, the simulators and their packages once, not again for every test
    // file: nothing in them is shared between tests (no module singletons), and the suite's
    // secret scan (test/setup/log-scan.ts) starts afresh with each file.
    isolate: false,
    testTimeout: 20_000,
    hookTimeout: 20_000,
    reporters: process.env.CI === "true" ? ["default", "json"] : ["default"],
    outputFile: { json: "test-results/vitest.json" },
  },
});
