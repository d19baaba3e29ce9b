import { existsSync } from "node:fs";

/** Where the browser tests find Chromium: Debian's package, or `CHROMIUM_PATH`. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** The one command that makes the browser tests run on a Debian or Ubuntu machine. */
export const INSTALL_CHROMIUM = "sudo apt-get install -y chromium";

/**
 * Vitest's global setup: says once, at the top of the run, that the browser tests will be
 * skipped and how to run them, so a run without Chromium is never mistaken for a full one.
 */
export default function announceMissingChromium(): void {
  if (existsSync(CHROMIUM) || process.env.CI === "true") return;
  process.stdout.write(
    `\nThe browser tests (test/sandbox/ui/page.test.ts) are skipped: Chromium is not at ${CHROMIUM}.\n` +
      `Install it with \`${INSTALL_CHROMIUM}\` (or point CHROMIUM_PATH at one), then run npm test again.\n\n`,
  );
}
