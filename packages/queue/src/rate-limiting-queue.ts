import { DelayingQueue } from './delaying.ts';
import { priorityOf } from './queue.ts';
import type { AddOptions, QueueKey, WorkQueueOptions } from './queue.ts';
import { defaultControllerRateLimiter } from './rate-limiters.ts';
import type { RateLimiter } from './rate-limiters.ts';

export interface RateLimitingQueueOptions<T> extends WorkQueueOptions {
  /** Defaults to {@link defaultControllerRateLimiter} on the queue's clock. */
  rateLimiter?: RateLimiter<T> | undefined;
}

/** A {@link DelayingQueue} whose retry delays come from a {@link RateLimiter}. */
export class RateLimitingQueue<T extends QueueKey = string> extends DelayingQueue<T> {
  readonly rateLimiter: RateLimiter<T>;

  constructor(options: RateLimitingQueueOptions<T> = {}) {
    super(options);
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter<T>(this.clock);
  }

  /**
   * Re-adds `item` after the delay its rate limiter prescribes, recording one more failure;
   * once the delay is over it is queued at `options.priority`.
   */
  addRateLimited(item: T, options?: AddOptions): void {
    // Consulting the limiter during shutdown would count a failure (and spend a bucket token)
    // for an add that is going to be dropped.
    if (this.shuttingDown()) return;
    // A bad priority must throw before the limiter counts a failure.
    priorityOf(options);
    this.addAfter(item, this.rateLimiter.when(item), options);
  }

  /**
   * Also clears the failure history of the removed items: it would otherwise stay in the
   * limiter for keys that may never come back (a shard handed to another process).
   */
  override removeWhere(remove: (item: T) => boolean): T[] {
    const removed = super.removeWhere(remove);
    for (const item of removed) this.rateLimiter.forget(item);
    return removed;
  }

  /** Clears `item`'s failure history, typically after it was processed successfully. */
  forget(item: T): void {
    this.rateLimiter.forget(item);
  }

  numRequeues(item: T): number {
    return this.rateLimiter.numRequeues(item);
  }
}
