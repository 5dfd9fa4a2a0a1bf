export { FakeClock, abortReason, realClock, sleep, timeoutSignal } from './clock.ts';
export type { Clock, TimerHandle } from './clock.ts';
export { backoffDelay } from './backoff.ts';
export type { Backoff } from './backoff.ts';
export { TokenBucket } from './token-bucket.ts';
export { silentLogger } from './logger.ts';
export type { Logger } from './logger.ts';
export { oncePerRegistry, registeredMetric } from './metrics.ts';
export type { MetricsRegistry } from './metrics.ts';
