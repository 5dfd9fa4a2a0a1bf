import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as drainMicrotasks } from 'node:timers/promises';
import { WorkQueue } from './queue.ts';
import { getItem } from './testing.ts';

// Observes a promise without awaiting it, so a test can assert that it is *still pending*
// after every already-resolved reaction has run (drainMicrotasks), with no timing involved.
function observe<T>(promise: Promise<T>): { settled: boolean; value: T | undefined } {
  const state: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  void promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

describe('WorkQueue', () => {
  it('collapses repeated adds of a waiting item into one', async () => {
    const q = new WorkQueue();
    q.add('ns/a');
    q.add('ns/b');
    q.add('ns/a');
    q.add('ns/a');

    assert.equal(q.len(), 2);
    assert.equal(await getItem(q), 'ns/a');
    assert.equal(await getItem(q), 'ns/b');
    assert.equal(q.len(), 0);
    const third = observe(q.get());
    await drainMicrotasks();
    assert.equal(third.settled, false);
  });

  it('hands items out in the order they were first added', async () => {
    const q = new WorkQueue<number>();
    for (const n of [3, 1, 2, 1, 3]) q.add(n);
    assert.deepEqual([await getItem(q), await getItem(q), await getItem(q)], [3, 1, 2]);
  });

  it('makes get() wait while empty and resolves it on the next add', async () => {
    const q = new WorkQueue();
    const pending = observe(q.get());
    await drainMicrotasks();
    assert.equal(pending.settled, false);

    q.add('x');
    await drainMicrotasks();
    assert.deepEqual(pending.value, { item: 'x', shutdown: false });
  });

  it('serves waiting getters in the order they called get()', async () => {
    const q = new WorkQueue();
    const first = q.get();
    const second = q.get();
    const third = q.get();
    q.add('1');
    q.add('2');
    q.add('3');
    assert.deepEqual(
      (await Promise.all([first, second, third])).map((r) => (r.shutdown ? 'shutdown' : r.item)),
      ['1', '2', '3'],
    );
  });

  it('never hands one item to two concurrent workers', async () => {
    const q = new WorkQueue();
    const getters = Array.from({ length: 4 }, () => observe(q.get()));
    const holders = (): number => getters.filter((g) => g.settled && g.value?.shutdown === false).length;

    q.add('k');
    await drainMicrotasks();
    assert.equal(holders(), 1);

    // Adding while a worker holds it must not wake another worker.
    q.add('k');
    q.add('k');
    await drainMicrotasks();
    assert.equal(holders(), 1);
    assert.equal(q.len(), 0);

    q.done('k');
    await drainMicrotasks();
    assert.equal(holders(), 2);
    assert.ok(getters.every((g) => !g.settled || (g.value?.shutdown === false && g.value.item === 'k')));
  });

  it('re-queues an item added during processing exactly once, after done()', async () => {
    const q = new WorkQueue();
    q.add('k');
    assert.equal(await getItem(q), 'k');

    q.add('k');
    q.add('k');
    assert.equal(q.len(), 0, 'must not be queued while a worker holds it');

    q.done('k');
    assert.equal(q.len(), 1);
    assert.equal(await getItem(q), 'k');
    q.done('k');
    assert.equal(q.len(), 0);
    const next = observe(q.get());
    await drainMicrotasks();
    assert.equal(next.settled, false);
  });

  it('ignores done() for an item that is not being processed', () => {
    const q = new WorkQueue();
    q.add('k');
    q.done('k');
    q.done('other');
    assert.equal(q.len(), 1);
  });

  it('wakes every waiting getter with shutdown and refuses later adds', async () => {
    const q = new WorkQueue();
    const waiters = [q.get(), q.get(), q.get()];
    q.shutDown();

    assert.deepEqual(await Promise.all(waiters), [
      { shutdown: true },
      { shutdown: true },
      { shutdown: true },
    ]);
    assert.equal(q.shuttingDown(), true);
    q.add('late');
    assert.equal(q.len(), 0);
    assert.deepEqual(await q.get(), { shutdown: true });
  });

  it('still hands out items queued before shutdown, then reports shutdown', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    q.shutDown();
    assert.equal(await getItem(q), 'a');
    assert.equal(await getItem(q), 'b');
    assert.deepEqual(await q.get(), { shutdown: true });
  });

  it('shutDownWithDrain() resolves only after every in-flight item is done', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    const a = await getItem(q);
    const b = await getItem(q);

    const drained = observe(q.shutDownWithDrain());
    await drainMicrotasks();
    assert.equal(drained.settled, false);
    assert.equal(q.shuttingDown(), true);

    q.done(a);
    await drainMicrotasks();
    assert.equal(drained.settled, false);

    q.done(b);
    await drainMicrotasks();
    assert.equal(drained.value, true);
  });

  it('shutDownWithDrain() gives up with false when its signal aborts', async () => {
    const q = new WorkQueue();
    q.add('stuck');
    await getItem(q);
    const controller = new AbortController();

    const drained = observe(q.shutDownWithDrain(controller.signal));
    await drainMicrotasks();
    assert.equal(drained.settled, false);

    controller.abort();
    await drainMicrotasks();
    assert.equal(drained.value, false);
  });

  it('shutDownWithDrain() resolves at once when nothing is in flight', async () => {
    const q = new WorkQueue();
    assert.equal(await q.shutDownWithDrain(), true);
  });
});
