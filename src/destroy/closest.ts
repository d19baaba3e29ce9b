/** How many known names an unknown one is answered with at most. */
const SHOWN = 3;

/** Edits (insert, delete, replace) from `a` to `b`. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const replaced = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, replaced));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * The known names closest to `asked`, closest first: those a few edits away (a third of the
 * name's length, at least two) or that contain it or are contained in it.
 */
export function closestNames(asked: string, known: readonly string[]): string[] {
  const limit = Math.max(2, Math.floor(asked.length / 3));
  return known
    .map((name) => ({ name, distance: editDistance(asked, name) }))
    .filter(
      ({ name, distance }) => distance <= limit || name.includes(asked) || asked.includes(name),
    )
    .sort((a, b) => a.distance - b.distance || a.name.localeCompare(b.name))
    .slice(0, SHOWN)
    .map(({ name }) => name);
}
