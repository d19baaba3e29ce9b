import { ConfigError } from "./config.js";

type RawEnv = Readonly<Record<string, string | undefined>>;

export type Mode = "slack" | "sandbox";

const SLACK_CREDENTIALS = ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"] as const;

const blank = (value: string | undefined): boolean => value === undefined || value.trim() === "";

/**
 * `VMBOT_MODE`: `slack` runs the bot for a real workspace (and fails, naming what is missing, when
 * it is not configured), `sandbox` runs the local sandbox, and `auto` (the default) runs the
 * sandbox only when no Slack credential is set at all.
 */
export function chooseMode(env: RawEnv): Mode {
  const mode = (env.VMBOT_MODE ?? "").trim().toLowerCase() || "auto";
  if (mode === "slack" || mode === "sandbox") return mode;
  if (mode !== "auto") {
    throw new ConfigError([
      `VMBOT_MODE must be auto, slack or sandbox (it is "${env.VMBOT_MODE ?? ""}")`,
    ]);
  }
  return SLACK_CREDENTIALS.every((name) => blank(env[name])) ? "sandbox" : "slack";
}
