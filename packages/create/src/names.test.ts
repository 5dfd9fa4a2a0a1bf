import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkProjectName, kindNames, NameError, pluralOf } from './names.ts';

test('a kind gets its plural, singular, kebab-case and camelCase names', () => {
  assert.deepEqual(kindNames({ group: 'cache.example.com', version: 'v1alpha1', kind: 'MemcachedCluster' }), {
    group: 'cache.example.com',
    version: 'v1alpha1',
    kind: 'MemcachedCluster',
    plural: 'memcachedclusters',
    singular: 'memcachedcluster',
    kebab: 'memcached-cluster',
    camel: 'memcachedCluster',
  });
  assert.equal(
    kindNames({ group: 'a.b', version: 'v1', kind: 'Index', plural: 'indices' }).plural,
    'indices',
  );
});

test('plurals follow the usual English endings', () => {
  assert.deepEqual(['memcached', 'class', 'box', 'policy', 'gateway', 'match'].map(pluralOf), [
    'memcacheds',
    'classes',
    'boxes',
    'policies',
    'gateways',
    'matches',
  ]);
});

test('bad names are refused naming the flag and what would be right', () => {
  const refused = (fn: () => unknown, pattern: RegExp) =>
    assert.throws(fn, (err: Error) => err instanceof NameError && pattern.test(err.message));
  refused(
    () => kindNames({ group: 'example', version: 'v1', kind: 'Web' }),
    /--group "example": a DNS name with at least one dot/,
  );
  refused(() => kindNames({ group: 'Example.com', version: 'v1', kind: 'Web' }), /--group/);
  refused(
    () => kindNames({ group: 'example.com', version: '1', kind: 'Web' }),
    /--version "1": a Kubernetes API version/,
  );
  refused(() => kindNames({ group: 'example.com', version: 'v1beta', kind: 'Web' }), /--version/);
  refused(
    () => kindNames({ group: 'example.com', version: 'v1', kind: 'web' }),
    /--kind "web": UpperCamelCase/,
  );
  refused(
    () => kindNames({ group: 'example.com', version: 'v1', kind: 'Web', plural: 'web' }),
    /must differ from the singular/,
  );
  refused(() => checkProjectName('My_Operator'), /project name "My_Operator"/);
  refused(() => checkProjectName('a'.repeat(57)), /at most 56/);
  assert.equal(checkProjectName('my-operator'), 'my-operator');
});
