import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Clock } from './clock.ts';
import { TokenBucket } from './rate-limit.ts';

/** A clock whose sleeps advance time instantly and are recorded. */
function fakeClock(): Clock & { sleeps: number[]; advance(ms: number): void } {
  let now = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    advance(ms) {
      now += ms;
    },
    sleep(ms, signal) {
      signal?.throwIfAborted();
      sleeps.push(ms);
      now += ms;
      return Promise.resolve();
    },
  };
}

describe('TokenBucket', () => {
  it('serves a burst without waiting, then paces at qps', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(10, 3, clock);
    for (let i = 0; i < 3; i++) await bucket.take();
    assert.deepEqual(clock.sleeps, []);
    await bucket.take();
    assert.equal(clock.sleeps.length, 1);
    assert.ok(Math.abs(clock.sleeps[0]! - 100) < 1e-6, `waited ${clock.sleeps[0]}`);
    await bucket.take();
    assert.ok(Math.abs(clock.sleeps[1]! - 100) < 1e-6);
  });

  it('reservations queue up: concurrent callers wait 1/qps apart', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(5, 1, clock);
    const waits = [bucket.reserve(), bucket.reserve(), bucket.reserve(), bucket.reserve()];
    assert.deepEqual(
      waits.map((w) => Math.round(w)),
      [0, 200, 400, 600],
    );
  });

  it('refills with elapsed time up to burst', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(2, 4, clock);
    for (let i = 0; i < 4; i++) await bucket.take();
    assert.ok(Math.abs(bucket.available()) < 1e-9);
    clock.advance(1000);
    assert.ok(Math.abs(bucket.available() - 2) < 1e-9);
    clock.advance(60_000);
    assert.equal(bucket.available(), 4);
  });

  it('an aborted waiter gives its reservation back', async () => {
    let now = 0;
    const clock: Clock = {
      now: () => now,
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
        }),
    };
    const bucket = new TokenBucket(1, 1, clock);
    await bucket.take();
    const ac = new AbortController();
    const waiting = bucket.take(ac.signal);
    assert.ok(bucket.available() < 0);
    ac.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    assert.ok(Math.abs(bucket.available()) < 1e-9);
    now += 1000;
    assert.equal(bucket.available(), 1);
  });

  it('rejects at once when already aborted', async () => {
    const bucket = new TokenBucket(1, 1, fakeClock());
    await assert.rejects(bucket.take(AbortSignal.abort()), { name: 'AbortError' });
    assert.equal(bucket.available(), 1);
  });

  it('validates its parameters', () => {
    assert.throws(() => new TokenBucket(0, 1), RangeError);
    assert.throws(() => new TokenBucket(1, 0), RangeError);
  });

  it('waits for real with the system clock', async () => {
    const bucket = new TokenBucket(100, 1);
    const start = performance.now();
    await bucket.take();
    await bucket.take();
    await bucket.take();
    const elapsed = performance.now() - start;
    assert.ok(elapsed >= 15, `elapsed ${elapsed}`);
  });
});
