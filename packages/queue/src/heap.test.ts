import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IndexedHeap } from './heap.ts';

interface Entry {
  key: number;
  id: number;
  index: number;
}

describe('IndexedHeap', () => {
  it('pops in key order after pushes and in-place key decreases', () => {
    const heap = new IndexedHeap<Entry>((a, b) => a.key < b.key || (a.key === b.key && a.id < b.id));
    const entries: Entry[] = [];
    // Deterministic pseudo-random keys (LCG) so a failure is reproducible.
    let seed = 42;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 1000;
    for (let id = 0; id < 200; id++) {
      const e = { key: rand(), id, index: -1 };
      entries.push(e);
      heap.push(e);
    }
    for (const e of entries.filter((_, i) => i % 3 === 0)) {
      e.key = Math.max(0, e.key - rand());
      heap.decreased(e);
    }

    const popped: Entry[] = [];
    for (let e = heap.pop(); e !== undefined; e = heap.pop()) popped.push(e);

    const sorted = [...entries].sort((a, b) => a.key - b.key || a.id - b.id);
    assert.deepEqual(
      popped.map((e) => e.id),
      sorted.map((e) => e.id),
    );
    assert.ok(popped.every((e) => e.index === -1));
  });
});
