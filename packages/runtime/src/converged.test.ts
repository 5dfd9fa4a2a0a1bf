import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  APPLIED_HASH_ANNOTATION,
  appliedHash,
  canonicalJson,
  isConverged,
  isSubset,
  withAppliedHash,
} from './converged.ts';

describe('canonicalJson', () => {
  it('sorts keys at every depth and drops undefined members', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [{ z: 1, y: 'x' }], c: undefined }, e: null }),
      '{"a":{"d":[{"y":"x","z":1}]},"b":1,"e":null}',
    );
  });
  it('gives the same hash whatever order the keys were built in', () => {
    assert.equal(appliedHash({ a: 1, b: { c: 2, d: 3 } }), appliedHash({ b: { d: 3, c: 2 }, a: 1 }));
    assert.notEqual(appliedHash({ a: 1 }), appliedHash({ a: 2 }));
    assert.match(appliedHash({}), /^[0-9a-f]{16}$/);
  });
});

describe('isSubset', () => {
  const live = {
    metadata: { name: 'x', labels: { a: '1', b: '2' }, resourceVersion: '7' },
    spec: { ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }], clusterIP: '10.0.0.1' },
  };
  it('ignores what only the live object has (defaults, status, other managers)', () => {
    assert.equal(isSubset({ metadata: { labels: { a: '1' } }, spec: { ports: [{ port: 80 }] } }, live), true);
  });
  it('sees a changed scalar, a missing key, a changed type and a different array length', () => {
    assert.equal(isSubset({ metadata: { labels: { a: '2' } } }, live), false);
    assert.equal(isSubset({ metadata: { labels: { c: '1' } } }, live), false);
    assert.equal(isSubset({ spec: { ports: [{ port: '80' }] } }, live), false);
    assert.equal(isSubset({ spec: { ports: [{ port: 80 }, { port: 81 }] } }, live), false);
    assert.equal(isSubset({ spec: { ports: [] } }, live), false);
    assert.equal(isSubset({ spec: { clusterIP: { x: 1 } } }, live), false);
    assert.equal(isSubset({ spec: [] }, live), false);
  });
});

interface ConfigMapLike {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  data: Record<string, string>;
}

describe('isConverged', () => {
  const desired = withAppliedHash<ConfigMapLike>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c', namespace: 'n', labels: { a: '1' } },
    data: { k: 'v' },
  });
  const live = {
    // A list item: no apiVersion or kind.
    metadata: { ...desired.metadata, uid: 'u', resourceVersion: '1' },
    data: { k: 'v' },
  };

  it('is true only when the hash matches and every applied field is in place', () => {
    assert.equal(desired.metadata.annotations?.[APPLIED_HASH_ANNOTATION]?.length, 16);
    assert.equal(isConverged(desired, live), true);
  });
  it('sees drift made by someone else', () => {
    assert.equal(isConverged(desired, { ...live, data: { k: 'edited' } }), false);
  });
  it('sees a field the controller stopped setting (the live object still has it)', () => {
    const withoutLabels = { metadata: { name: 'c', namespace: 'n' }, data: { k: 'v' } };
    assert.equal(isSubset(withoutLabels, live), true, 'the fields alone cannot tell');
    assert.equal(
      isConverged(
        withAppliedHash<ConfigMapLike>({ apiVersion: 'v1', kind: 'ConfigMap', ...withoutLabels }),
        live,
      ),
      false,
    );
  });
  it('is false for a live object never applied with a hash, or a metadata-only one', () => {
    assert.equal(isConverged(desired, { ...live, metadata: { ...live.metadata, annotations: {} } }), false);
    assert.equal(isConverged(desired, { metadata: live.metadata }), false);
  });
});
