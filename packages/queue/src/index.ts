// The clock lives in @regulon/util; re-exported because queue users configure it here.
export { FakeClock, realClock } from '@regulon/util';
export type { Clock, TimerHandle } from '@regulon/util';
export { DEFAULT_PRIORITY, LOW_PRIORITY, WorkQueue } from './queue.ts';
export type { AddOptions, GetResult, QueueKey, WorkQueueOptions } from './queue.ts';
export { DelayingQueue } from './delaying.ts';
export { RateLimitingQueue } from './rate-limiting-queue.ts';
export type { RateLimitingQueueOptions } from './rate-limiting-queue.ts';
export {
  BucketRateLimiter,
  DEFAULT_BASE_DELAY_MS,
  DEFAULT_BURST,
  DEFAULT_MAX_DELAY_MS,
  DEFAULT_QPS,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  defaultControllerRateLimiter,
} from './rate-limiters.ts';
export type { RateLimiter } from './rate-limiters.ts';
export { WORKQUEUE_DURATION_BUCKETS, WORKQUEUE_METRIC_NAMES } from './metrics.ts';
export type { MetricsRegistry } from './metrics.ts';
