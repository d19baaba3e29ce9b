/**
 * The bot's entry point, and all the production image runs (`node dist/main.js`): the bot for a
 * real Slack workspace. The sandbox is not part of this build; `npm start` runs it from a clone
 * of the repository (`sandbox/main.ts`).
 */
import { chooseMode } from "./mode.js";
import { environment, fail, failToStart, runVmbot } from "./run.js";

const NO_SANDBOX = [
  "vmbot cannot start: no Slack credentials are set (or VMBOT_MODE is sandbox), and this build has no sandbox.",
  "To run the bot for your workspace, set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (or SLACK_APP_TOKEN): see .env.example.",
  "To try vmbot without Slack, run `npm start` in a clone of the repository: it opens the sandbox.",
].join("\n");

async function main(): Promise<void> {
  const env = environment();
  if (chooseMode(env) === "sandbox") fail(NO_SANDBOX);
  await runVmbot(env);
}

main().catch((error: unknown) => failToStart(error));
