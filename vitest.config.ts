import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/setup/log-scan.ts"],
    globalSetup: ["test/setup/chromium.ts", "test/setup/bot-bundle.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    reporters: process.env.CI === "true" ? ["default", "json"] : ["default"],
    outputFile: { json: "test-results/vitest.json" },
  },
});
