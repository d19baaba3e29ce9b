/**
 * What `npm start` runs: the sandbox when no Slack credential is set (or `VMBOT_MODE=sandbox`),
 * else the bot itself, exactly as its own entry (`src/main.ts`) runs it.
 */
import { chooseMode } from "../src/mode.js";
import { sandboxSettings } from "./settings.js";
import { environment, failToStart, runVmbot, stopOnSignals, type RawEnv } from "../src/run.js";

/** The sandbox: the real bot against a simulated Slack, GitLab, Proxmox and Vault, and a page. */
async function runSandbox(env: RawEnv): Promise<void> {
  const settings = sandboxSettings(env);
  // Loaded only here: in Slack mode none of the simulators is loaded.
  const { startSandbox } = await import("./sandbox.js");
  const running = await startSandbox(settings);
  const rule = "─".repeat(76);
  process.stdout.write(
    [
      rule,
      `  vmbot sandbox: open ${running.url}`,
      "  Slack, GitLab, Proxmox and Vault are simulated on this machine; nothing real is touched.",
      "  To connect a real Slack workspace instead, set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET",
      "  (see .env.example and the README), or VMBOT_MODE=slack to require them.",
      rule,
      "",
    ].join("\n"),
  );
  stopOnSignals({ log: running.bot.log, stop: () => running.stop() });
}

async function main(): Promise<void> {
  const env = environment();
  await (chooseMode(env) === "sandbox" ? runSandbox(env) : runVmbot(env));
}

main().catch((error: unknown) => failToStart(error));
