/** One round of a benchmark: its run number and the cells it runs, in order. */
export interface Round<C> {
  run: number;
  cells: C[];
}

/**
 * The rounds that run one N's cells `repeat` times. They are numbered from 1,
 * or on from the highest of `earlierRuns` when adding to runs already made, so
 * each round's pair keeps one number. Even rounds run the cells in reverse
 * order: no subject always goes first, and the order keeps alternating across
 * separate invocations.
 */
export function planRounds<C>(
  cells: readonly C[],
  repeat: number,
  earlierRuns: readonly number[] = [],
): Round<C>[] {
  const first = 1 + Math.max(0, ...earlierRuns);
  return Array.from({ length: repeat }, (_, i) => {
    const run = first + i;
    return { run, cells: run % 2 === 1 ? [...cells] : [...cells].reverse() };
  });
}
