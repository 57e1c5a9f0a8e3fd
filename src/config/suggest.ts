/**
 * "Did you mean …?" for a misspelt name: the closest known one, by edit distance, when it is close
 * enough to be what was meant. Shared by the config's unknown keys and the graph files' unknown
 * names, so both suggest by one rule.
 */

/** Levenshtein distance; `ignoreCase` compares letters without case. */
export function editDistance(a: string, b: string, ignoreCase = false): number {
  const same = ignoreCase ? (x?: string, y?: string) => x?.toLowerCase() === y?.toLowerCase() : (x?: string, y?: string) => x === y;
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] ?? 0;
      row[j] = Math.min(above + 1, (row[j - 1] ?? 0) + 1, diagonal + (same(a[i - 1], b[j - 1]) ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] ?? 0;
}

export interface ClosestOptions {
  readonly ignoreCase?: boolean;
  /** A known name that starts with the unknown one counts as close, however far. */
  readonly prefix?: boolean;
}

/** The known name closest to `unknown`, within a third of its length (at least 2 edits); undefined when none is. */
export function closestName(unknown: string, known: readonly string[], options: ClosestOptions = {}): string | undefined {
  return known
    .map((candidate) => ({ candidate, distance: editDistance(unknown, candidate, options.ignoreCase) }))
    .filter(({ candidate, distance }) => distance <= Math.max(2, Math.floor(unknown.length / 3)) || (options.prefix === true && candidate.startsWith(unknown)))
    .sort((a, b) => a.distance - b.distance)[0]?.candidate;
}
