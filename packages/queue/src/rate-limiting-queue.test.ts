import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '@regulon/util';
import { RateLimitingQueue } from './rate-limiting-queue.ts';
import { ItemExponentialFailureRateLimiter } from './rate-limiters.ts';

describe('RateLimitingQueue', () => {
  it('re-adds an item after the delay its limiter prescribes, growing per failure until forgotten', async () => {
    const clock = new FakeClock();
    const q = new RateLimitingQueue({
      clock,
      rateLimiter: new ItemExponentialFailureRateLimiter<string>(5, 1000),
    });

    const failOnceMore = async (expectedDelay: number): Promise<void> => {
      q.addRateLimited('k');
      clock.advance(expectedDelay - 1);
      assert.equal(q.len(), 0, `not ready before ${expectedDelay}ms`);
      clock.advance(1);
      const r = await q.get();
      assert.deepEqual(r, { item: 'k', shutdown: false });
      q.done('k');
    };

    await failOnceMore(5);
    await failOnceMore(10);
    await failOnceMore(20);
    assert.equal(q.numRequeues('k'), 3);

    q.forget('k');
    assert.equal(q.numRequeues('k'), 0);
    await failOnceMore(5);
  });

  it('uses the default controller limiter on the queue clock when none is given', () => {
    const clock = new FakeClock();
    const q = new RateLimitingQueue({ clock });
    q.addRateLimited('k');
    clock.advance(4);
    assert.equal(q.len(), 0);
    clock.advance(1);
    assert.equal(q.len(), 1);
  });

  it('does not record failures for adds refused during shutdown', () => {
    const q = new RateLimitingQueue({ clock: new FakeClock() });
    q.shutDown();
    q.addRateLimited('k');
    assert.equal(q.numRequeues('k'), 0);
    assert.equal(q.len(), 0);
  });
});
