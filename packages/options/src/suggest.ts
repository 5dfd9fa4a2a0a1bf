// "Did you mean" hints for a mistyped flag or config-file key.

// Up to two edits: enough for a swapped pair of letters (`--wrokers`), which
// is two.
const MAX_DISTANCE = 2;

/** `; did you mean --x?` for the closest candidate, or the only one `name` abbreviates; '' when none. */
export function suggest(name: string, candidates: readonly string[], prefix: string): string {
  const extending = candidates.filter((c) => c.startsWith(name));
  let best = extending.length === 1 ? extending[0] : undefined;
  let bestDistance = best === undefined ? MAX_DISTANCE + 1 : 0;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best === undefined ? '' : `; did you mean ${prefix}${best}?`;
}

/**
 * Levenshtein distance. Written here because no maintained package is a
 * production dependency of this workspace: the only one installed,
 * fast-levenshtein 2.0.6, arrives through ESLint (a dev-only tool, unchanged
 * since 2016) and would be missing from the production image. Candidates are
 * a few dozen flag names, so the plain O(|a|·|b|) table is plenty.
 */
export function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}
