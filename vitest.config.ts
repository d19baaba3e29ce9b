import { relative } from "node:path";
import { configDefaults, defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** Measures how fast the bot answers a crowd: it runs alone, after every other file. */
const LOAD_TEST = "test/integration/load.test.ts";

/**
 * The files that take longest, longest first: the run lasts at least as long as its longest file,
 * so these start at once rather than whenever their turn comes (on a fresh clone Vitest has no
 * timings yet and starts the largest files first, which are quick unit tests). The three fleet
 * tests run three bot processes each on PostgreSQL and mostly wait (on a GitLab answering 1.5 s
 * late, on leases running out) for most of a minute: they start early, taking their workers'
 * time but little of the cores'. The twenty-request one starts first, beside files that compute
 * in one process, and the others and the crash tests' files once its burst of commands and forms
 * (each to be answered within Slack's 3 seconds) is past: each of those runs its bots side by
 * side, and a crowd of bots starting together on two cores answers Slack later than that.
 */
const LONGEST_FIRST = [
  "test/integration/fleet.test.ts",
  "test/sandbox/ui/page.test.ts",
  "test/views/injection.test.ts",
  "test/integration/home.test.ts",
  "test/integration/authorization.test.ts",
  "test/terraform/plan-text.property.test.ts",
  "test/integration/failover.test.ts",
  "test/integration/pause.test.ts",
  "test/integration/crash-replies.test.ts",
  "test/integration/crash-approve.test.ts",
  "test/integration/crash.test.ts",
  "test/integration/crash-destroy.test.ts",
  "test/tracker/tracker.test.ts",
  "test/integration/crash-lease.test.ts",
  "test/examples/gitlab-pipeline.test.ts",
];

/** Vitest's order (timings of earlier runs, else size), with the longest files moved first. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const at = LONGEST_FIRST.indexOf(relative(file.project.config.root, file.moduleId));
      return at === -1 ? LONGEST_FIRST.length : at;
    };
    const group = (file: TestSpecification) => file.project.config.sequence.groupOrder;
    return sorted
      .map((file, order) => ({ file, order }))
      .sort(
        (a, b) => group(a.file) - group(b.file) || rank(a.file) - rank(b.file) || a.order - b.order,
      )
      .map(({ file }) => file);
  }
}

export default defineConfig({
  test: {
    setupFiles: ["test/setup/log-scan.ts"],
    // Most tests wait on sockets, simulated pipelines and child processes rather than compute:
    // more files at once than there are cores keeps the cores busy (Vitest's default is one
    // worker fewer than the cores, a single one on two). The fleet tests hold three of them for
    // most of a minute, waiting; the others run everything else beside them.
    maxWorkers: 5,
    // The tests of a file marked concurrent (the crash tests') running at once: each starts a bot
    // process or two, and the crash tests' files run beside each other and the rest.
    maxConcurrency: 3,
    // A worker imports the bot, the simulators and their packages once, not again for every test
    // file: nothing in them is shared between tests (no module singletons), and the suite's
    // secret scan (test/setup/log-scan.ts) starts afresh with each file.
    isolate: false,
    testTimeout: 20_000,
    hookTimeout: 20_000,
    sequence: { sequencer: LongestFirst },
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
