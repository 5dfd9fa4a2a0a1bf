import { TokenBucket, backoffDelay, realClock, type Backoff, type Clock } from '@regulon/util';

/** Decides how long an item must wait before it is retried. */
export interface RateLimiter<T> {
  /** Records a failure of `item` and returns how many milliseconds to wait before retrying it. */
  when(item: T): number;
  /** Stops tracking `item`: its next failure is treated as the first. */
  forget(item: T): void;
  /** How many failures have been recorded for `item` since it was last forgotten. */
  numRequeues(item: T): number;
}

/** First retry delay of the per-item exponential backoff (client-go's controller default). */
export const DEFAULT_BASE_DELAY_MS = 5;
/** Cap of the per-item exponential backoff: 1000 s, so a broken object is still retried every ~17 min. */
export const DEFAULT_MAX_DELAY_MS = 1_000_000;
/** Sustained retry rate across all items of the default bucket limiter. */
export const DEFAULT_QPS = 10;
/** How many retries the default bucket limiter lets through before spacing them at {@link DEFAULT_QPS}. */
export const DEFAULT_BURST = 100;

/**
 * Per-item backoff: `baseMs * 2^failures`, capped at `maxMs`. Failures are counted until
 * {@link forget} is called, typically after a successful reconcile.
 */
export class ItemExponentialFailureRateLimiter<T> implements RateLimiter<T> {
  // No jitter: client-go's per-item backoff is deterministic, and the overall bucket
  // already spreads a mass failure out.
  readonly #backoff: Backoff;
  readonly #failures = new Map<T, number>();

  constructor(baseMs: number = DEFAULT_BASE_DELAY_MS, maxMs: number = DEFAULT_MAX_DELAY_MS) {
    if (!(baseMs >= 0)) throw new RangeError(`baseMs must be >= 0, got ${baseMs}`);
    if (!(maxMs >= baseMs)) throw new RangeError(`maxMs must be >= baseMs (${baseMs}), got ${maxMs}`);
    this.#backoff = { initialMs: baseMs, maxMs };
  }

  when(item: T): number {
    const failures = this.#failures.get(item) ?? 0;
    this.#failures.set(item, failures + 1);
    return backoffDelay(failures, this.#backoff);
  }

  forget(item: T): void {
    this.#failures.delete(item);
  }

  numRequeues(item: T): number {
    return this.#failures.get(item) ?? 0;
  }
}

/**
 * A token bucket shared by all items (the overall retry rate), refilled at `qps` tokens
 * per second up to `burst`. `when()` reserves a token even if it is not yet available and
 * returns how long until it is, so reservations queue up behind each other.
 */
export class BucketRateLimiter<T = unknown> implements RateLimiter<T> {
  readonly #bucket: TokenBucket;

  constructor(qps: number = DEFAULT_QPS, burst: number = DEFAULT_BURST, clock: Clock = realClock) {
    this.#bucket = TokenBucket.perSecond(qps, burst, clock);
  }

  when(_item: T): number {
    return this.#bucket.reserve();
  }

  forget(_item: T): void {}

  numRequeues(_item: T): number {
    return 0;
  }
}

/** Combines limiters: an item waits as long as the strictest of them demands. */
export class MaxOfRateLimiter<T> implements RateLimiter<T> {
  readonly #limiters: readonly RateLimiter<T>[];

  constructor(...limiters: RateLimiter<T>[]) {
    if (limiters.length === 0) throw new RangeError('MaxOfRateLimiter needs at least one limiter');
    this.#limiters = limiters;
  }

  when(item: T): number {
    // Every limiter must see the failure (not just the winner) so their state stays in step.
    let max = 0;
    for (const limiter of this.#limiters) {
      const d = limiter.when(item);
      if (d > max) max = d;
    }
    return max;
  }

  forget(item: T): void {
    for (const limiter of this.#limiters) limiter.forget(item);
  }

  numRequeues(item: T): number {
    let max = 0;
    for (const limiter of this.#limiters) {
      const n = limiter.numRequeues(item);
      if (n > max) max = n;
    }
    return max;
  }
}

/**
 * client-go's controller default: per-item exponential backoff from {@link DEFAULT_BASE_DELAY_MS}
 * to {@link DEFAULT_MAX_DELAY_MS}, bounded overall by a {@link DEFAULT_QPS}/{@link DEFAULT_BURST}
 * token bucket so a mass failure cannot turn into a retry storm.
 */
export function defaultControllerRateLimiter<T>(clock: Clock = realClock): RateLimiter<T> {
  return new MaxOfRateLimiter<T>(
    new ItemExponentialFailureRateLimiter<T>(DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_DELAY_MS),
    new BucketRateLimiter<T>(DEFAULT_QPS, DEFAULT_BURST, clock),
  );
}
