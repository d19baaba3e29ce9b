import { ConfigError, problemsOf } from "./config.js";
import { EnvSchema, type RawEnv } from "./config/env.js";

export type Mode = "slack" | "sandbox";

const SLACK_CREDENTIALS = ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"] as const;

const blank = (value: string | undefined): boolean => value === undefined || value.trim() === "";

/**
 * `VMBOT_MODE` (read with its rule in the one environment schema): `slack` runs the bot for a
 * real workspace (and fails, naming what is missing, when it is not configured), `sandbox` runs
 * the local sandbox, and `auto` (the default) runs the sandbox only when no Slack credential is
 * set at all.
 */
export function chooseMode(env: RawEnv): Mode {
  const parsed = EnvSchema.pick({ VMBOT_MODE: true }).safeParse({ VMBOT_MODE: env.VMBOT_MODE });
  if (!parsed.success) {
    // The mode's value is no secret, and saying it helps to see a typo.
    throw new ConfigError(
      problemsOf(parsed.error).map((problem) => `${problem} (it is "${env.VMBOT_MODE ?? ""}")`),
    );
  }
  const mode = parsed.data.VMBOT_MODE;
  if (mode !== "auto") return mode;
  return SLACK_CREDENTIALS.every((name) => blank(env[name])) ? "sandbox" : "slack";
}
