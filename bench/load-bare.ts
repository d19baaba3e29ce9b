import { loadConfig } from "../src/config.js";
import { encodeCreateMetadata } from "../src/actions/create-submit.js";
import { createModal, FORM_DEFAULTS } from "../src/views/create-modal.js";
import { CHANNEL } from "../test/support/harness.js";
import { startBareBolt } from "./bare-bolt.js";

/**
 * The load benchmark's baseline, in a process of its own like the bot's (`bench/load-bot.ts`)
 * and started with the same Node options: a bare Bolt app (`bench/bare-bolt.ts`) configured from
 * the same environment. The modal it opens is vmbot's create form as vmbot first opens it, built
 * once (in the channel the load benchmark's commands come from), so that both send Slack the same view
 * and receive the same submissions. Prints
 * `port <n>` once it listens; stops on SIGTERM.
 */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const view = createModal({
    nodes: config.vm.nodes,
    templates: config.vm.templates,
    defaults: { gateway: config.vm.defaultGateway, dns: config.vm.defaultDns, ...FORM_DEFAULTS },
    privateMetadata: encodeCreateMetadata({ channel: config.slack.channel ?? CHANNEL }),
  });
  const bare = await startBareBolt({
    signingSecret: config.slack.signingSecret ?? "",
    botToken: config.slack.botToken,
    slackApiUrl: config.slack.apiUrl ?? "https://slack.com/api/",
    gitlabUrl: config.gitlab.url,
    gitlabToken: process.env.GITLAB_TOKEN ?? "",
    project: config.gitlab.project,
    view,
  });
  process.stdout.write(`port ${bare.port}\n`);
  process.on("SIGTERM", () => {
    void bare.close().then(() => process.exit(0));
  });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
