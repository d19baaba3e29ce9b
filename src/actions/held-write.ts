import type { RequestVerdict } from "../policy/request-check.js";
import type { HoldGuard, QuotaGuard } from "../store/store.js";
import { holdGuard } from "../vm/conflicts.js";
import type { VmSpec } from "../vm/spec.js";

/** A write refused for what stands in its way, in the caller's words. */
export interface Refused<R> {
  refused: R;
}

/**
 * A create request written with its guard: nothing may hold its name or address, and it must
 * still fit the quotas it was checked against (`quota`). When the write is refused, what stood in
 * its way is looked for again: what holds the name or address (`taken`), then the quotas
 * (`recheck`), and said in the caller's words. When neither is found (what held it let go before
 * it could be said), the write is tried once more; after that, undefined.
 */
export async function writeHeld<T, R>(options: {
  spec: VmSpec;
  quota: QuotaGuard | undefined;
  write: (guard: HoldGuard) => Promise<T | undefined>;
  taken: () => Promise<R | undefined>;
  recheck: () => Promise<RequestVerdict>;
  overQuota: (errors: Extract<RequestVerdict, { ok: false }>["errors"]) => R;
}): Promise<T | Refused<R> | undefined> {
  let { quota } = options;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const written = await options.write({ ...holdGuard(options.spec), ...(quota && { quota }) });
    if (written !== undefined) return written;
    const taken = await options.taken();
    if (taken !== undefined) return { refused: taken };
    if (quota === undefined) continue;
    const verdict = await options.recheck();
    if (!verdict.ok) return { refused: options.overQuota(verdict.errors) };
    quota = verdict.quota;
  }
  return undefined;
}
