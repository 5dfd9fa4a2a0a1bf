import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Kinds } from '@regulon/client';
import { NameWaits } from './waits.ts';

const cm = (namespace: string, name: string) => ({ metadata: { namespace, name } });

test('an object wakes the requests waiting for it, matched by kind, namespace and name', () => {
  const w = new NameWaits();
  w.add('ns/a', Kinds.ConfigMap, 'ns', 'a-config');
  w.add('ns/b', Kinds.ConfigMap, 'ns', 'a-config');
  assert.deepEqual(w.waiters(Kinds.ConfigMap, cm('ns', 'a-config')).sort(), ['ns/a', 'ns/b']);
  assert.deepEqual(w.waiters(Kinds.Secret, cm('ns', 'a-config')), [], 'another kind');
  assert.deepEqual(w.waiters(Kinds.ConfigMap, cm('other', 'a-config')), [], 'another namespace');
  assert.deepEqual(w.waiters(Kinds.ConfigMap, cm('ns', 'b-config')), [], 'another name');
});

test('settle keeps only the waits the last reconcile declared again', () => {
  const w = new NameWaits();
  const first = w.add('ns/a', Kinds.ConfigMap, 'ns', 'one');
  w.add('ns/a', Kinds.Service, 'ns', 'two');
  w.settle('ns/a', new Set([first]));
  assert.deepEqual(w.waiters(Kinds.ConfigMap, cm('ns', 'one')), ['ns/a']);
  assert.deepEqual(w.waiters(Kinds.Service, cm('ns', 'two')), []);
  w.settle('ns/a', new Set());
  assert.equal(w.size, 0, 'a resolved wait does not linger');
});

test("settling one request leaves other requests' waits for the same object", () => {
  const w = new NameWaits();
  w.add('ns/a', Kinds.Secret, 'ns', 's');
  w.add('ns/b', Kinds.Secret, 'ns', 's');
  w.settle('ns/a', new Set());
  assert.deepEqual(w.waiters(Kinds.Secret, cm('ns', 's')), ['ns/b']);
});
