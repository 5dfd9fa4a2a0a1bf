/**
 * Exponential backoff with full jitter between reconnects: client-go's
 * reflector defaults (800 ms initial, doubling, 30 s cap), so that many
 * informers that lose the API server at once don't come back in lockstep.
 */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  factor: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 800, maxMs: 30_000, factor: 2 };

/** The wait before retry number `failures` (1-based): uniform in [d/2, d], d = min(max, initial * factor^(failures-1)). */
export function backoffDelay(
  failures: number,
  opts: BackoffOptions = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  const d = Math.min(opts.maxMs, opts.initialMs * opts.factor ** Math.max(0, failures - 1));
  return d / 2 + (d / 2) * random();
}
