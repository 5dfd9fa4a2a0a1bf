import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '@regulon/util';
import { DelayingQueue } from './delaying.ts';

// Everything a delaying queue has made ready so far, in hand-out order. Bounded, so a queue
// that keeps re-queueing fails the test instead of hanging it.
async function takeReady(q: DelayingQueue): Promise<string[]> {
  const items: string[] = [];
  while (q.len() > 0) {
    if (items.length > 100) assert.fail(`queue never ran dry: ${items.slice(0, 10).join(', ')}...`);
    const r = await q.get();
    if (r.shutdown) break;
    items.push(r.item);
    q.done(r.item);
  }
  return items;
}

describe('DelayingQueue', () => {
  it('adds an item only once its delay has elapsed on the clock', async () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    q.addAfter('a', 50);

    clock.advance(49);
    assert.equal(q.len(), 0);
    assert.equal(q.waitingLen(), 1);

    clock.advance(1);
    assert.deepEqual(await takeReady(q), ['a']);
    assert.equal(q.waitingLen(), 0);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('releases items in ready-time order, ties in scheduling order', async () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    q.addAfter('late', 30);
    q.addAfter('early', 10);
    q.addAfter('tie-1', 20);
    q.addAfter('tie-2', 20);
    assert.equal(clock.pendingTimers(), 1, 'one timer for all waiting items');

    clock.advance(10);
    assert.deepEqual(await takeReady(q), ['early']);
    clock.advance(100);
    assert.deepEqual(await takeReady(q), ['tie-1', 'tie-2', 'late']);
  });

  it('lets a shorter delay replace a longer one for a waiting item, and ignores a longer one', async () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    q.addAfter('shorter-wins', 1000);
    q.addAfter('shorter-wins', 100);
    q.addAfter('longer-ignored', 100);
    q.addAfter('longer-ignored', 1000);
    assert.equal(q.waitingLen(), 2);

    clock.advance(100);
    assert.deepEqual(await takeReady(q), ['shorter-wins', 'longer-ignored']);
    clock.advance(10_000);
    assert.equal(q.len(), 0, 'the superseded schedules must not add the items again');
  });

  it('honours delays longer than a Node timer can express', () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    const thirtyDays = 30 * 24 * 3600 * 1000;
    q.addAfter('a', thirtyDays);
    assert.equal(clock.step(), true);
    assert.equal(clock.now(), 2 ** 31 - 1, 'the first hop is capped at the Node timer limit');
    assert.equal(q.len(), 0);
    assert.equal(clock.pendingTimers(), 1, 're-armed for the rest of the delay');
    clock.advance(thirtyDays - 1 - clock.now());
    assert.equal(q.len(), 0);
    clock.advance(1);
    assert.equal(q.len(), 1);
  });

  it('adds immediately when the delay is not positive', () => {
    const q = new DelayingQueue({ clock: new FakeClock() });
    q.addAfter('zero', 0);
    q.addAfter('negative', -5);
    assert.equal(q.len(), 2);
    assert.equal(q.waitingLen(), 0);
  });

  it('drops waiting items and cancels its timer on shutdown', () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    q.addAfter('a', 10);
    assert.equal(clock.pendingTimers(), 1);

    q.shutDown();
    assert.equal(clock.pendingTimers(), 0);
    q.addAfter('b', 10);
    clock.advance(1000);
    assert.equal(q.len(), 0);
    assert.equal(q.waitingLen(), 0);
  });
});
