import { afterAll, expect } from "vitest";
import { createRedactor } from "../../src/redact.js";
import { capturedLogLines, capturedSlackPayloads } from "../support/logs.js";
import { PLANTED_SECRETS, TEST_SECRETS } from "../support/secrets.js";

/** Every credential a test uses and every secret a test plants in a job's output. */
const SECRETS: Record<string, string> = { ...TEST_SECRETS, ...PLANTED_SECRETS };

/** The redactor's shapes alone: a text it would change still carries something shaped secret. */
const shapes = createRedactor();

function leaksIn(texts: readonly string[]): string[] {
  return texts.flatMap((text) => [
    ...Object.entries(SECRETS)
      .filter(([, secret]) => text.includes(secret))
      .map(([name]) => `${name} in: ${text.slice(0, 300)}`),
    ...(shapes(text) === text ? [] : [`a secret's shape in: ${text.slice(0, 300)}`]),
  ]);
}

// After each test file: no captured log line, from the bot or a process it started, may carry
// a test credential, a planted secret or anything shaped like a secret. Running in every file
// makes this a scan of the whole suite's logs.
afterAll(() => {
  const lines = capturedLogLines.splice(0);
  expect(leaksIn(lines), "log lines that contain a secret").toEqual([]);
});

// The same for everything the bots of the file sent to Slack: messages, views, ephemeral
// answers and uploaded files.
afterAll(() => {
  const payloads = capturedSlackPayloads.splice(0);
  expect(leaksIn(payloads), "Slack payloads that contain a secret").toEqual([]);
});
