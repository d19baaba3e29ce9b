import { configDefaults, defineConfig } from "vitest/config";

/** Measures how fast the bot answers a crowd: it runs alone, after every other file. */
const LOAD_TEST = "test/integration/load.test.ts";

export default defineConfig({
  test: {
    setupFiles: ["test/setup/log-scan.ts"],
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
    projects: [
      {
        extends: true,
        test: {
          name: "vmbot",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, LOAD_TEST],
          globalSetup: [
            "test/setup/chromium.ts",
            "test/setup/bot-bundle.ts",
            "test/setup/postgres.ts",
          ],
        },
      },
      {
        // A burst of 50 commands and 50 forms, each to be answered within Slack's 3 seconds:
        // alone on the machine, not beside four other files.
        extends: true,
        test: {
          name: "load",
          include: [LOAD_TEST],
          // `npm run test:postgres` starts its bot on PostgreSQL too.
          globalSetup: process.env.VMBOT_TEST_DB === "postgres" ? ["test/setup/postgres.ts"] : [],
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
