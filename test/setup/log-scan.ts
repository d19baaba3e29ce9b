import { afterAll, expect } from "vitest";
import { capturedLogLines, capturedSlackPayloads } from "../support/logs.js";
import { TEST_SECRETS } from "../support/secrets.js";

// After each test file: no captured log line, from the bot or a process it started, may carry
// a test credential. Running in every file makes this a scan of the whole suite's logs.
afterAll(() => {
  const leaks = capturedLogLines.flatMap((line) =>
    Object.entries(TEST_SECRETS)
      .filter(([, secret]) => line.includes(secret))
      .map(([name]) => `${name} in: ${line.slice(0, 300)}`),
  );
  expect(leaks, "log lines that contain a test secret").toEqual([]);
});

// The same for everything the bots of the file sent to Slack: messages, views, ephemeral
// answers and uploaded files.
afterAll(() => {
  const leaks = capturedSlackPayloads.flatMap((payload) =>
    Object.entries(TEST_SECRETS)
      .filter(([, secret]) => payload.includes(secret))
      .map(([name]) => `${name} in: ${payload.slice(0, 300)}`),
  );
  expect(leaks, "Slack payloads that contain a test secret").toEqual([]);
});
