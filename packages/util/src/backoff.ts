/**
 * An exponential backoff: the delay starts at `initialMs`, is multiplied by `factor` per
 * attempt and capped at `maxMs`; then a `jitter` share of it is drawn at random.
 *
 * Callers keep their own numbers: the work queue's per-item backoff has no jitter
 * (5 ms doubling to 1000 s), the client's retries and the reflector's reconnects use
 * "equal jitter" (`jitter: 0.5`: half fixed, half random), so that many clients failing
 * together do not come back in lockstep, yet none comes back almost at once.
 */
export interface Backoff {
  /** Delay of the first attempt (attempt 0), before jitter. */
  initialMs: number;
  /** Upper bound of any delay, before jitter. */
  maxMs: number;
  /** Growth per attempt; default 2. */
  factor?: number | undefined;
  /** Share of the delay that is random, from 0 (none, the default) to 1 (all of it). */
  jitter?: number | undefined;
}

/**
 * The delay before attempt number `attempt` (0 for the first): `d = min(maxMs,
 * initialMs * factor^attempt)`, drawn uniformly from `[d * (1 - jitter), d]`.
 */
export function backoffDelay(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const { initialMs, maxMs, factor = 2, jitter = 0 } = backoff;
  // factor ** attempt overflows to Infinity after ~1024 doublings; the cap still applies,
  // and a zero initial delay stays zero instead of becoming 0 * Infinity = NaN.
  const grown = initialMs === 0 ? 0 : initialMs * factor ** attempt;
  const d = grown > maxMs ? maxMs : grown;
  if (jitter === 0) return d;
  return d * (1 - jitter) + d * jitter * random();
}
