import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/config.js";
import { chooseMode } from "../src/mode.js";

const CREDENTIALS = ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"] as const;

/** The ConfigError that `run` throws; fails the test when it throws nothing or something else. */
function configErrorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError, but nothing was thrown");
}

describe("chooseMode", () => {
  describe.each([
    ["unset", {}],
    ["blank", { VMBOT_MODE: "  " }],
    ["empty", { VMBOT_MODE: "" }],
    ["auto", { VMBOT_MODE: "auto" }],
    ["AUTO", { VMBOT_MODE: "AUTO" }],
    ["padded Auto", { VMBOT_MODE: " Auto " }],
  ])("auto (VMBOT_MODE %s)", (_label, modeEnv: Record<string, string>) => {
    it("runs the sandbox when no Slack credential is set", () => {
      expect(chooseMode({ ...modeEnv })).toBe("sandbox");
    });

    it("runs the sandbox when every Slack credential is blank or undefined", () => {
      expect(
        chooseMode({
          ...modeEnv,
          SLACK_BOT_TOKEN: "",
          SLACK_SIGNING_SECRET: "   ",
          SLACK_APP_TOKEN: undefined,
        }),
      ).toBe("sandbox");
    });

    it("ignores unrelated variables", () => {
      expect(chooseMode({ ...modeEnv, GITLAB_TOKEN: "x", PORT: "3000" })).toBe("sandbox");
    });

    it.each(CREDENTIALS)("runs for Slack when only %s is set", (name) => {
      expect(chooseMode({ ...modeEnv, [name]: "something" })).toBe("slack");
    });

    it("runs for Slack when one credential is set and the others are blank", () => {
      expect(
        chooseMode({
          ...modeEnv,
          SLACK_BOT_TOKEN: "",
          SLACK_SIGNING_SECRET: " ",
          SLACK_APP_TOKEN: "xapp-1",
        }),
      ).toBe("slack");
    });
  });

  it.each(["slack", "SLACK", " Slack "])(
    "VMBOT_MODE=%j forces slack without credentials",
    (mode) => {
      expect(chooseMode({ VMBOT_MODE: mode })).toBe("slack");
    },
  );

  it.each(["sandbox", "SANDBOX", " Sandbox "])(
    "VMBOT_MODE=%j forces the sandbox even with every credential set",
    (mode) => {
      expect(
        chooseMode({
          VMBOT_MODE: mode,
          SLACK_BOT_TOKEN: "xoxb-1",
          SLACK_SIGNING_SECRET: "secret",
          SLACK_APP_TOKEN: "xapp-1",
        }),
      ).toBe("sandbox");
    },
  );

  it.each(["bogus", "slack-mode", "http", "socket"])(
    "refuses VMBOT_MODE=%j, naming the variable and the allowed values",
    (mode) => {
      const error = configErrorOf(() => chooseMode({ VMBOT_MODE: mode }));
      expect(error.message).toContain("VMBOT_MODE");
      for (const allowed of ["auto", "slack", "sandbox"]) expect(error.message).toContain(allowed);
      expect(error.message).toContain(mode);
      expect(error.problems).toHaveLength(1);
    },
  );
});
