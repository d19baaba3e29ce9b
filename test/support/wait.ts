export interface WaitOptions {
  /** How long to wait before failing (default 5 s). */
  timeoutMs?: number;
  /** Between two checks (default 20 ms). */
  intervalMs?: number;
  /** A failure that makes waiting pointless (a bot that could not restart): thrown at once. */
  failure?: () => Error | undefined;
  /** Said in the timeout's error after `what`: the last state seen, for instance. */
  detail?: () => string;
}

/**
 * The suite's one way to wait: checks `check` until it gives a value other than undefined and
 * resolves with it, or fails after the timeout naming `what`. `check` may be asynchronous (a
 * request to a server); a number for `options` is the timeout.
 */
export async function waitFor<T>(
  check: () => T | undefined | Promise<T | undefined>,
  what: string,
  options: WaitOptions | number = {},
): Promise<T> {
  const {
    timeoutMs = 5_000,
    intervalMs = 20,
    failure,
    detail,
  } = typeof options === "number" ? { timeoutMs: options } : options;
  const started = Date.now();
  for (;;) {
    const failed = failure?.();
    if (failed !== undefined) throw failed;
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) {
      throw new Error(
        `timed out waiting for ${what}${detail === undefined ? "" : `; ${detail()}`}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
