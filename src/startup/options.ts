import type { Schedule } from "../store/postgres/leader.js";
import type { DestinationStream } from "pino";
import type { Clock } from "../clock.js";
import type { CrashPoint } from "../effects.js";
import type { ServerLimits } from "../server.js";

/**
 * How a start differs from production's, for the tests, the sandbox and the benchmarks: none of
 * these is a setting of the bot (the environment, `config.ts`, holds those).
 */
export interface StartOptions {
  /** The address the HTTP server listens on; every interface by default. */
  host?: string;
  /** Where log lines go; stdout by default. */
  logDestination?: DestinationStream;
  gitlabTimeoutMs?: number;
  vaultTimeoutMs?: number;
  proxmoxTimeoutMs?: number;
  /** How long a Proxmox node list is reused (15 seconds by default). */
  nodeListMaxAgeMs?: number;
  /** How long to wait before asking Slack again while it cannot be reached (30 seconds). */
  slackRetryMs?: number;
  /** The HTTP server's bounds, where they differ from DEFAULT_LIMITS (tests). */
  httpLimits?: Partial<ServerLimits>;
  /** Fault injection for crash tests, called at every effect's crash points. */
  onCrashPoint?: (point: CrashPoint) => void;
  /** What time it is for the store, the tracker and the listeners; the machine's by default. */
  clock?: Clock;
  /** How soon the Home tabs are published after a change, and retried after a refusal. */
  home?: { debounceMs?: number; retryMs?: number };
  /** PostgreSQL: when the lead is renewed (timers by default; tests hold renewals back). */
  leaderSchedule?: Schedule;
}
