import { TRANSITIONS, type RequestStatus } from "../../src/requests/lifecycle.js";
import type { RequestRecord, Store } from "../../src/store/store.js";
import type { AsyncStore } from "../../src/store/async.js";

/** The shortest chain of moves the transition table lists from `from` to `to` (both excluded). */
export function pathTo(from: RequestStatus, to: RequestStatus): RequestStatus[] {
  const previous = new Map<RequestStatus, RequestStatus>();
  const queue: RequestStatus[] = [from];
  for (let at = queue.shift(); at !== undefined; at = queue.shift()) {
    if (at === to) break;
    for (const next of TRANSITIONS[at]) {
      if (next === from || previous.has(next)) continue;
      previous.set(next, at);
      queue.push(next);
    }
  }
  if (from === to) return [];
  if (!previous.has(to)) throw new Error(`the table has no way from ${from} to ${to}`);
  const path: RequestStatus[] = [to];
  for (let at = previous.get(to); at !== undefined && at !== from; at = previous.get(at)) {
    path.unshift(at);
  }
  return path;
}

/**
 * Takes a stored request to `to` through the store's own transitions, the way the bot would get
 * it there: a test never writes a status the table would refuse.
 */
export function moveTo(store: Store, id: string, to: RequestStatus): RequestRecord {
  let current = store.getRequest(id);
  if (current === undefined) throw new Error(`no request ${id}`);
  for (const status of pathTo(current.status, to)) {
    const moved = store.transition(id, [current.status], status);
    if (moved === undefined) throw new Error(`${id} did not move to ${status}`);
    current = moved;
  }
  return current;
}

/** `moveTo` through the bot's store, whichever engine is behind it. */
export async function moveToAsync(
  store: AsyncStore,
  id: string,
  to: RequestStatus,
): Promise<RequestRecord> {
  let current = await store.getRequest(id);
  if (current === undefined) throw new Error(`no request ${id}`);
  for (const status of pathTo(current.status, to)) {
    const moved = await store.transition(id, [current.status], status);
    if (moved === undefined) throw new Error(`${id} did not move to ${status}`);
    current = moved;
  }
  return current;
}
