import { describe, expect, it } from "vitest";
import { boltLogger, createLogger } from "../src/logger.js";
import { createRedactor } from "../src/redact.js";
import { captureLogs } from "./support/logs.js";
import { PLANTED_SECRETS, plantedSecretsOutput, TEST_SECRETS } from "./support/secrets.js";

describe("the logger", () => {
  it("keeps secrets out of Bolt's debug lines of request bodies, and each line stays JSON", () => {
    const { stream, lines } = captureLogs();
    const redactor = createRedactor([TEST_SECRETS.gitlabToken]);
    const log = createLogger({ level: "debug", redactor, destination: stream });
    const bolt = boltLogger(log);
    const body = {
      channel: "C0VMBOT",
      text: `plan for web-01\n${plantedSecretsOutput()}`,
      blocks: JSON.stringify([
        { type: "section", text: { type: "mrkdwn", text: plantedSecretsOutput() } },
      ]),
      token: TEST_SECRETS.gitlabToken,
    };
    // What @slack/web-api logs before each call, through Bolt's logger.
    bolt.debug(`http request body: ${JSON.stringify(body)}`);
    log.debug({ output: plantedSecretsOutput() }, "job output");
    log.flush();

    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(() => JSON.parse(line) as unknown).not.toThrow();
      for (const [name, secret] of Object.entries({ ...PLANTED_SECRETS, ...TEST_SECRETS })) {
        expect(line, name).not.toContain(secret);
      }
    }
    // What is not secret is still there to read.
    expect(lines[0]).toContain("plan for web-01");
    expect(lines[0]).toContain("C0VMBOT");
  });

  it("names the replica on every line when given one, and nothing of it otherwise", () => {
    const redactor = createRedactor();
    const shared = captureLogs();
    const replica = createLogger({
      level: "info",
      redactor,
      destination: shared.stream,
      replica: "vmbot-7c9d-x2k4p-1a2b3c",
    });
    replica.info("first");
    replica.child({ component: "tracker" }).warn("second");
    const alone = captureLogs();
    createLogger({ level: "info", redactor, destination: alone.stream }).info("third");

    const parsed = [...shared.lines, ...alone.lines].map(
      (line) => JSON.parse(line) as Record<string, unknown>,
    );
    expect(parsed.map((line) => [line.msg, line.replica])).toEqual([
      ["first", "vmbot-7c9d-x2k4p-1a2b3c"],
      ["second", "vmbot-7c9d-x2k4p-1a2b3c"],
      ["third", undefined],
    ]);
    expect(parsed.every((line) => line.service === "vmbot")).toBe(true);
  });
});
