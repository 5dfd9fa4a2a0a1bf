// Streaming watch against a real kube-apiserver from @regulon/testenv.
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { start, type TestEnv } from '@regulon/testenv';
import { InvalidError, KubeClient, Kinds, NotFoundError, type WatchEvent } from './index.ts';

/** Consumes a watch in the background, letting the test wait for events. */
function collect<T>(iterable: AsyncIterable<WatchEvent<T>>) {
  const events: Array<WatchEvent<T>> = [];
  let wake: (() => void) | undefined;
  const done = (async () => {
    for await (const e of iterable) {
      events.push(e);
      wake?.();
    }
    wake?.();
  })();
  const waitFor = async (what: string, pred: (e: WatchEvent<T>) => boolean, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = events.find(pred);
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(`no ${what} event; saw ${events.map((e) => e.type).join(',')}`);
      await Promise.race([
        new Promise<void>((r) => (wake = r)),
        new Promise((r) => setTimeout(r, 200)),
        done,
      ]);
    }
  };
  return { events, done, waitFor };
}

const nameOf = (e: WatchEvent<V1ConfigMap>) => (e.type === 'ERROR' ? undefined : e.object.metadata?.name);

describe('watch against a real API server', () => {
  let env: TestEnv;
  let client: KubeClient;

  before(async () => {
    env = await start();
    client = KubeClient.fromKubeConfig(env.kubeConfig);
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  it('sees ADDED, MODIFIED, DELETED and BOOKMARK events, and ends when the server closes', async () => {
    const ns = await env.newNamespace('watch');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    const { resourceVersion } = await cms.list({ namespace: ns });
    const started = Date.now();
    const w = collect(
      cms.watch({ namespace: ns, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 6 }),
    );

    await cms.create({ metadata: { name: 'w1', namespace: ns }, data: { v: '1' } });
    await w.waitFor('ADDED', (e) => e.type === 'ADDED' && nameOf(e) === 'w1');
    await cms.patch('w1', { data: { v: '2' } }, { type: 'merge', namespace: ns });
    const modified = await w.waitFor('MODIFIED', (e) => e.type === 'MODIFIED' && nameOf(e) === 'w1');
    assert.ok(modified.type === 'MODIFIED' && modified.object.data?.v === '2');
    await cms.delete('w1', { namespace: ns });
    await w.waitFor('DELETED', (e) => e.type === 'DELETED' && nameOf(e) === 'w1');
    // The watch cache sends a bookmark shortly before the watch's timeout.
    const bookmark = await w.waitFor('BOOKMARK', (e) => e.type === 'BOOKMARK');
    assert.ok(bookmark.type === 'BOOKMARK' && bookmark.object.metadata?.resourceVersion);

    await w.done;
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 5000, `the stream ended by itself after ${elapsed} ms`);
    const types = w.events.filter((e) => e.type !== 'BOOKMARK').map((e) => `${e.type}:${nameOf(e)}`);
    assert.deepEqual(types, ['ADDED:w1', 'MODIFIED:w1', 'DELETED:w1']);
    for (const e of w.events)
      assert.ok(e.type !== 'ERROR' && e.object.kind === 'ConfigMap' && e.object.apiVersion === 'v1');
  });

  it('streams initial events and the end-of-initial-events bookmark', async () => {
    const ns = await env.newNamespace('watch');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    await cms.create({ metadata: { name: 'pre', namespace: ns, labels: { w: 'init' } } });
    const ac = new AbortController();
    const w = collect(
      cms.watch({
        namespace: ns,
        labelSelector: 'w=init',
        sendInitialEvents: true,
        resourceVersionMatch: 'NotOlderThan',
        allowWatchBookmarks: true,
        signal: ac.signal,
      }),
    );
    await w.waitFor('ADDED', (e) => e.type === 'ADDED' && nameOf(e) === 'pre');
    const end = await w.waitFor(
      'initial-events-end BOOKMARK',
      (e) =>
        e.type === 'BOOKMARK' && e.object.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true',
    );
    assert.ok(end.type === 'BOOKMARK');
    ac.abort();
    await w.done;
  });

  it('ends promptly and quietly when aborted, destroying the socket', async () => {
    const ns = await env.newNamespace('watch');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    const { resourceVersion } = await cms.list({ namespace: ns });
    const watchRequests: ClientRequest[] = [];
    const onStart = (message: unknown): void => {
      const { request } = message as { request: ClientRequest };
      if (request.path.includes('watch=1') && request.path.includes(ns)) watchRequests.push(request);
    };
    diagnostics.subscribe('http.client.request.start', onStart);
    try {
      const ac = new AbortController();
      const w = collect(cms.watch({ namespace: ns, resourceVersion, signal: ac.signal }));
      await cms.create({ metadata: { name: 'a', namespace: ns } });
      await w.waitFor('ADDED', (e) => e.type === 'ADDED');
      assert.equal(watchRequests.length, 1);
      const socket = watchRequests[0]!.socket!;
      assert.ok(socket && !socket.destroyed);
      const aborted = Date.now();
      ac.abort();
      await w.done; // resolves: an abort is not an error
      assert.ok(Date.now() - aborted < 1000, 'ended promptly');
      assert.ok(socket.destroyed, 'socket destroyed, not returned to the pool');
    } finally {
      diagnostics.unsubscribe('http.client.request.start', onStart);
    }
  });

  it('ends quietly when aborted before the server answers, and when already aborted', async () => {
    const ac = new AbortController();
    const iter = client.watch(Kinds.ConfigMap, { signal: ac.signal })[Symbol.asyncIterator]();
    const next = iter.next();
    ac.abort();
    assert.deepEqual(await next, { done: true, value: undefined });
    const events = [];
    for await (const e of client.watch(Kinds.ConfigMap, { signal: AbortSignal.abort() })) events.push(e);
    assert.equal(events.length, 0);
  });

  it('watches metadata only', async () => {
    const ns = await env.newNamespace('watch');
    const secrets = client.resource<V1Secret>(Kinds.Secret);
    const { resourceVersion } = await secrets.list({ namespace: ns, metadataOnly: true });
    const ac = new AbortController();
    const w = collect(
      secrets.watch({ namespace: ns, resourceVersion, metadataOnly: true, signal: ac.signal }),
    );
    await secrets.create({ metadata: { name: 's', namespace: ns }, stringData: { token: 'hunter2' } });
    const added = await w.waitFor('ADDED', (e) => e.type === 'ADDED');
    assert.ok(added.type === 'ADDED');
    assert.equal(added.object.kind, 'PartialObjectMetadata');
    assert.equal(added.object.metadata.name, 's');
    assert.ok(!('data' in added.object) && !JSON.stringify(added.object).includes('hunter2'));
    ac.abort();
    await w.done;
  });

  it('throws a typed error when the watch is refused', async () => {
    const missing = {
      group: 'nonexistent.regulon.dev',
      version: 'v1',
      kind: 'Thing',
      plural: 'things',
      namespaced: true,
    };
    await assert.rejects(async () => {
      for await (const _ of client.watch(missing)) assert.fail('no events');
    }, NotFoundError);
    await assert.rejects(
      async () => {
        for await (const _ of client.watch(Kinds.ConfigMap, {
          resourceVersion: '1',
          resourceVersionMatch: 'Exact',
        })) {
          assert.fail('no events');
        }
      },
      (e: unknown) => e instanceof InvalidError && /resourceVersionMatch/.test(e.message),
    );
  });

  it('is not cut by the request timeout', async () => {
    const impatient = KubeClient.fromKubeConfig(env.kubeConfig, { requestTimeoutMs: 500 });
    try {
      const started = Date.now();
      for await (const _ of impatient.watch(Kinds.Namespace, { resourceVersion: '0', timeoutSeconds: 2 })) {
        // initial ADDED events for the existing namespaces
      }
      assert.ok(Date.now() - started >= 1900, 'ran until the server-side timeout');
    } finally {
      impatient.close();
    }
  });
});
