// The reflector's loop against a scripted ListerWatcher: how it reacts to each
// kind of failure, and which adds the informer tells its handlers are the
// initial list. What the real API server sends is covered by
// cache.integration.test.ts.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { KubeObject, WatchEvent } from '@regulon/client';
import { Informer } from './informer.ts';
import type { WatchRequest } from './lister-watcher.ts';
import { Reflector } from './reflector.ts';
import { Store, type StoreChange } from './store.ts';
import {
  events,
  hang,
  ScriptedListerWatcher as Script,
  until,
  type WatchScript,
} from './testing/scripted-lister-watcher.ts';

const cm = (name: string, rv: string): KubeObject => ({
  metadata: { namespace: 'ns', name, resourceVersion: rv },
});

/** A watch the server accepts and keeps open, silent, until aborted: a quiet scope. */
async function* openQuiet(req: WatchRequest): AsyncIterable<WatchEvent<KubeObject>> {
  req.onOpen?.();
  yield* hang(req);
}

// Reflectors left running by a failed test stop at the end instead of holding the run open.
const running: AbortController[] = [];
after(() => running.forEach((ac) => ac.abort()));

function harness(
  script: Script,
  extra: { inactivityTimeoutMs?: number; onChange?: (c: StoreChange<KubeObject>) => void } = {},
) {
  const changes: string[] = [];
  const store = new Store();
  const reflector = new Reflector({
    name: 'test',
    listerWatcher: script,
    store,
    backoff: { initialMs: 2, maxMs: 10, factor: 2 },
    onChange: (c) => {
      changes.push(`${c.type}:${c.obj.metadata?.name}@${c.obj.metadata?.resourceVersion}`);
      extra.onChange?.(c);
    },
    ...(extra.inactivityTimeoutMs ? { inactivityTimeoutMs: extra.inactivityTimeoutMs } : {}),
  });
  const ac = new AbortController();
  running.push(ac);
  const done = reflector.run(ac.signal);
  return { changes, store, reflector, stop: async () => (ac.abort(), done) };
}

describe('Reflector', () => {
  test('lists, syncs, then watches from the list resourceVersion', async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [cm('a', '5')], resourceVersion: '10' }));
    s.watches.push(
      events({ type: 'ADDED', object: cm('b', '11') }, { type: 'MODIFIED', object: cm('a', '12') }),
    );
    const h = harness(s);
    await h.reflector.waitForSync();
    await until(() => h.changes.length === 3, '3 changes');
    assert.deepEqual(h.changes, ['add:a@5', 'add:b@11', 'update:a@12']);
    assert.equal(s.watchCalls[0]?.resourceVersion, '10');
    await until(() => s.watchCalls.length === 2, 'second watch');
    assert.equal(s.watchCalls[1]?.resourceVersion, '12', 'resumes from the last event, without relisting');
    assert.equal(s.listCalls.length, 1);
    await h.stop();
  });

  test('a bookmark moves the resourceVersion forward without changing the store', async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [], resourceVersion: '10' }));
    s.watches.push(events({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '99' } } }));
    const h = harness(s);
    await until(() => s.watchCalls.length === 2, 'second watch');
    assert.equal(s.watchCalls[1]?.resourceVersion, '99');
    assert.deepEqual(h.changes, []);
    await h.stop();
  });

  test('410 Gone relists and emits deletes for objects that vanished meanwhile', async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [cm('a', '1'), cm('b', '1')], resourceVersion: '10' }));
    s.watches.push(
      events({
        type: 'ERROR',
        status: { code: 410, reason: 'Expired', message: 'too old resource version' },
      }),
    );
    s.lists.push(() => ({ items: [cm('a', '1'), cm('c', '20')], resourceVersion: '30' }));
    const h = harness(s);
    await until(() => h.changes.length === 4, '4 changes');
    assert.deepEqual(h.changes, ['add:a@1', 'add:b@1', 'add:c@20', 'delete:b@1']);
    assert.equal(h.reflector.health().relists, 1);
    await until(() => s.watchCalls.length === 2, 'watch after relist');
    assert.equal(s.watchCalls[1]?.resourceVersion, '30');
    await h.stop();
  });

  test('a failing watch is retried with backoff, reported in health, and recovers', async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [], resourceVersion: '10' }));
    const fail: WatchScript = () => ({
      [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error('connect ECONNREFUSED')) }),
    });
    s.watches.push(fail, fail, fail, events({ type: 'ADDED', object: cm('a', '11') }));
    const seen: number[] = [];
    const h = harness(s, { onChange: () => seen.push(h.reflector.health().consecutiveFailures) });
    await until(() => h.reflector.health().consecutiveFailures >= 2, 'failures reported');
    assert.match(h.reflector.health().lastError ?? '', /ECONNREFUSED/);
    await until(() => h.changes.length === 1, 'recovered');
    assert.deepEqual(seen, [0], 'health is back to 0 failures once events flow');
    assert.deepEqual(
      s.watchCalls.slice(0, 4).map((w) => w.resourceVersion),
      ['10', '10', '10', '10'],
      'each retry resumes from the same version',
    );
    await h.stop();
  });

  test('the failing time runs from the first failure, and a watch the server accepts and keeps open ends it without any event', async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [], resourceVersion: '10' }));
    // What a fresh API server answers while its watch cache is still initialising.
    const fail: WatchScript = () => ({
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.reject(new Error('storage is (re)initializing')),
      }),
    });
    s.watches.push(fail, fail, fail, openQuiet);
    const h = harness(s);
    await until(() => h.reflector.health().consecutiveFailures >= 1, 'a failure');
    const since = h.reflector.health().failingSince;
    assert.equal(typeof since, 'number');
    await until(() => s.watchCalls.length === 4, 'the fourth watch is open');
    assert.equal(h.reflector.health().failingSince, since, 'later failures keep the first failure time');
    await until(() => h.reflector.health().consecutiveFailures === 0, 'recovered while quiet');
    assert.equal(h.reflector.health().failingSince, undefined);
    assert.equal(h.reflector.health().lastError, undefined);
    assert.equal(s.listCalls.length, 1);
    await h.stop();
  });

  test('a watch that the server closes right after accepting it does not end the failure', async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [], resourceVersion: '10' }));
    const flap: WatchScript = (req) => ({
      [Symbol.asyncIterator]: () => ({
        next: () => {
          req.onOpen?.();
          return Promise.resolve({ done: true, value: undefined });
        },
      }),
    });
    s.watches.push(flap, flap, flap);
    const h = harness(s);
    await until(() => h.reflector.health().consecutiveFailures >= 3, 'three failures in a row');
    assert.match(h.reflector.health().lastError ?? '', /closed immediately/);
    assert.equal(typeof h.reflector.health().failingSince, 'number');
    await h.stop();
  });

  test('a silent watch is detected as stalled and reconnected', async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [], resourceVersion: '10' }));
    s.watches.push(hang, events({ type: 'ADDED', object: cm('a', '11') }));
    const h = harness(s, { inactivityTimeoutMs: 50 });
    await until(() => h.changes.length === 1, 'event after reconnect');
    assert.equal(s.watchCalls.length >= 2, true);
    await h.stop();
  });

  test('a throwing handler does not stop the reflector', async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [cm('a', '1')], resourceVersion: '10' }));
    s.watches.push(events({ type: 'ADDED', object: cm('b', '11') }));
    let calls = 0;
    const h = harness(s, {
      onChange: () => {
        calls++;
        throw new Error('handler bug');
      },
    });
    await until(() => calls === 2, 'both events handled');
    assert.equal(h.store.size, 2);
    await h.stop();
  });

  test('an abort that lands while the list is delivered stops run() at once', async () => {
    const s = new Script();
    const ac = new AbortController();
    s.lists.push(() => ({ items: [cm('a', '1')], resourceVersion: '10' }));
    const store = new Store();
    // The handler aborts during the initial delivery, before any watch opens.
    const reflector = new Reflector({ name: 'test', listerWatcher: s, store, onChange: () => ac.abort() });
    await reflector.run(ac.signal);
    assert.equal(s.watchCalls.length, 0);
  });

  test('run() returns only when aborted, and health says it is not watching', async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [], resourceVersion: '1' }));
    const h = harness(s);
    await h.reflector.waitForSync();
    await until(() => h.reflector.health().watching, 'watching');
    await h.stop();
    assert.equal(h.reflector.health().watching, false);
  });
});

describe('Informer', () => {
  // Each event as `type:name`, adds with whether they were flagged as the initial list.
  function recorded(informer: Informer<KubeObject>): string[] {
    const seen: string[] = [];
    informer.addEventHandler({
      onAdd: (o, initialList) => seen.push(`add:${o.metadata?.name}:${initialList ? 'initial' : 'event'}`),
      onUpdate: (_, o) => seen.push(`update:${o.metadata?.name}`),
      onDelete: (o) => seen.push(`delete:${o.metadata?.name}`),
    });
    return seen;
  }

  function started(informer: Informer<KubeObject>): void {
    const ac = new AbortController();
    running.push(ac);
    void informer.start(ac.signal);
  }

  test("flags the first list's adds and a late handler's replay as the initial list, not watch events or a relist's differences", async () => {
    const s = new Script();
    s.lists.push(() => ({ items: [cm('a', '1'), cm('b', '1')], resourceVersion: '10' }));
    s.watches.push(
      events(
        { type: 'ADDED', object: cm('c', '11') },
        { type: 'MODIFIED', object: cm('a', '12') },
        { type: 'ERROR', status: { code: 410, reason: 'Expired', message: 'too old resource version' } },
      ),
    );
    // What changed while no watch was open: d was created, b deleted.
    s.lists.push(() => ({ items: [cm('a', '12'), cm('c', '11'), cm('d', '20')], resourceVersion: '30' }));
    const informer = new Informer<KubeObject>({ name: 'test', listerWatcher: s });
    const seen = recorded(informer);
    started(informer);
    await until(() => seen.length === 6, '6 events');
    assert.deepEqual(seen, [
      'add:a:initial',
      'add:b:initial',
      'add:c:event',
      'update:a',
      'add:d:event',
      'delete:b',
    ]);

    const late = recorded(informer);
    assert.deepEqual(late, ['add:a:initial', 'add:c:initial', 'add:d:initial']);
  });

  test('with a streaming list, the adds before the initial-events-end bookmark are the initial list', async () => {
    const s = new Script();
    s.watches.push(
      events(
        { type: 'ADDED', object: cm('a', '1') },
        { type: 'ADDED', object: cm('b', '2') },
        {
          type: 'BOOKMARK',
          object: {
            metadata: { resourceVersion: '2', annotations: { 'k8s.io/initial-events-end': 'true' } },
          },
        },
        { type: 'ADDED', object: cm('c', '3') },
      ),
    );
    const informer = new Informer<KubeObject>({ name: 'test', listerWatcher: s, streamingList: true });
    const seen = recorded(informer);
    started(informer);
    await until(() => seen.length === 3, '3 events');
    assert.deepEqual(seen, ['add:a:initial', 'add:b:initial', 'add:c:event']);
    assert.equal(s.listCalls.length, 0, 'no paginated list');
  });
});
