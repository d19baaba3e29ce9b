import { webApi } from "@slack/bolt";
import type { SocketModeReceiver } from "@slack/bolt";
import { slackClientOptions } from "../app.js";
import type { Config } from "../config.js";
import { boltLogger, type Logger } from "../logger.js";
import type { Redactor } from "../redact.js";
import { StartupError } from "./errors.js";

/** Slack errors that mean the bot token itself is wrong: no point in retrying. */
const FATAL_AUTH_ERRORS = new Set([
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "token_expired",
]);

const DEFAULT_RETRY_MS = 30_000;

export interface SlackLinkOptions {
  config: Config;
  redactor: Redactor;
  log: Logger;
  /** Socket Mode's receiver: connected only while its socket is. */
  socket: SocketModeReceiver | undefined;
  retryMs?: number;
}

export interface SlackLink {
  /** Whether the bot is connected to Slack, and why not when it is not. */
  state(): { connected: true } | { connected: false; reason: string };
  /**
   * Asks Slack whether it takes the bot token, once. A refused token stops the start; an
   * unreachable Slack is retried in the background until it answers.
   */
  verify(): Promise<void>;
  stop(): void;
}

const refusedWords = (code: string) =>
  `Slack refused SLACK_BOT_TOKEN (${code}): reinstall the app and copy its Bot User OAuth Token.`;

/** The bot's tie to Slack, as `/healthz` reports it: the token check, then Socket Mode's socket. */
export function createSlackLink(options: SlackLinkOptions): SlackLink {
  const { config, log, socket } = options;
  let connected = false;
  let reason = "connecting to Slack";
  let retryTimer: NodeJS.Timeout | undefined;
  let stopped = false;
  // One attempt per check, so start-up is never held up by the client's retries.
  const probe = new webApi.WebClient(config.slack.botToken, {
    ...slackClientOptions(config, options.redactor),
    retryConfig: { retries: 0 },
    timeout: 5_000,
    logger: boltLogger(log),
  });

  const check = async (): Promise<void> => {
    try {
      const auth = await probe.auth.test();
      if (!socket) connected = true;
      log.info({ team: auth.team, botUser: auth.user_id }, "Slack accepted the bot token");
    } catch (error) {
      const code = (error as { data?: { error?: string } }).data?.error;
      if (code !== undefined && FATAL_AUTH_ERRORS.has(code))
        throw new StartupError(refusedWords(code));
      connected = false;
      reason = `Slack is not reachable (${code ?? (error as Error).message}); retrying`;
      log.warn({ err: error }, "could not reach Slack; retrying in 30 seconds");
      if (!stopped) retryTimer = setTimeout(retry, options.retryMs ?? DEFAULT_RETRY_MS);
      retryTimer?.unref();
    }
  };
  /** A retry that finds the token refused stops retrying, and `/healthz` says so from then on. */
  const retry = () => {
    check().catch((error: unknown) => {
      connected = false;
      reason = error instanceof Error ? error.message : String(error);
      log.error({ err: error }, "Slack refused the bot token; no longer retrying");
    });
  };

  socket?.client.on("connected", () => {
    connected = true;
  });
  socket?.client.on("disconnected", () => {
    connected = false;
    reason = "Socket Mode is disconnected from Slack";
  });

  return {
    state: () => (connected ? { connected: true } : { connected: false, reason }),
    verify: check,
    stop() {
      stopped = true;
      clearTimeout(retryTimer);
    },
  };
}
