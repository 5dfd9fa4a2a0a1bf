import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as drainMicrotasks } from 'node:timers/promises';
import { FakeClock } from '@regulon/util';
import { DelayingQueue } from './delaying.ts';
import { DEFAULT_PRIORITY, LOW_PRIORITY, WorkQueue } from './queue.ts';
import { RateLimitingQueue } from './rate-limiting-queue.ts';
import { BucketRateLimiter, ItemExponentialFailureRateLimiter } from './rate-limiters.ts';
import { drain, getItem } from './testing.ts';

const LOW = { priority: LOW_PRIORITY };
const HIGH = { priority: 10 };

describe('WorkQueue priorities', () => {
  it('hands out higher priorities first, each priority in the order it was added', async () => {
    const q = new WorkQueue();
    q.add('low-1', LOW);
    q.add('default-1');
    q.add('high-1', HIGH);
    q.add('low-2', LOW);
    q.add('default-2', { priority: DEFAULT_PRIORITY });
    q.add('high-2', HIGH);
    q.add('default-3', {});
    assert.equal(q.len(), 7);
    assert.deepEqual(await drain(q), [
      'high-1',
      'high-2',
      'default-1',
      'default-2',
      'default-3',
      'low-1',
      'low-2',
    ]);
  });

  it('queues a key added twice once, at the higher priority, at the end of that priority', async () => {
    const q = new WorkQueue();
    q.add('a', LOW);
    q.add('b', LOW);
    q.add('c');
    q.add('b'); // raised: behind c, which was already waiting at the default priority
    q.add('c', LOW); // a lower priority leaves c where it is
    assert.equal(q.len(), 3);
    assert.deepEqual(await drain(q), ['c', 'b', 'a']);
    assert.equal(q.len(), 0);
  });

  it('keeps first-in-first-out within a priority for a key raised, taken and added low again', async () => {
    const q = new WorkQueue();
    q.add('a', LOW);
    q.add('b', LOW);
    q.add('a'); // leaves a superseded entry for a among the low ones
    assert.equal(await getItem(q), 'a');
    q.done('a');
    q.add('a', LOW); // now behind b, whatever the superseded entry says
    assert.equal(q.len(), 2);
    assert.deepEqual(await drain(q), ['b', 'a']);
  });

  it('never hands a key being processed to a second worker, whatever the priority it is added with', async () => {
    const q = new WorkQueue();
    q.add('k', LOW);
    assert.equal(await getItem(q), 'k');
    q.add('k', HIGH);
    assert.equal(q.len(), 0, 'k must not be queued while a worker holds it');
    const second = q.get();
    let settled = false;
    void second.then(() => (settled = true));
    await drainMicrotasks();
    assert.equal(settled, false, 'k was handed out while still being processed');
    q.done('k');
    assert.deepEqual(await second, { item: 'k', shutdown: false });
  });

  it('re-queues a key added while processing at the highest priority added meanwhile', async () => {
    const q = new WorkQueue();
    q.add('k');
    assert.equal(await getItem(q), 'k');
    q.add('x');
    q.add('k', LOW);
    q.add('k', HIGH);
    q.add('k');
    q.done('k');
    assert.equal(q.len(), 2);
    assert.deepEqual(await drain(q), ['k', 'x']);
  });

  it('gives a low priority item at once to a waiting worker', async () => {
    const q = new WorkQueue();
    const waiting = q.get();
    q.add('a', LOW);
    assert.deepEqual(await waiting, { item: 'a', shutdown: false });
  });

  it('keeps the order with many distinct priorities, lines emptying and filling again', async () => {
    const q = new WorkQueue<number>();
    // Deterministic pseudo-random priorities (LCG) so a failure is reproducible.
    let seed = 7;
    const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 5; round++) {
      const items = Array.from({ length: 60 }, (_, i) => round * 100 + i);
      const priorityOfItem = new Map(items.map((i) => [i, rand(40) - 20]));
      for (const i of items) q.add(i, { priority: priorityOfItem.get(i) as number });
      const expected = [...items].sort(
        (a, b) => (priorityOfItem.get(b) as number) - (priorityOfItem.get(a) as number) || a - b,
      );
      assert.deepEqual(await drain(q), expected, `round ${round}`);
    }
  });

  it('agrees with a simple model over a long random run of adds, raises, takes and dones', async () => {
    // The model: queued entries in a list, taken by (priority desc, order of arrival in it).
    const q = new WorkQueue<number>();
    const pending = new Map<number, number>();
    const processing = new Set<number>();
    let line: Array<{ item: number; priority: number; seq: number }> = [];
    let seq = 0;
    let seed = 2024;
    const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const priorities = [LOW_PRIORITY, DEFAULT_PRIORITY, 5];
    for (let step = 0; step < 5000; step++) {
      const op = rand(10);
      if (op < 6) {
        const item = rand(20);
        const priority = priorities[rand(3)] as number;
        q.add(item, { priority });
        const at = pending.get(item);
        if (at === undefined) {
          pending.set(item, priority);
          if (!processing.has(item)) line.push({ item, priority, seq: seq++ });
        } else if (priority > at) {
          pending.set(item, priority);
          if (!processing.has(item)) {
            line = line.filter((e) => e.item !== item);
            line.push({ item, priority, seq: seq++ });
          }
        }
      } else if (op < 8 && line.length > 0) {
        const next = line.reduce((a, b) =>
          b.priority > a.priority || (b.priority === a.priority && b.seq < a.seq) ? b : a,
        );
        line = line.filter((e) => e !== next);
        pending.delete(next.item);
        processing.add(next.item);
        assert.equal(await getItem(q), next.item, `step ${step}`);
      } else if (processing.size > 0) {
        const item = [...processing][rand(processing.size)] as number;
        processing.delete(item);
        q.done(item);
        const at = pending.get(item);
        if (at !== undefined) line.push({ item, priority: at, seq: seq++ });
      }
      assert.equal(q.len(), line.length, `step ${step}`);
    }
  });

  it('rejects a priority that is not an integer, without queueing anything or recording a failure', () => {
    const clock = new FakeClock();
    const q = new RateLimitingQueue({ clock });
    for (const priority of [Number.NaN, 1.5, Infinity]) {
      assert.throws(() => q.add('a', { priority }), RangeError);
      assert.throws(() => q.addAfter('a', 10, { priority }), RangeError);
      assert.throws(() => q.addRateLimited('a', { priority }), RangeError);
    }
    assert.equal(q.len(), 0);
    assert.equal(q.waitingLen(), 0);
    assert.equal(q.numRequeues('a'), 0, 'no failure recorded');
    assert.equal(clock.pendingTimers(), 0);
  });

  it('still hands out what is queued after shutdown, in priority order, then reports shutdown', async () => {
    const q = new WorkQueue();
    q.add('low', LOW);
    q.add('raised', LOW);
    q.add('default');
    q.add('raised', HIGH);
    q.shutDown();
    q.add('late', HIGH);
    assert.equal(q.len(), 3);
    assert.equal(await getItem(q), 'raised');
    assert.equal(await getItem(q), 'default');
    assert.equal(await getItem(q), 'low');
    // The superseded low entry of `raised` is not handed out a second time.
    assert.deepEqual(await q.get(), { shutdown: true });
  });
});

describe('DelayingQueue priorities', () => {
  it('queues a delayed item at its priority only once its delay is over', async () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    q.add('backlog-1', LOW);
    q.add('backlog-2', LOW);
    q.addAfter('retry', 50);
    q.addAfter('later-low', 50, LOW);

    clock.advance(49);
    assert.equal(q.len(), 2);
    assert.equal(await getItem(q), 'backlog-1', 'not ready yet: the backlog goes first');
    q.done('backlog-1');

    clock.advance(1);
    assert.deepEqual(await drain(q), ['retry', 'backlog-2', 'later-low']);
  });

  it('lets an item scheduled twice keep the earlier time and the higher priority', async () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    q.add('backlog', LOW);
    q.addAfter('a', 100, LOW);
    q.addAfter('a', 20); // earlier and higher
    q.addAfter('b', 20);
    q.addAfter('b', 100, LOW); // later and lower: changes nothing
    assert.equal(q.waitingLen(), 2);

    clock.advance(20);
    assert.deepEqual(await drain(q), ['a', 'b', 'backlog']);
    clock.advance(1000);
    assert.equal(q.len(), 0, 'the superseded schedules must not add the items again');
  });

  it('adds at once, at its priority, when the delay is not positive', async () => {
    const q = new DelayingQueue({ clock: new FakeClock() });
    q.add('a', LOW);
    q.addAfter('b', 0, HIGH);
    assert.deepEqual(await drain(q), ['b', 'a']);
  });

  it('raises an item already queued when its delayed add comes due at a higher priority', async () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    q.add('a', LOW);
    q.add('b', LOW);
    q.addAfter('b', 10);
    clock.advance(10);
    assert.equal(q.len(), 2, 'still queued once');
    assert.deepEqual(await drain(q), ['b', 'a']);
  });
});

describe('RateLimitingQueue priorities', () => {
  it('queues a rate-limited item after its backoff, at its priority, ahead of a low backlog', async () => {
    const clock = new FakeClock();
    const q = new RateLimitingQueue({
      clock,
      rateLimiter: new ItemExponentialFailureRateLimiter<string>(5, 1000),
    });
    for (let i = 0; i < 3; i++) q.add(`backlog-${i}`, LOW);
    q.addRateLimited('failed');
    q.addRateLimited('failed-low', LOW);
    clock.advance(4);
    assert.equal(q.len(), 3);
    clock.advance(1);
    assert.deepEqual(await drain(q), ['failed', 'backlog-0', 'backlog-1', 'backlog-2', 'failed-low']);
    assert.equal(q.numRequeues('failed'), 1);
  });

  it('spaces retries by the overall rate limit whatever their priority', () => {
    const clock = new FakeClock();
    const q = new RateLimitingQueue({ clock, rateLimiter: new BucketRateLimiter<string>(1, 1, clock) });
    q.addRateLimited('first', LOW);
    q.addRateLimited('second', HIGH);
    assert.equal(q.len(), 1, 'the burst of one lets the first through');
    clock.advance(999);
    assert.equal(q.len(), 1, 'a high priority does not skip the bucket');
    clock.advance(1);
    assert.equal(q.len(), 2);
  });
});
