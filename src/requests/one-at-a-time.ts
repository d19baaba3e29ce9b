/**
 * Work on one request done one at a time within this process: each caller waits for the one
 * before it. What reads the store and then writes what it read (an approval counted, then the
 * count shown) stays consistent when another click on the same request arrives meanwhile.
 * Keyed by the store the work uses, so that two bots in one process never wait for each other.
 */
const queues = new WeakMap<object, Map<string, Promise<unknown>>>();

export async function oneAtATime<T>(
  store: object,
  key: string,
  work: () => Promise<T>,
): Promise<T> {
  let byKey = queues.get(store);
  if (byKey === undefined) {
    byKey = new Map();
    queues.set(store, byKey);
  }
  const before = byKey.get(key) ?? Promise.resolve();
  const mine = before.then(work, work);
  const settled = mine.catch(() => undefined);
  byKey.set(key, settled);
  try {
    return await mine;
  } finally {
    if (byKey.get(key) === settled) byKey.delete(key);
  }
}
