/**
 * Two (or more) concurrent handlers held at one point: the first `count` calls of a store read
 * each wait until all of them are made, so every check has run before any write does.
 */
export function holdUntilAllRead<A extends unknown[], R>(
  read: (...args: A) => Promise<R>,
  count = 2,
): (...args: A) => Promise<R> {
  let reads = 0;
  let allRead!: () => void;
  const all = new Promise<void>((resolve) => (allRead = resolve));
  return async (...args) => {
    const found = await read(...args);
    reads += 1;
    if (reads === count) allRead();
    if (reads <= count) await all;
    return found;
  };
}
