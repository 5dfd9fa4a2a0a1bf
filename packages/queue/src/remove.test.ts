// removeWhere: taking a set of keys out of service (a shard handed to another process)
// without breaking the queue's rules. One test per guarantee, on a fake clock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as drainMicrotasks } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { FakeClock } from '@regulon/util';
import { DelayingQueue } from './delaying.ts';
import { WORKQUEUE_METRIC_NAMES as N } from './metrics.ts';
import { LOW_PRIORITY, WorkQueue } from './queue.ts';
import { RateLimitingQueue } from './rate-limiting-queue.ts';
import { ItemExponentialFailureRateLimiter } from './rate-limiters.ts';
import { drain, getItem } from './testing.ts';

const inNamespace =
  (namespace: string) =>
  (key: string): boolean =>
    key.startsWith(`${namespace}/`);

describe('WorkQueue.removeWhere', () => {
  it('drops the matching queued items and keeps the others in order', async () => {
    const q = new WorkQueue();
    for (const key of ['a/1', 'b/1', 'a/2', 'b/2', 'c/1']) q.add(key);

    assert.deepEqual(q.removeWhere(inNamespace('a')), ['a/1', 'a/2']);
    assert.equal(q.len(), 3);
    assert.deepEqual(await drain(q), ['b/1', 'b/2', 'c/1']);
  });

  it('keeps the priority order, a raised item included, and never hands a removed one out', async () => {
    const q = new WorkQueue();
    q.add('a/low', { priority: LOW_PRIORITY });
    q.add('b/low', { priority: LOW_PRIORITY });
    q.add('b/raised', { priority: LOW_PRIORITY });
    q.add('a/raised', { priority: LOW_PRIORITY });
    q.add('b/default');
    // A raise leaves a stale copy on the low line: neither copy may come back.
    q.add('a/raised');
    q.add('b/raised');

    assert.deepEqual(q.removeWhere(inNamespace('a')).sort(), ['a/low', 'a/raised']);
    assert.deepEqual(await drain(q), ['b/default', 'b/raised', 'b/low']);
    q.add('a/raised', { priority: LOW_PRIORITY });
    assert.deepEqual(await drain(q), ['a/raised'], 'added again, it is queued once');
  });

  it('leaves an item being processed with its worker, drops the add it got meanwhile, and never hands it to a second worker', async () => {
    const q = new WorkQueue();
    q.add('a/1');
    assert.equal(await getItem(q), 'a/1');
    q.add('a/1');
    const second = q.get();

    assert.deepEqual(q.removeWhere(inNamespace('a')), ['a/1']);
    q.done('a/1');
    q.add('b/1');
    assert.deepEqual(await second, { item: 'b/1', shutdown: false }, 'a/1 was not queued again at done()');
    q.done('b/1');
    assert.equal(q.len(), 0);
  });

  it('queues an item added again after the removal while it is processed at done(), as any add during processing', async () => {
    const q = new WorkQueue();
    q.add('a/1');
    assert.equal(await getItem(q), 'a/1');
    q.removeWhere(inNamespace('a'));
    q.add('a/1');
    assert.equal(q.len(), 0, 'its worker still holds it');

    q.done('a/1');
    assert.deepEqual(await drain(q), ['a/1']);
  });

  it('wakes no waiting getter and leaves later adds to reach them', async () => {
    const q = new WorkQueue();
    let taken: string | undefined;
    void q.get().then((r) => (taken = r.shutdown ? 'shutdown' : r.item));
    assert.deepEqual(
      q.removeWhere(() => true),
      [],
    );
    await drainMicrotasks();
    assert.equal(taken, undefined);
    q.add('b/1');
    await drainMicrotasks();
    assert.equal(taken, 'b/1');
  });

  it('takes removed items out of the depth metric and times a later add from that add', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const q = new WorkQueue({ name: 'removals', clock, registry });
    const depth = async (): Promise<number> => {
      const values = (await registry.getSingleMetric(N.depth)?.get())?.values ?? [];
      return values.find((v) => v.labels['name'] === 'removals')?.value ?? NaN;
    };
    q.add('a/1');
    q.add('a/2');
    q.add('b/1');
    assert.equal(await getItem(q), 'a/1');
    q.add('a/1'); // dirty while processing: counted in the depth
    assert.equal(await depth(), 3);

    q.removeWhere(inNamespace('a'));
    assert.equal(await depth(), 1);

    clock.advance(1000);
    q.done('a/1');
    q.add('a/2');
    clock.advance(2);
    assert.deepEqual(await drain(q), ['b/1', 'a/2']);
    assert.equal(await depth(), 0);
    const waited = (await registry.metrics())
      .split('\n')
      .find((l) => l.startsWith(`${N.queueDuration}_sum{name="removals"`));
    // b/1 waited 1002 ms, a/2 2 ms since its new add (not 1002 ms since the removed one).
    assert.equal(Number(waited?.split(' ').at(-1)), 1.004);
  });
});

describe('DelayingQueue.removeWhere', () => {
  it('drops matching items waiting for their delay; the others still arrive in order', async () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    q.addAfter('a/1', 10);
    q.addAfter('b/1', 20);
    q.addAfter('a/2', 30);
    q.addAfter('b/2', 40);
    q.add('a/3');
    q.addAfter('a/3', 5); // queued and waiting: reported once

    assert.deepEqual(q.removeWhere(inNamespace('a')), ['a/3', 'a/1', 'a/2']);
    assert.equal(q.waitingLen(), 2);
    clock.advance(100);
    assert.deepEqual(await drain(q), ['b/1', 'b/2']);
  });

  it('disarms the timer when nothing is left waiting', () => {
    const clock = new FakeClock();
    const q = new DelayingQueue({ clock });
    q.addAfter('a/1', 10);
    assert.equal(clock.pendingTimers(), 1);
    q.removeWhere(inNamespace('a'));
    assert.equal(clock.pendingTimers(), 0);
    assert.equal(q.len(), 0);
  });
});

describe('RateLimitingQueue.removeWhere', () => {
  it('drops a removed item waiting for its retry and forgets its failures', () => {
    const clock = new FakeClock();
    const q = new RateLimitingQueue({
      clock,
      rateLimiter: new ItemExponentialFailureRateLimiter<string>(5, 1000),
    });
    q.addRateLimited('a/1');
    q.addRateLimited('a/1');
    q.addRateLimited('b/1');
    assert.equal(q.numRequeues('a/1'), 2);

    q.removeWhere(inNamespace('a'));
    assert.equal(q.numRequeues('a/1'), 0);
    assert.equal(q.numRequeues('b/1'), 1);
    clock.advance(1000);
    assert.equal(q.len(), 1);
  });
});

describe('DelayingQueue.removeWhere over a large heap', () => {
  it('keeps ready-time order when items are removed from the middle of the heap', async () => {
    const clock = new FakeClock();
    const q = new DelayingQueue<number>({ clock });
    // Deterministic pseudo-random delays (LCG) so a failure is reproducible.
    let seed = 7;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 1000;
    const delays = new Map<number, number>();
    for (let item = 0; item < 200; item++) {
      const delay = 1 + rand();
      delays.set(item, delay);
      q.addAfter(item, delay);
    }
    q.removeWhere((item) => item % 3 === 0);

    const released: number[] = [];
    for (let t = 1; t <= 1000; t++) {
      clock.advance(1);
      while (q.len() > 0) {
        const item = await getItem(q);
        released.push(item);
        q.done(item);
      }
    }
    const expected = [...delays]
      .filter(([item]) => item % 3 !== 0)
      .sort(([a, da], [b, db]) => da - db || a - b)
      .map(([item]) => item);
    assert.deepEqual(released, expected);
  });
});
