// Runs `fn` over items with at most `concurrency` calls in flight: how the integration tests
// create or change their objects quickly without opening one request per object at once.
export async function forEachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < items.length; i = next++) await fn(items[i]!);
    }),
  );
}

/** 0, 1, …, n - 1. */
export const indices = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
