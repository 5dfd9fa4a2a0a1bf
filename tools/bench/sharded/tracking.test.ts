import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReconciledTracker, settled } from './tracking.ts';

describe('ReconciledTracker', () => {
  it('times the line that completed the union, counting each replica’s distinct objects and repeats', () => {
    const t = new ReconciledTracker(4, 2);
    t.add(0, [0, 1, 1], 100);
    t.add(1, [1, 2], 150);
    assert.equal(t.allAt, undefined);
    assert.equal(t.reconciled, 3);
    t.add(1, [3], 200);
    t.add(0, [3], 300);
    assert.equal(t.allAt, 200);
    assert.equal(t.distinct(0), 3);
    assert.equal(t.reconciles(0), 4);
    assert.equal(t.distinct(1), 3);
  });

  it('ignores indexes outside [0, n): objects the benchmark did not create', () => {
    const t = new ReconciledTracker(2, 1);
    t.add(0, [-1, 2, 7, 0.5], 1);
    assert.equal(t.reconciled, 0);
    assert.equal(t.reconciles(0), 0);
  });

  it('watches a takeover: the targets reconciled by the survivors from the kill on', () => {
    const t = new ReconciledTracker(6, 3);
    t.add(0, [0, 1, 2, 3, 4, 5], 10);
    const left = t.watch((i) => i % 2 === 0, [1, 2], 50);
    assert.equal(left, 3);
    t.add(0, [0, 2, 4], 60); // the killed replica's last lines: not a takeover
    t.add(1, [0], 40); // before the kill
    t.add(1, [0, 2], 70);
    assert.equal(t.watchedAt, undefined);
    t.add(2, [4, 4], 90);
    assert.equal(t.watchedAt, 90);
  });

  it('is complete at once with no objects, and a watch of nothing at its start', () => {
    assert.equal(new ReconciledTracker(0, 1).allAt, 0);
    const t = new ReconciledTracker(3, 2);
    assert.equal(
      t.watch(() => false, [1], 5),
      0,
    );
    assert.equal(t.watchedAt, 5);
  });
});

describe('settled', () => {
  const perBucket = [10, 0, 5, 7];

  it('holds when the buckets are a fair partition and each cache holds its buckets’ objects', () => {
    assert.ok(
      settled(
        [
          { buckets: [0, 3], objects: 17 },
          { buckets: [1, 2], objects: 5 },
        ],
        perBucket,
        true,
      ),
    );
    assert.ok(settled([{ buckets: [0, 1, 2, 3], objects: 22 }], perBucket, true));
  });

  it('waits while a cache still holds the buckets it had before', () => {
    assert.ok(
      !settled(
        [
          { buckets: [0, 3], objects: 22 },
          { buckets: [1, 2], objects: 5 },
        ],
        perBucket,
        true,
      ),
    );
  });

  it('wants every object in every cache with whole caches', () => {
    const views = [
      { buckets: [0, 3], objects: 22 },
      { buckets: [1, 2], objects: 22 },
    ];
    assert.ok(settled(views, perBucket, false));
    assert.ok(!settled(views, perBucket, true));
  });

  it('waits for a bucket owned by none, owned twice, or a replica far from its share', () => {
    const at = (a: number[], b: number[]) => [
      { buckets: a, objects: a.reduce((s, x) => s + perBucket[x]!, 0) },
      { buckets: b, objects: b.reduce((s, x) => s + perBucket[x]!, 0) },
    ];
    assert.ok(!settled(at([0, 3], [2]), perBucket, true));
    assert.ok(!settled(at([0, 3], [2, 3]), perBucket, true));
    assert.ok(!settled(at([0, 1, 3], [2]), perBucket, true));
  });
});
