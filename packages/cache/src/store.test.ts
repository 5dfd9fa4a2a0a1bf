import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '@regulon/client';
import { CONTROLLER_OWNER_INDEX, NAMESPACE_INDEX, Store } from './store.ts';

function obj(
  namespace: string | undefined,
  name: string,
  rv: string,
  extra: Partial<KubeObject['metadata']> = {},
): KubeObject {
  return { metadata: { name, resourceVersion: rv, ...(namespace ? { namespace } : {}), ...extra } };
}

describe('Store', () => {
  test('keys objects by namespace/name, and by name when cluster-scoped', () => {
    const store = new Store();
    store.upsert(obj('a', 'x', '1'));
    store.upsert(obj(undefined, 'node-1', '2'));
    assert.deepEqual(store.keys().sort(), ['a/x', 'node-1']);
    assert.equal(store.get('a/x')?.metadata?.name, 'x');
  });

  test('upsert reports add, then update with the old object', () => {
    const store = new Store();
    assert.equal(store.upsert(obj('a', 'x', '1')).type, 'add');
    const change = store.upsert(obj('a', 'x', '2'));
    assert.equal(change.type, 'update');
    assert.equal(change.type === 'update' && change.old.metadata?.resourceVersion, '1');
  });

  test('indexes by namespace and keeps the index right across updates and deletes', () => {
    const store = new Store();
    store.upsert(obj('a', 'x', '1'));
    store.upsert(obj('a', 'y', '1'));
    store.upsert(obj('b', 'x', '1'));
    assert.deepEqual(
      store
        .byIndex(NAMESPACE_INDEX, 'a')
        .map((o) => o.metadata?.name)
        .sort(),
      ['x', 'y'],
    );
    store.delete('a/x');
    assert.deepEqual(
      store.byIndex(NAMESPACE_INDEX, 'a').map((o) => o.metadata?.name),
      ['y'],
    );
    assert.deepEqual(store.byIndex(NAMESPACE_INDEX, 'c'), []);
  });

  test('indexes by controller owner UID, ignoring non-controller owners', () => {
    const store = new Store();
    const owner = (uid: string, controller: boolean) => ({
      apiVersion: 'v1',
      kind: 'X',
      name: 'o',
      uid,
      controller,
    });
    store.upsert(obj('a', 'child', '1', { ownerReferences: [owner('u1', true), owner('u2', false)] }));
    store.upsert(obj('a', 'other', '1', { ownerReferences: [owner('u2', false)] }));
    assert.deepEqual(
      store.byIndex(CONTROLLER_OWNER_INDEX, 'u1').map((o) => o.metadata?.name),
      ['child'],
    );
    assert.deepEqual(store.byIndex(CONTROLLER_OWNER_INDEX, 'u2'), []);
    // Re-owning moves the object between index values.
    store.upsert(obj('a', 'child', '2', { ownerReferences: [owner('u3', true)] }));
    assert.deepEqual(store.byIndex(CONTROLLER_OWNER_INDEX, 'u1'), []);
    assert.equal(store.byIndex(CONTROLLER_OWNER_INDEX, 'u3').length, 1);
  });

  test('custom indexers, including one added after objects exist', () => {
    const store = new Store<KubeObject>({
      byApp: (o) => (o.metadata?.labels?.['app'] ? [o.metadata.labels['app']] : []),
    });
    store.upsert(obj('a', 'x', '1', { labels: { app: 'web', tier: 'front' } }));
    store.upsert(obj('a', 'y', '1', { labels: { app: 'db' } }));
    assert.equal(store.byIndex('byApp', 'web').length, 1);
    store.addIndexer('byTier', (o) => (o.metadata?.labels?.['tier'] ? [o.metadata.labels['tier']] : []));
    assert.deepEqual(
      store.byIndex('byTier', 'front').map((o) => o.metadata?.name),
      ['x'],
    );
    assert.throws(() => store.byIndex('nope', 'x'), /no indexer named nope/);
  });

  test('replace emits adds, updates for moved resourceVersions, and deletes for vanished objects', () => {
    const store = new Store();
    store.upsert(obj('a', 'same', '1'));
    store.upsert(obj('a', 'changed', '1'));
    store.upsert(obj('a', 'gone', '1'));
    const changes = store.replace([obj('a', 'same', '1'), obj('a', 'changed', '2'), obj('a', 'new', '3')]);
    const summary = changes.map((c) => `${c.type}:${c.obj.metadata?.name}`).sort();
    assert.deepEqual(summary, ['add:new', 'delete:gone', 'update:changed']);
    assert.deepEqual(store.keys().sort(), ['a/changed', 'a/new', 'a/same']);
  });

  test('objects read from the store are frozen: mutating one throws and leaves the cache intact', () => {
    const store = new Store();
    store.upsert(obj('a', 'x', '1', { labels: { app: 'web' } }));
    const read = store.get('a/x')!;
    assert.throws(() => {
      read.metadata!.labels!['app'] = 'evil';
    }, TypeError);
    assert.equal(store.get('a/x')?.metadata?.labels?.['app'], 'web');
    const copy = structuredClone(read);
    copy.metadata!.labels!['app'] = 'mine';
    assert.equal(store.get('a/x')?.metadata?.labels?.['app'], 'web');
  });
});
