import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, realClock } from './clock.ts';
import { TokenBucket } from './token-bucket.ts';

/** Settles `p` if the clock has already let it through, without moving time. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return done;
}

describe('TokenBucket.take', () => {
  it('serves a burst without waiting, then waits 1/qps per token', async () => {
    const clock = new FakeClock();
    const bucket = TokenBucket.perSecond(10, 3, clock);
    for (let i = 0; i < 3; i++) await bucket.take();
    assert.equal(clock.pendingTimers(), 0, 'the burst never waits');

    const fourth = bucket.take();
    clock.advance(99);
    assert.equal(await settled(fourth), false);
    clock.advance(1);
    assert.equal(await settled(fourth), true);
  });

  it('hands back the reservation of an aborted waiter', async () => {
    const clock = new FakeClock();
    const bucket = TokenBucket.perSecond(1, 1, clock);
    await bucket.take();
    const ac = new AbortController();
    const waiting = bucket.take(ac.signal);
    assert.ok(bucket.available() < 0);
    ac.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    assert.ok(Math.abs(bucket.available()) < 1e-9);
    clock.advance(1000);
    assert.equal(bucket.available(), 1);
  });

  it('rejects at once, taking nothing, when already aborted', async () => {
    const bucket = TokenBucket.perSecond(1, 1, new FakeClock());
    await assert.rejects(bucket.take(AbortSignal.abort()), { name: 'AbortError' });
    assert.equal(bucket.available(), 1);
  });

  it('waits for real on the real clock', async () => {
    const bucket = TokenBucket.perSecond(100, 1, realClock);
    const start = performance.now();
    await bucket.take();
    await bucket.take();
    await bucket.take();
    const elapsed = performance.now() - start;
    assert.ok(elapsed >= 15, `elapsed ${elapsed}`);
  });
});

describe('TokenBucket.reserve', () => {
  it('lets a burst through, then spaces reservations 1/qps apart and refills up to the burst', () => {
    const clock = new FakeClock();
    const bucket = TokenBucket.perSecond(10, 3, clock);
    const reserve = (n: number): number[] => Array.from({ length: n }, () => bucket.reserve());

    assert.deepEqual(reserve(5), [0, 0, 0, 100, 200]);
    // Two tokens were borrowed; 300 ms bring 3, leaving one free.
    clock.advance(300);
    assert.deepEqual(reserve(2), [0, 100]);
    // A long idle period refills only up to the burst.
    clock.advance(60_000);
    assert.deepEqual(reserve(4), [0, 0, 0, 100]);
  });

  it('never waits when the rate is infinite', () => {
    const bucket = TokenBucket.perSecond(Infinity, 1, new FakeClock());
    assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 0]);
  });
});

describe('TokenBucket.tryTake', () => {
  it('spends the burst, refuses when empty without borrowing, and regains one token per interval', () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(300_000, 2, clock);
    assert.deepEqual([bucket.tryTake(), bucket.tryTake(), bucket.tryTake()], [true, true, false]);
    assert.equal(bucket.available(), 0, 'a refusal takes nothing');
    clock.advance(299_999);
    assert.equal(bucket.tryTake(), false);
    clock.advance(1);
    assert.deepEqual([bucket.tryTake(), bucket.tryTake()], [true, false]);
  });

  it('never refuses when the interval is zero', () => {
    const bucket = new TokenBucket(0, 1, new FakeClock());
    assert.deepEqual([bucket.tryTake(), bucket.tryTake(), bucket.tryTake()], [true, true, true]);
  });
});

describe('TokenBucket parameters', () => {
  it('are validated with a RangeError', () => {
    assert.throws(() => TokenBucket.perSecond(0, 1), RangeError);
    assert.throws(() => TokenBucket.perSecond(Number.NaN, 1), RangeError);
    assert.throws(() => TokenBucket.perSecond(1, 0), RangeError);
    assert.throws(() => new TokenBucket(-1, 1), RangeError);
    assert.throws(() => new TokenBucket(Infinity, 1), RangeError);
  });
});
