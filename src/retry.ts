/**
 * Bounded retries with jittered exponential back-off, for calls that are safe to repeat (reads).
 * A server's Retry-After is honoured up to the longest single wait.
 */

export interface RetryPolicy {
  /** Further attempts after the first. */
  retries: number;
  baseDelayMs: number;
  /** Longest single wait, including a server's Retry-After. */
  maxDelayMs: number;
}

export const READ_RETRY: RetryPolicy = { retries: 2, baseDelayMs: 250, maxDelayMs: 2_000 };

/** Whether a failure is worth another attempt, and how long the server asked to wait. */
export type Retryable = (error: unknown) => { afterMs?: number } | undefined;

export function backoffMs(attempt: number, policy: RetryPolicy): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export async function retrying<T>(
  attempt: () => Promise<T>,
  retryable: Retryable,
  policy: RetryPolicy = READ_RETRY,
): Promise<T> {
  for (let tries = 0; ; tries += 1) {
    try {
      return await attempt();
    } catch (error) {
      const verdict = tries < policy.retries ? retryable(error) : undefined;
      if (verdict === undefined) throw error;
      const wait =
        verdict.afterMs === undefined
          ? backoffMs(tries, policy)
          : Math.min(verdict.afterMs, policy.maxDelayMs);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** Seconds or an HTTP date, as RFC 9110 allows; undefined when absent or unreadable. */
export function retryAfterMs(
  header: string | null | undefined,
  now = Date.now(),
): number | undefined {
  if (header === null || header === undefined || header.trim() === "") return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
