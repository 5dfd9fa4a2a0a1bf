// A sharded reflector against a scripted ListerWatcher: how the first list's shardInfo
// decides between the server's filter and its own, what it asks of lists and watches in
// each mode, and that events of other shards never reach the store. The same against a
// real API server, with the feature gate on and off: shard.integration.test.ts.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { KubeObject, ListResult } from '@regulon/client';
import { Registry } from 'prom-client';
import type { Logger } from '@regulon/util';
import { Informer } from './informer.ts';
import type { ListRequest } from './lister-watcher.ts';
import { SHARD_MODE_METRIC } from './metrics.ts';
import { Reflector } from './reflector.ts';
import { contains, selectorFor, shardOfBuckets } from './shard.ts';
import { Store } from './store.ts';
import { events, ScriptedListerWatcher as Script, until } from './testing/scripted-lister-watcher.ts';

/** The lower half of the uid hash space. */
const SHARD = shardOfBuckets('uid', [0], 2);
const SELECTOR = selectorFor(SHARD);

/** Deterministic uids, found once, whose hash falls inside (or outside) SHARD. */
const uids = (inside: boolean) => {
  const found: string[] = [];
  for (let i = 0; found.length < 10; i++) {
    const uid = `uid-${i}`;
    if (contains(SHARD, { metadata: { uid } }) === inside) found.push(uid);
  }
  return found;
};
const IN = uids(true);
const OUT = uids(false);

const obj = (name: string, uid: string, rv: string): KubeObject => ({
  metadata: { namespace: 'ns', name, uid, resourceVersion: rv },
});

/** A list as a server with the gate on answers: only the shard's items, and shardInfo. */
const served =
  (items: KubeObject[], resourceVersion: string) =>
  (req: ListRequest | undefined): ListResult<KubeObject> => ({
    items: items.filter((o) => contains(SHARD, o)),
    resourceVersion,
    shardInfo: { selector: req!.shardSelector! },
  });
/** A list as a server without the gate answers: everything, no shardInfo. */
const ignored = (items: KubeObject[], resourceVersion: string) => (): ListResult<KubeObject> => ({
  items,
  resourceVersion,
});

function capture(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (o: object, msg?: string) =>
    lines.push(`${level} ${msg} ${JSON.stringify(o)}`);
  return { lines, debug: () => {}, info: at('info'), warn: at('warn'), error: at('error') };
}

const running: AbortController[] = [];
after(() => running.forEach((ac) => ac.abort()));

function harness(script: Script, extra: { streamingList?: boolean } = {}) {
  const store = new Store();
  const changes: string[] = [];
  const log = capture();
  const reflector = new Reflector({
    name: 'test',
    listerWatcher: script,
    store,
    shard: SHARD,
    logger: log,
    backoff: { initialMs: 2, maxMs: 10, factor: 2 },
    onChange: (c) => changes.push(`${c.type}:${c.obj.metadata?.name}`),
    ...extra,
  });
  const ac = new AbortController();
  running.push(ac);
  const done = reflector.run(ac.signal);
  return { store, changes, reflector, log, stop: async () => (ac.abort(), done) };
}

describe('sharded Reflector', () => {
  test('server mode: the list echoed shardInfo, so the watch asks for the shard too', async () => {
    const s = new Script();
    s.lists.push(served([obj('a', IN[0]!, '5'), obj('b', OUT[0]!, '6')], '10'));
    const h = harness(s);
    await h.reflector.waitForSync();
    assert.deepEqual(s.listCalls, [{ shardSelector: SELECTOR }]);
    assert.equal(h.reflector.health().shardMode, 'server');
    await until(() => s.watchCalls.length === 1, 'watch');
    assert.equal(s.watchCalls[0]!.shardSelector, SELECTOR);
    assert.deepEqual(h.changes, ['add:a']);
    assert.equal(h.log.lines.filter((l) => l.includes('shardMode')).length, 1, 'one line says which mode');
    assert.match(h.log.lines[0]!, /^info shard served by the API server/);
    await h.stop();
  });

  test('client mode: the server ignored the selector, so the list is filtered here and the watch sent without it', async () => {
    const s = new Script();
    s.lists.push(ignored([obj('a', IN[0]!, '5'), obj('b', OUT[0]!, '6'), obj('c', IN[1]!, '7')], '10'));
    s.watches.push(
      events(
        { type: 'ADDED', object: obj('d', OUT[1]!, '11') },
        { type: 'ADDED', object: obj('e', IN[2]!, '12') },
        { type: 'MODIFIED', object: obj('b', OUT[0]!, '13') },
        { type: 'MODIFIED', object: obj('a', IN[0]!, '14') },
        { type: 'DELETED', object: obj('b', OUT[0]!, '15') },
        { type: 'DELETED', object: obj('c', IN[1]!, '16') },
        // The last event is another shard's: the resumed watch must still start after it.
        { type: 'MODIFIED', object: obj('d', OUT[1]!, '17') },
      ),
    );
    const h = harness(s);
    await h.reflector.waitForSync();
    assert.equal(h.reflector.health().shardMode, 'client');
    assert.match(
      h.log.lines[0]!,
      /^info API server ignored shardSelector: filtering the shard on the client/,
    );
    await until(() => s.watchCalls.length === 2, 'resumed watch');
    assert.equal(s.watchCalls[0]!.shardSelector, undefined);
    assert.equal(s.watchCalls[1]!.resourceVersion, '17');
    assert.deepEqual(h.changes, ['add:a', 'add:c', 'add:e', 'update:a', 'delete:c']);
    assert.deepEqual(h.store.keys().sort(), ['ns/a', 'ns/e']);
    await h.stop();
  });

  test('a name re-created with a uid of another shard leaves this one: by DELETED, or by a relist after 410', async () => {
    const s = new Script();
    s.lists.push(ignored([obj('a', IN[0]!, '5'), obj('b', IN[1]!, '6')], '10'));
    s.watches.push(
      events(
        { type: 'DELETED', object: obj('a', IN[0]!, '11') },
        { type: 'ADDED', object: obj('a', OUT[0]!, '12') },
        { type: 'ERROR', status: { code: 410, reason: 'Expired', message: 'too old' } },
      ),
    );
    // Meanwhile b was deleted and created again, now in the other shard.
    s.lists.push(ignored([obj('a', OUT[0]!, '12'), obj('b', OUT[1]!, '20')], '30'));
    const h = harness(s);
    await until(() => h.changes.length === 4, '4 changes');
    assert.deepEqual(h.changes, ['add:a', 'add:b', 'delete:a', 'delete:b']);
    assert.equal(h.store.size, 0);
    await h.stop();
  });

  test('each list decides again: a relist that finds the gate turned on switches to server mode, and says so', async () => {
    const s = new Script();
    s.lists.push(ignored([obj('a', IN[0]!, '5')], '10'));
    s.watches.push(events({ type: 'ERROR', status: { code: 410, reason: 'Expired', message: 'too old' } }));
    s.lists.push(served([obj('a', IN[0]!, '5')], '20'));
    const h = harness(s);
    await until(() => s.watchCalls.length === 2, 'watch after the relist');
    assert.deepEqual(s.listCalls, [{ shardSelector: SELECTOR }, { shardSelector: SELECTOR }]);
    assert.equal(s.watchCalls[0]!.shardSelector, undefined);
    assert.equal(s.watchCalls[1]!.shardSelector, SELECTOR);
    assert.equal(h.reflector.health().shardMode, 'server');
    assert.deepEqual(
      h.log.lines
        .filter((l) => l.includes('shardMode'))
        .map((l) => (JSON.parse(l.slice(l.indexOf('{'))) as { shardMode: string }).shardMode),
      ['client', 'server'],
    );
    await h.stop();
  });

  test('server mode still drops what the server let through, and warns: the hashes would disagree', async () => {
    const s = new Script();
    s.lists.push(() => ({
      items: [obj('a', IN[0]!, '5'), obj('b', OUT[0]!, '6')],
      resourceVersion: '10',
      shardInfo: { selector: SELECTOR },
    }));
    s.watches.push(events({ type: 'ADDED', object: obj('c', OUT[1]!, '11') }));
    const h = harness(s);
    await until(() => s.watchCalls.length === 2, 'resumed watch');
    assert.deepEqual(h.changes, ['add:a']);
    assert.ok(h.log.lines.some((l) => l.startsWith('warn the API server sent objects outside the shard')));
    await h.stop();
  });

  test('a streaming list first asks a one-item list whether the server shards, then streams in that mode', async () => {
    const s = new Script();
    s.lists.push(served([], '1'));
    s.watches.push(
      events(
        { type: 'ADDED', object: obj('a', IN[0]!, '1') },
        { type: 'ADDED', object: obj('b', OUT[0]!, '2') },
        {
          type: 'BOOKMARK',
          object: {
            metadata: { resourceVersion: '2', annotations: { 'k8s.io/initial-events-end': 'true' } },
          },
        },
      ),
    );
    const h = harness(s, { streamingList: true });
    await h.reflector.waitForSync();
    assert.deepEqual(s.listCalls, [{ shardSelector: SELECTOR, limit: 1 }]);
    assert.equal(s.watchCalls[0]!.sendInitialEvents, true);
    assert.equal(s.watchCalls[0]!.shardSelector, SELECTOR);
    assert.deepEqual(h.changes, ['add:a']);
    await h.stop();
  });
});

describe('sharded Informer metrics', () => {
  test('regulon_cache_shard_mode shows the mode while the informer runs, and nothing once it stopped', async () => {
    const registry = new Registry();
    const s = new Script();
    s.lists.push(ignored([obj('a', IN[0]!, '5')], '10'));
    const informer = new Informer<KubeObject>({ name: 'cms', listerWatcher: s, shard: SHARD, registry });
    const plain = new Informer<KubeObject>({ name: 'plain', listerWatcher: new Script(), registry });
    const ac = new AbortController();
    running.push(ac);
    const done = informer.start(ac.signal);
    await informer.waitForSync();
    const values = async () =>
      (await registry.getSingleMetric(SHARD_MODE_METRIC)!.get()).values.map(
        (v) => `${v.labels['informer']} ${v.labels['mode']} ${v.value}`,
      );
    assert.deepEqual(await values(), ['cms server 0', 'cms client 1']);
    assert.equal(plain.health().shardMode, undefined, 'an informer without a shard has no mode');
    ac.abort();
    await done;
    assert.deepEqual(await values(), []);
  });
});
