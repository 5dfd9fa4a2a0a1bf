import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bucketOfKey } from '@regulon/runtime';
import { objectName } from '../framework/population.ts';
import {
  bucketOfObject,
  indexOfName,
  namespaceName,
  namespaceOfObject,
  objectsPerBucket,
} from './population.ts';

describe('the sharded population', () => {
  it('spreads objects round-robin over the namespaces', () => {
    assert.equal(namespaceOfObject(0, 64), namespaceName(0));
    assert.equal(namespaceOfObject(65, 64), namespaceName(1));
    assert.equal(namespaceOfObject(63, 64), 'bench-063-widgets');
  });

  it("reads an object's index back from its name, and nothing from another name", () => {
    assert.equal(indexOfName(objectName(0)), 0);
    assert.equal(indexOfName(objectName(49_999)), 49_999);
    assert.equal(indexOfName('kube-root-ca.crt'), undefined);
  });

  it('puts an object in its namespace’s bucket, as the sharded manager hashes its key', () => {
    for (const i of [0, 1, 17, 4242])
      assert.equal(
        bucketOfObject(i, 64, 16),
        bucketOfKey(`${namespaceOfObject(i, 64)}/${objectName(i)}`, 16),
      );
  });

  it('counts every object once in the bucket it falls in', () => {
    for (const [n, namespaces, buckets] of [
      [20_000, 64, 16],
      [1_001, 64, 16],
      [10, 64, 4],
      [0, 8, 2],
    ] as const) {
      const counts = objectsPerBucket(n, namespaces, buckets);
      assert.equal(counts.length, buckets);
      assert.equal(
        counts.reduce((a, b) => a + b, 0),
        n,
      );
      const direct = new Array<number>(buckets).fill(0);
      for (let i = 0; i < n; i++) direct[bucketOfObject(i, namespaces, buckets)]!++;
      assert.deepEqual(counts, direct);
    }
  });

  it('with one namespace, puts every object in one bucket: why the objects are spread', () => {
    const counts = objectsPerBucket(1_000, 1, 16);
    assert.equal(counts.filter((c) => c > 0).length, 1);
  });

  it('spreads 64 namespaces over most of 16 buckets, where names that differ only at the end would not', () => {
    const used = objectsPerBucket(64_000, 64, 16).filter((c) => c > 0).length;
    assert.ok(used >= 12, `${used} buckets used`);
    const trailing = new Set(
      Array.from({ length: 64 }, (_, k) => bucketOfKey(`bench-${String(k).padStart(3, '0')}/x`, 16)),
    );
    assert.ok(trailing.size <= 2, `${trailing.size} buckets used by names varying at the end`);
  });
});
