import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '@regulon/util';
import {
  BucketRateLimiter,
  DEFAULT_BURST,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  defaultControllerRateLimiter,
} from './rate-limiters.ts';
import type { RateLimiter } from './rate-limiters.ts';

const whenN = <T>(limiter: RateLimiter<T>, item: T, n: number): number[] =>
  Array.from({ length: n }, () => limiter.when(item));

describe('ItemExponentialFailureRateLimiter', () => {
  it('doubles from the base delay per failure and caps at the maximum', () => {
    const limiter = new ItemExponentialFailureRateLimiter<string>(5, 1000);
    assert.deepEqual(whenN(limiter, 'a', 10), [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
  });

  it('defaults to 5ms doubling up to 1000s', () => {
    const limiter = new ItemExponentialFailureRateLimiter<string>();
    const delays = whenN(limiter, 'a', 20);
    assert.deepEqual(delays.slice(0, 3), [5, 10, 20]);
    assert.equal(delays[17], 5 * 2 ** 17);
    assert.equal(delays[18], 1_000_000);
    assert.equal(delays[19], 1_000_000);
  });

  it('tracks failures per item and forget() resets only that item', () => {
    const limiter = new ItemExponentialFailureRateLimiter<string>(5, 1000);
    whenN(limiter, 'a', 3);
    limiter.when('b');
    assert.equal(limiter.numRequeues('a'), 3);
    assert.equal(limiter.numRequeues('b'), 1);

    limiter.forget('a');
    assert.equal(limiter.numRequeues('a'), 0);
    assert.equal(limiter.when('a'), 5);
    assert.equal(limiter.when('b'), 10);
  });
});

describe('BucketRateLimiter', () => {
  it('lets a burst through, then spaces reservations at 1/qps and refills over time', () => {
    const clock = new FakeClock();
    const limiter = new BucketRateLimiter<string>(10, 3, clock);

    assert.deepEqual(whenN(limiter, 'x', 5), [0, 0, 0, 100, 200]);
    assert.equal(limiter.numRequeues('x'), 0);

    // The two reservations above borrowed 2 tokens; 300ms refill 3, leaving 1 free.
    clock.advance(300);
    assert.deepEqual(whenN(limiter, 'y', 2), [0, 100]);

    // A long idle period refills only up to the burst size.
    clock.advance(60_000);
    assert.deepEqual(whenN(limiter, 'z', 4), [0, 0, 0, 100]);
  });
});

describe('MaxOfRateLimiter', () => {
  it('waits as long as the strictest limiter and forwards forget/numRequeues to all', () => {
    const slow = new ItemExponentialFailureRateLimiter<string>(100, 10_000);
    const fast = new ItemExponentialFailureRateLimiter<string>(1, 10_000);
    const fixed: RateLimiter<string> = { when: () => 150, forget: () => {}, numRequeues: () => 7 };
    const limiter = new MaxOfRateLimiter(fast, fixed, slow);

    assert.deepEqual(whenN(limiter, 'a', 3), [150, 200, 400]);
    assert.equal(fast.numRequeues('a'), 3, 'every limiter must see every failure');
    assert.equal(limiter.numRequeues('a'), 7);

    limiter.forget('a');
    assert.equal(slow.numRequeues('a'), 0);
    assert.equal(fast.numRequeues('a'), 0);
  });
});

describe('defaultControllerRateLimiter', () => {
  it('is per-item exponential from 5ms, bounded overall by a 10 qps / 100 burst bucket', () => {
    const clock = new FakeClock();
    const limiter = defaultControllerRateLimiter<string>(clock);

    assert.deepEqual(whenN(limiter, 'a', 3), [5, 10, 20]);
    for (let i = 3; i < DEFAULT_BURST; i++) limiter.when(`other-${i}`);
    // The bucket is now empty: a fresh item waits for a token (100ms at 10 qps), not 5ms.
    assert.equal(limiter.when('fresh'), 100);
    assert.equal(limiter.numRequeues('a'), 3);
  });
});
