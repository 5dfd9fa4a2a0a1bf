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

describe('isSubset compares in the form the API server stores', () => {
  it('takes what omitempty drops (empty lists and maps, "", 0, false) as matching an absent value', () => {
    const live = { spec: { containers: [{ name: 'redis', image: 'redis:7' }] } };
    assert.equal(isSubset({ spec: { containers: [{ name: 'redis', env: [] }] } }, live), true);
    assert.equal(isSubset({ spec: { containers: [{ name: 'redis', args: [], ports: [] }] } }, live), true);
    assert.equal(isSubset({ metadata: { labels: {}, annotations: {} } }, {}), true);
    assert.equal(isSubset({ spec: { x: { a: [], b: { c: '' } }, y: 0, z: false } }, live), true);
  });
  it('still sees a non-empty value that is missing, and an empty one where the live value is not', () => {
    const live = { spec: { containers: [{ name: 'redis', env: [{ name: 'A', value: '1' }] }] } };
    assert.equal(isSubset({ spec: { containers: [{ name: 'redis', env: [] }] } }, live), false);
    assert.equal(isSubset({ spec: { containers: [{ name: 'redis', args: ['x'] }] } }, live), false);
    assert.equal(isSubset({ spec: { x: { a: [1] } } }, live), false);
    assert.equal(isSubset({ spec: { y: 0 } }, { spec: { y: 3 } }), false);
    assert.equal(isSubset({ spec: { z: false } }, { spec: { z: true } }), false);
    assert.equal(isSubset({ spec: { s: '' } }, { spec: { s: '10.0.0.1' } }), false);
  });
  it('takes a quantity as matching its canonical form, whatever the spelling or type desired', () => {
    const resources = (requests: Record<string, unknown>, limits: Record<string, unknown>) => ({
      spec: { containers: [{ name: 'db', resources: { requests, limits } }] },
    });
    const live = resources({ cpu: '1', memory: '1Gi' }, { memory: '1073741824' });
    assert.equal(isSubset(resources({ cpu: '1000m', memory: '1024Mi' }, { memory: 1073741824 }), live), true);
    assert.equal(isSubset(resources({ cpu: '1', memory: '1Gi' }, { memory: '1073741824' }), live), true);
    assert.equal(
      isSubset(
        { spec: { resources: { requests: { storage: '1024Mi' } } } },
        { spec: { resources: { requests: { storage: '1Gi' } } } },
      ),
      true,
    );
  });
  it('takes the milli rounding of requests and limits, and the nano precision of other quantities', () => {
    assert.equal(isSubset({ requests: { cpu: '100u' } }, { requests: { cpu: '1m' } }), true);
    assert.equal(isSubset({ emptyDir: { sizeLimit: '100u' } }, { emptyDir: { sizeLimit: '100u' } }), true);
    assert.equal(isSubset({ requests: { cpu: '1001u' } }, { requests: { cpu: '1m' } }), false);
  });
  it('sees a different amount, and a live spelling the API server would never store', () => {
    const live = { spec: { requests: { cpu: '1', memory: '1Gi' }, tag: '1024Mi', n: 1024 } };
    assert.equal(isSubset({ spec: { requests: { cpu: '1001m' } } }, live), false);
    assert.equal(isSubset({ spec: { requests: { memory: '1025Mi' } } }, live), false);
    assert.equal(isSubset({ spec: { tag: '1Gi' } }, live), false, 'the same amount, but not canonical live');
    assert.equal(isSubset({ spec: { n: '1Ki' } }, live), false, 'a number live is never a quantity');
    assert.equal(isSubset({ spec: { requests: { cpu: 'one' } } }, live), false);
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
