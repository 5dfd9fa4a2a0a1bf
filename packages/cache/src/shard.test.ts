// The shard module against known vectors: FNV-1a's published ones, hashes of uids whose
// shard a real API server (ShardedListAndWatch on) decided, and the selector spellings
// of the API's own documentation (k8s.io/apimachinery pkg/apis/meta/v1/types.go).
// That every object lands where the server puts it is shown against the server in
// shard.integration.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '@regulon/client';
import {
  bucketOf,
  bucketOfHash,
  bucketRange,
  contains,
  describeShard,
  EMPTY_HASH,
  fnv1a64,
  HASH_SPACE,
  hex,
  selectorFor,
  shard,
  shardOfBuckets,
} from './shard.ts';

const HALF = 1n << 63n;

describe('fnv1a64', () => {
  test("matches FNV-1a 64's published vectors", () => {
    // http://www.isthe.com/chongo/src/fnv/test_fnv.c (FNV1A_64 for "", "a", "foobar").
    assert.equal(hex(fnv1a64('')), '0xcbf29ce484222325');
    assert.equal(hex(fnv1a64('a')), '0xaf63dc4c8601ec8c');
    assert.equal(hex(fnv1a64('foobar')), '0x85944171f73967e8');
    assert.equal(EMPTY_HASH, fnv1a64(''));
  });

  test('hashes the UTF-8 bytes, as Go hashes []byte(string)', () => {
    // Computed by an independent implementation over Python's str.encode().
    assert.equal(hex(fnv1a64('héllo')), '0xa35ff71f960240e0');
    assert.equal(hex(fnv1a64('日本')), '0x121d7e35a6d3ce91');
  });

  test('puts uids where a real API server did', () => {
    // Three ConfigMaps listed from a v1.37.1 API server with ShardedListAndWatch on: the
    // first was in shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'),
    // the other two only in the upper half.
    assert.equal(hex(fnv1a64('84be2b4e-38a8-426a-9a66-c09f432be916')), '0x4932857f997b0808');
    assert.equal(hex(fnv1a64('3c48fe07-d309-4fc0-bc2d-a556c7efc122')), '0x86a4abea7cfbdac7');
    assert.equal(hex(fnv1a64('0df2b45e-d1c1-445e-a5ef-3cf820f2e190')), '0xfffa81f149d81c14');
  });
});

describe('selectorFor', () => {
  test("spells the API documentation's 2- and 4-shard splits exactly", () => {
    const two = [0, 1].map((b) => selectorFor(shardOfBuckets('uid', [b], 2)));
    assert.deepEqual(two, [
      "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
      "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
    ]);
    const four = [0, 1, 2, 3].map((b) => selectorFor(shardOfBuckets('uid', [b], 4)));
    assert.deepEqual(four, [
      "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')",
      "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')",
      "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')",
      "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
    ]);
  });

  test('joins several ranges with ||, on one field; namespace is the other field', () => {
    const s = shardOfBuckets('namespace', [0, 3], 4);
    assert.equal(
      selectorFor(s),
      "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000') || " +
        "shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')",
    );
    assert.equal(describeShard(s), 'namespace:0-4000000000000000,c000000000000000-10000000000000000');
  });

  test('always writes 16 digits, which the server requires (it refuses 0x0 with a 500)', () => {
    assert.equal(
      selectorFor(shard('uid', [{ start: 0n, end: 0xffn }])),
      "shardRange(object.metadata.uid, '0x0000000000000000', '0x00000000000000ff')",
    );
  });
});

describe('shard', () => {
  test('takes bigints or hex strings, sorts the ranges and merges overlapping or touching ones', () => {
    const s = shard('uid', [
      { start: '0xC000000000000000', end: '10000000000000000' },
      { start: 0n, end: 10n },
      { start: 5n, end: 20n },
      { start: 20n, end: 30n },
    ]);
    assert.deepEqual(s.ranges, [
      { start: 0n, end: 30n },
      { start: 0xc000000000000000n, end: HASH_SPACE },
    ]);
    assert.ok(Object.isFrozen(s) && Object.isFrozen(s.ranges));
  });

  test('refuses no ranges (an empty shardSelector selects everything), empty or out-of-space ranges, bad hex', () => {
    assert.throws(() => shard('uid', []), /no ranges/);
    assert.throws(() => shardOfBuckets('uid', [], 4), /no ranges/);
    assert.throws(() => shard('uid', [{ start: 5n, end: 5n }]), RangeError);
    assert.throws(() => shard('uid', [{ start: 0n, end: HASH_SPACE + 1n }]), RangeError);
    assert.throws(() => shard('uid', [{ start: -1n, end: 1n }]), RangeError);
    assert.throws(() => shard('uid', [{ start: '0xzz', end: '0x10' }]), /not a hex/);
    assert.throws(() => shard('name' as 'uid', [{ start: 0n, end: 1n }]), /'uid' or 'namespace'/);
  });

  test('contains: start inclusive, end exclusive, over the uid or the namespace', () => {
    const obj = (uid: string, namespace?: string): KubeObject => ({
      metadata: { name: 'x', uid, ...(namespace ? { namespace } : {}) },
    });
    const lower = obj('84be2b4e-38a8-426a-9a66-c09f432be916'); // 0x4932857f997b0808
    const upper = obj('3c48fe07-d309-4fc0-bc2d-a556c7efc122'); // 0x86a4abea7cfbdac7
    const bottom = shard('uid', [{ start: 0n, end: HALF }]);
    assert.equal(contains(bottom, lower), true);
    assert.equal(contains(bottom, upper), false);
    const exact = 0x4932857f997b0808n;
    assert.equal(contains(shard('uid', [{ start: exact, end: exact + 1n }]), lower), true);
    assert.equal(contains(shard('uid', [{ start: 0n, end: exact }]), lower), false);
    // Every cluster-scoped object hashes "" by namespace: one shard holds them all.
    const clusterScoped = shard('namespace', [{ start: EMPTY_HASH, end: EMPTY_HASH + 1n }]);
    assert.equal(contains(clusterScoped, obj('any')), true);
    assert.equal(contains(clusterScoped, obj('any', 'default')), false);
  });
});

describe('buckets', () => {
  test('split the space exactly, for any count', () => {
    for (const count of [1, 2, 3, 7, 16, 1000]) {
      let next = 0n;
      for (let b = 0; b < count; b++) {
        const r = bucketRange(b, count);
        assert.equal(r.start, next, `bucket ${b} of ${count} starts where the last ended`);
        assert.ok(r.end > r.start);
        next = r.end;
      }
      assert.equal(next, HASH_SPACE);
    }
  });

  test('bucketOfHash agrees with bucketRange at every boundary', () => {
    for (const count of [1, 3, 7, 16, 1000]) {
      for (const b of [0, Math.floor(count / 3), count - 1]) {
        const { start, end } = bucketRange(b, count);
        assert.equal(bucketOfHash(start, count), b);
        assert.equal(bucketOfHash(end - 1n, count), b);
        if (start > 0n) assert.equal(bucketOfHash(start - 1n, count), b - 1);
        if (end < HASH_SPACE) assert.equal(bucketOfHash(end, count), b + 1);
      }
    }
    assert.throws(() => bucketOfHash(HASH_SPACE, 4), RangeError);
    assert.throws(() => bucketRange(4, 4), RangeError);
    assert.throws(() => bucketRange(0, 0), RangeError);
  });

  test('shardOfBuckets merges runs of consecutive buckets into one range each', () => {
    const s = shardOfBuckets('uid', [5, 1, 0, 2, 2], 8);
    assert.deepEqual(s.ranges, [
      { start: 0n, end: 3n << 61n },
      { start: 5n << 61n, end: 6n << 61n },
    ]);
    assert.deepEqual(shardOfBuckets('uid', [0, 1, 2, 3], 4).ranges, [{ start: 0n, end: HASH_SPACE }]);
  });

  test("an object's bucket is in the shard of that bucket and in no other", () => {
    const count = 6;
    const shards = Array.from({ length: count }, (_, b) => shardOfBuckets('uid', [b], count));
    for (let i = 0; i < 500; i++) {
      const obj: KubeObject = { metadata: { name: `o${i}`, uid: crypto.randomUUID() } };
      const b = bucketOf(obj, 'uid', count);
      assert.deepEqual(
        shards.map((s, j) => (contains(s, obj) ? j : -1)).filter((j) => j >= 0),
        [b],
      );
    }
  });
});
