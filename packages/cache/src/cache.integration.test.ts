// The cache against the real API server (@regulon/testenv): what it sees, and
// that it converges to exactly the server's state through restarts and 410s.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeClient, Kinds, type KubeObject, type ResourceType } from '@regulon/client';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { SharedInformerFactory } from './factory.ts';
import { Informer } from './informer.ts';
import { listerWatcher, type ListerWatcher, type WatchRequest } from './lister-watcher.ts';

const PodTemplate: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'PodTemplate',
  plural: 'podtemplates',
  namespaced: true,
};

function configMap(
  namespace: string,
  name: string,
  labels: Record<string, string> = {},
  data: Record<string, string> = {},
): V1ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data };
}

/** The informer's view and the server's, as name -> resourceVersion. */
function view(objects: KubeObject[]): Record<string, string> {
  const entries = objects.map((o): [string, string] => [o.metadata!.name!, o.metadata!.resourceVersion!]);
  return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)));
}

describe('cache against a real API server', () => {
  let env: TestEnv;
  let client: KubeClient;

  before(async () => {
    env = await start();
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 500, burst: 500 });
  });
  // Every test's informers stop at the end, even when an assertion failed midway.
  const running: AbortController[] = [];
  const runFactory = (f: SharedInformerFactory) => {
    const ac = new AbortController();
    running.push(ac);
    f.start(ac.signal);
    return ac;
  };
  after(async () => {
    for (const ac of running) ac.abort();
    client.close();
    await env.stop();
  });

  test('the informer sees create, update and delete, with the right objects', async () => {
    const ns = await env.newNamespace('cache-events');
    const factory = new SharedInformerFactory(client);
    const informer = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns });
    const seen: string[] = [];
    informer.addEventHandler({
      // kube-root-ca.crt is published into every new namespace by the controller-manager.
      onAdd: (o) =>
        o.metadata?.name !== 'kube-root-ca.crt' &&
        seen.push(`add:${o.metadata?.name}:${o.data?.['v'] ?? ''}`),
      onUpdate: (old, o) => seen.push(`update:${o.metadata?.name}:${old.data?.['v']}->${o.data?.['v']}`),
      onDelete: (o) => seen.push(`delete:${o.metadata?.name}`),
    });
    const ac = runFactory(factory);
    await factory.waitForSync(undefined, 30_000);
    assert.equal(informer.hasSynced(), true);
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    await cms.create(configMap(ns, 'one', {}, { v: '1' }));
    await cms.patch('one', { data: { v: '2' } }, { type: 'merge', namespace: ns });
    await cms.delete('one', { namespace: ns });
    await eventually('three events', () => seen.length === 3);
    assert.deepEqual(seen, ['add:one:1', 'update:one:1->2', 'delete:one']);
    assert.equal(informer.get('one', ns), undefined);
    ac.abort();
  });

  test('the default transform strips managedFields', async () => {
    const ns = await env.newNamespace('cache-transform');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    const created = await cms.create(configMap(ns, 'x', { app: 'x' }, { k: 'v' }));
    assert.ok(created.metadata?.managedFields?.length, 'the server returns managedFields');
    const factory = new SharedInformerFactory(client);
    const informer = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns });
    const ac = runFactory(factory);
    await factory.waitForSync();
    assert.equal(informer.get('x', ns)?.metadata?.managedFields, undefined);
    ac.abort();
  });

  test('label selectors, field selectors and namespace scoping', async () => {
    const [a, b] = [await env.newNamespace('cache-scope-a'), await env.newNamespace('cache-scope-b')];
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    await cms.create(configMap(a, 'web', { app: 'web' }));
    await cms.create(configMap(a, 'db', { app: 'db' }));
    await cms.create(configMap(b, 'web', { app: 'web' }));
    const factory = new SharedInformerFactory(client);
    const inA = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: a });
    const webEverywhere = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { labelSelector: 'app=web' });
    const byName = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, {
      namespace: a,
      fieldSelector: 'metadata.name=db',
    });
    const ac = runFactory(factory);
    await factory.waitForSync();
    assert.deepEqual(
      inA
        .list()
        .map((o) => o.metadata?.name)
        .filter((n) => n !== 'kube-root-ca.crt')
        .sort(),
      ['db', 'web'],
    );
    assert.deepEqual(
      webEverywhere
        .list()
        .filter((o) => [a, b].includes(o.metadata!.namespace!))
        .map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`)
        .sort(),
      [`${a}/web`, `${b}/web`],
    );
    assert.deepEqual(
      byName.list().map((o) => o.metadata?.name),
      ['db'],
    );
    // A later object outside the scope never shows up.
    await cms.create(configMap(b, 'late', { app: 'db' }));
    await cms.create(configMap(a, 'late-web', { app: 'web' }));
    await eventually('late-web seen', () => webEverywhere.get('late-web', a) !== undefined);
    assert.equal(inA.get('late', b), undefined);
    assert.equal(webEverywhere.get('late', b), undefined);
    ac.abort();
  });

  test('the factory shares one informer per kind and scope', () => {
    const factory = new SharedInformerFactory(client);
    const x = factory.informerFor(Kinds.ConfigMap, { namespace: 'n' });
    assert.equal(factory.informerFor(Kinds.ConfigMap, { namespace: 'n' }), x);
    assert.notEqual(factory.informerFor(Kinds.ConfigMap, { namespace: 'm' }), x);
    assert.notEqual(factory.informerFor(Kinds.ConfigMap, { namespace: 'n', metadataOnly: true }), x);
    assert.equal(factory.status().length, 3);
  });

  test('a streaming list (sendInitialEvents) syncs the same objects as a paginated list', async () => {
    const ns = await env.newNamespace('cache-stream');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    for (let i = 0; i < 7; i++) await cms.create(configMap(ns, `s-${i}`, {}, { v: String(i) }));
    const streaming = new SharedInformerFactory(client, { streamingList: true });
    const paged = new SharedInformerFactory(client);
    const a = streaming.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns });
    const b = paged.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns });
    runFactory(streaming);
    runFactory(paged);
    await Promise.all([streaming.waitForSync(undefined, 30_000), paged.waitForSync(undefined, 30_000)]);
    assert.equal(a.health().streamingList, true, 'the server accepted sendInitialEvents');
    assert.equal(b.health().streamingList, false);
    assert.deepEqual(view(a.list()), view(b.list()));
    assert.equal(a.list().filter((o) => o.metadata?.name?.startsWith('s-')).length, 7);
    // And it keeps watching after the initial events.
    await cms.create(configMap(ns, 'after'));
    await eventually('streamed informer sees a later create', () => a.get('after', ns) !== undefined);
  });

  test('a metadata-only informer holds metadata and no data', async () => {
    const ns = await env.newNamespace('cache-meta');
    await client
      .resource<V1ConfigMap>(Kinds.ConfigMap)
      .create(configMap(ns, 'secretish', { app: 'x' }, { password: 'hunter2' }));
    const factory = new SharedInformerFactory(client);
    const informer = factory.informerFor(Kinds.ConfigMap, { namespace: ns, metadataOnly: true });
    const ac = runFactory(factory);
    await factory.waitForSync();
    const got = informer.get('secretish', ns) as KubeObject & { data?: unknown };
    assert.equal(got.metadata?.labels?.['app'], 'x');
    assert.equal(got.kind, 'PartialObjectMetadata');
    assert.equal(got.data, undefined);
    ac.abort();
  });

  test('bookmarks move the resourceVersion forward while nothing in scope changes', async () => {
    const quiet = await env.newNamespace('cache-bookmark');
    const busy = await env.newNamespace('cache-busy');
    // A short server-side watch timeout: the API server sends a bookmark shortly before it.
    const factory = new SharedInformerFactory(client, { minWatchTimeoutSeconds: 4 });
    const informer = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: quiet });
    let events = 0;
    informer.addEventHandler({ onAdd: () => events++, onUpdate: () => events++, onDelete: () => events++ });
    const ac = runFactory(factory);
    await factory.waitForSync();
    const eventsAfterSync = events;
    await eventually('watching', () => informer.health().watching);
    const startRV = BigInt(
      informer.health().resourceVersion ??
        (await client.resource(Kinds.ConfigMap).list({ namespace: quiet })).resourceVersion,
    );
    for (let i = 0; i < 5; i++)
      await client.resource<V1ConfigMap>(Kinds.ConfigMap).create(configMap(busy, `noise-${i}`));
    await eventually(
      'a bookmark past the noise',
      () => BigInt(informer.health().resourceVersion ?? '0') > startRV,
      30_000,
    );
    assert.equal(events, eventsAfterSync, 'bookmarks are not events');
    ac.abort();
  });

  test('the API server is killed and restarted mid-watch while objects change: the cache converges to exactly the server state', async (t) => {
    // A control plane of its own: the run's shared one serves other projects' tests at the same
    // time, whose managers and instance agents must not lose their API server to this test.
    const own = await start({ own: true });
    const client = KubeClient.fromKubeConfig(own.kubeConfig, { qps: 500, burst: 500 });
    t.after(async () => {
      client.close();
      await own.stop();
    });
    const ns = await own.newNamespace('cache-restart');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    for (let i = 0; i < 10; i++) await cms.create(configMap(ns, `cm-${i}`, {}, { v: '0' }));
    const factory = new SharedInformerFactory(client, {
      backoff: { initialMs: 100, maxMs: 1000, factor: 2 },
    });
    const informer = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns });
    const ac = runFactory(factory);
    await factory.waitForSync();

    // A writer that keeps changing objects; its writes fail while the server is down.
    const writer = new AbortController();
    let writes = 0;
    const writing = (async () => {
      for (let i = 0; !writer.signal.aborted; i++) {
        const n = i % 14;
        try {
          if (n < 10)
            await cms.patch(`cm-${n}`, { data: { v: String(i) } }, { type: 'merge', namespace: ns });
          else if (n === 10) await cms.create(configMap(ns, `new-${i}`));
          else if (n === 11) await cms.delete(`cm-${i % 10}`, { namespace: ns });
          else await cms.create(configMap(ns, `cm-${i % 10}`, {}, { v: 'recreated' }));
          writes++;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    })();
    await eventually('some writes before the crash', () => writes >= 20);
    await own.controlPlane.stopAPIServer('SIGKILL');
    await eventually(
      'the informer notices',
      () => informer.health().consecutiveFailures > 0 || !informer.health().watching,
      30_000,
    );
    await own.controlPlane.startAPIServer();
    const before = writes;
    await eventually('writes after the restart', () => writes >= before + 20, 60_000);
    writer.abort();
    await writing;

    const server = await cms.listAll({ namespace: ns });
    await eventually(
      'cache equals the server',
      () => JSON.stringify(view(informer.list())) === JSON.stringify(view(server.items)),
      30_000,
    );
    assert.deepEqual(view(informer.list()), view(server.items));
    assert.equal(informer.health().consecutiveFailures, 0);
    ac.abort();
  });

  test('410 Gone after etcd compaction: relist, with delete events for objects that vanished meanwhile', async () => {
    const ns = await env.newNamespace('cache-gone');
    const templates = client.resource<KubeObject>(PodTemplate);
    const template = (name: string) => ({
      apiVersion: 'v1',
      kind: 'PodTemplate',
      metadata: { name, namespace: ns },
      template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    });
    for (const n of ['keep', 'vanish']) await templates.create(template(n));

    // A seam around the real lister-watcher: the test holds the reflector's next
    // watch while it changes objects and compacts etcd behind its back.
    const real = listerWatcher<KubeObject>(client, PodTemplate, { namespace: ns });
    let hold: Promise<void> | undefined;
    let current: AbortController | undefined;
    const lw: ListerWatcher<KubeObject> = {
      list: (signal) => real.list(signal),
      async *watch(req: WatchRequest) {
        if (hold) await hold;
        current = new AbortController();
        yield* real.watch({ ...req, signal: AbortSignal.any([req.signal, current.signal]) });
      },
    };
    const informer = new Informer<KubeObject>({
      name: 'podtemplates',
      listerWatcher: lw,
      backoff: { initialMs: 10, maxMs: 100, factor: 2 },
    });
    const seen: string[] = [];
    informer.addEventHandler({
      onAdd: (o) => seen.push(`add:${o.metadata?.name}`),
      onDelete: (o) => seen.push(`delete:${o.metadata?.name}`),
    });
    const ac = new AbortController();
    running.push(ac);
    void informer.start(ac.signal);
    await informer.waitForSync();
    await eventually('watching', () => informer.health().watching && current !== undefined);
    assert.deepEqual(seen.sort(), ['add:keep', 'add:vanish']);

    let release!: () => void;
    hold = new Promise((r) => (release = r));
    current!.abort(); // the watch drops; the reflector's retry waits on `hold`
    await templates.delete('vanish', { namespace: ns });
    await templates.create(template('arrived'));
    await env.controlPlane.compactEtcd();
    hold = undefined;
    release();

    await eventually('relisted', () => informer.health().relists >= 1, 30_000);
    await eventually(
      'delete and add delivered',
      () => seen.includes('delete:vanish') && seen.includes('add:arrived'),
      30_000,
    );
    assert.deepEqual(view(informer.list()), view((await templates.listAll({ namespace: ns })).items));
    ac.abort();
  });
});
