// Helpers the queue's tests share: taking items the way a worker does.
import assert from 'node:assert/strict';
import type { QueueKey, WorkQueue } from './queue.ts';

/** The next item; fails the test if the queue reports shutdown instead. */
export async function getItem<T extends QueueKey>(q: WorkQueue<T>): Promise<T> {
  const r = await q.get();
  if (r.shutdown) assert.fail('expected an item, got shutdown');
  return r.item;
}

/**
 * Takes and finishes every queued item, in hand-out order. Bounded, so a queue that keeps
 * handing out items fails the test instead of hanging it.
 */
export async function drain<T extends QueueKey>(q: WorkQueue<T>): Promise<T[]> {
  const items: T[] = [];
  while (q.len() > 0) {
    if (items.length > 1000) assert.fail(`queue never ran dry: ${items.slice(0, 10).join(', ')}...`);
    const item = await getItem(q);
    items.push(item);
    q.done(item);
  }
  return items;
}
