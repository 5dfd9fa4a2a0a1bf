// Sharded informers against a real API server, both ways a shard can be cut: by the
// server (a control plane of its own with the ShardedListAndWatch feature gate on) and
// by the informer (the run's shared plane, gate off, which ignores shardSelector). The
// server is also the oracle for shard.ts: every object must land in the bucket our hash
// puts it in, for lists and watches, from the watch cache and from etcd.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds, type KubeObject, type ResourceType } from '@regulon/client';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import type { Logger } from '@regulon/util';
import { Registry } from 'prom-client';
import { SharedInformerFactory } from './factory.ts';
import type { Informer } from './informer.ts';
import { SHARD_MODE_METRIC } from './metrics.ts';
import type { ShardMode } from './reflector.ts';
import {
  bucketOf,
  contains,
  EMPTY_HASH,
  bucketOfHash,
  selectorFor,
  shardOfBuckets,
  type Shard,
  type ShardField,
} from './shard.ts';

/** Served without the watch cache (testenv's --watch-cache-sizes=podtemplates#0): lists and watches reach etcd. */
const PodTemplate: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'PodTemplate',
  plural: 'podtemplates',
  namespaced: true,
};

const configMap = (namespace: string, name: string, v = '0'): V1ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: { v },
});
const podTemplate = (namespace: string, name: string): KubeObject & { template: unknown } => ({
  apiVersion: 'v1',
  kind: 'PodTemplate',
  metadata: { name, namespace },
  template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } },
});

/** Runs `fn` over `items`, `n` at a time. */
async function inParallel<I, R>(items: I[], n: number, fn: (item: I) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: n }, worker));
  return results;
}
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/** name -> resourceVersion, sorted: what a cache must agree on with the server. */
function view(objects: KubeObject[]): Record<string, string> {
  const entries = objects.map((o): [string, string] => [o.metadata!.name!, o.metadata!.resourceVersion!]);
  return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)));
}
const names = (objects: KubeObject[]) => objects.map((o) => o.metadata!.name!).sort();

function capture(): Logger & { lines: Array<{ msg: string; obj: Record<string, unknown> }> } {
  const lines: Array<{ msg: string; obj: Record<string, unknown> }> = [];
  const at = (o: object, msg?: string) => lines.push({ msg: msg ?? '', obj: o as Record<string, unknown> });
  return { lines, debug: () => {}, info: at, warn: at, error: at };
}

async function shardModeMetric(registry: Registry): Promise<string[]> {
  const metric = registry.getSingleMetric(SHARD_MODE_METRIC);
  if (!metric) return [];
  return (await metric.get()).values
    .filter((v) => v.value === 1)
    .map((v) => `${v.labels['informer']} ${v.labels['mode']}`);
}

describe('sharded list and watch against a real API server', () => {
  let gated: TestEnv;
  let shared: TestEnv;
  const clients: KubeClient[] = [];
  const clientOf = (env: TestEnv) => {
    const client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 500, burst: 500 });
    clients.push(client);
    return client;
  };
  const running: AbortController[] = [];

  before(async () => {
    [gated, shared] = await Promise.all([
      start({ featureGates: { ShardedListAndWatch: true }, nodes: 0 }),
      start(),
    ]);
  });
  after(async () => {
    for (const ac of running) ac.abort();
    for (const c of clients) c.close();
    await Promise.all([gated?.stop(), shared?.stop()]);
  });

  test('the server puts every object in the bucket our hash does: uid and namespace, lists and watches, watch cache and etcd', async () => {
    const client = clientOf(gated);
    const ns = await gated.newNamespace('shard-oracle');
    const kinds = [
      { type: Kinds.ConfigMap as ResourceType, make: configMap, count: 300 },
      { type: PodTemplate, make: podTemplate, count: 100 },
    ];
    for (const { type, make, count } of kinds) {
      const resource = client.resource(type);
      await inParallel(range(0, count), 50, (i) => resource.create(make(ns, `o-${i}`)));
      const all = (await resource.listAll({ namespace: ns })).items;
      const buckets = 4;
      for (let b = 0; b < buckets; b++) {
        const s = shardOfBuckets('uid', [b], buckets);
        // Pages of 64: the selector is applied, and echoed, on every page.
        const got = await resource.listAll({ namespace: ns, shardSelector: selectorFor(s), pageSize: 64 });
        assert.equal(got.shardInfo?.selector, selectorFor(s), 'echoed exactly as we spell it');
        assert.deepEqual(
          names(got.items),
          names(all.filter((o) => bucketOf(o, 'uid', buckets) === b)),
          `${type.kind} bucket ${b} of ${buckets}`,
        );
      }

      // A watch with a selector sends only the shard's events; a last object of the
      // shard, created after the rest, marks the point by which everything has arrived.
      const half = shardOfBuckets('uid', [0], 2);
      const from = (await resource.list({ namespace: ns, limit: 1 })).resourceVersion;
      const ac = new AbortController();
      running.push(ac);
      const seen: KubeObject[] = [];
      const watching = (async () => {
        for await (const e of client.watch(type, {
          namespace: ns,
          resourceVersion: from,
          shardSelector: selectorFor(half),
          signal: ac.signal,
        }))
          if (e.type === 'ADDED') seen.push(e.object);
      })();
      const created = await inParallel(range(0, 60), 30, (i) => resource.create(make(ns, `w-${i}`)));
      let sentinel: KubeObject | undefined;
      for (let i = 0; !sentinel; i++) {
        const candidate = await resource.create(make(ns, `sentinel-${i}`));
        if (contains(half, candidate)) sentinel = candidate;
        else created.push(candidate);
      }
      await eventually(
        `${type.kind} watch reaches the sentinel`,
        () => seen.some((o) => o.metadata?.uid === sentinel.metadata?.uid),
        30_000,
      );
      ac.abort();
      await watching;
      assert.deepEqual(
        names(seen.filter((o) => o.metadata?.uid !== sentinel.metadata?.uid)),
        names(created.filter((o) => contains(half, o))),
        `${type.kind} watch events`,
      );
    }

    // By namespace, over every namespace the plane has: each ConfigMap where its namespace's hash says.
    const everywhere = (await client.resource(Kinds.ConfigMap).listAll()).items;
    for (let b = 0; b < 4; b++) {
      const s = shardOfBuckets('namespace', [b], 4);
      const got = await client.resource(Kinds.ConfigMap).listAll({ shardSelector: selectorFor(s) });
      assert.deepEqual(
        got.items.map((o) => `${o.metadata!.namespace}/${o.metadata!.name}`).sort(),
        everywhere
          .filter((o) => bucketOf(o, 'namespace', 4) === b)
          .map((o) => `${o.metadata!.namespace}/${o.metadata!.name}`)
          .sort(),
        `namespace bucket ${b}`,
      );
    }
    // A cluster-scoped object has no namespace: all hash "", into one bucket.
    const home = shardOfBuckets('namespace', [bucketOfHash(EMPTY_HASH, 4)], 4);
    const namespaces = client.resource(Kinds.Namespace);
    assert.deepEqual(
      names((await namespaces.listAll({ shardSelector: selectorFor(home) })).items),
      names((await namespaces.listAll()).items),
    );
  });

  const planes: Array<[string, () => TestEnv, ShardMode]> = [
    ['gate on', () => gated, 'server'],
    ['gate off', () => shared, 'client'],
  ];
  for (const [name, env, mode] of planes) {
    /** A factory of its own, whose informers' log lines and metric the test reads. */
    const harness = (client: KubeClient) => {
      const registry = new Registry();
      const log = capture();
      const factory = new SharedInformerFactory(client, { registry, logger: log });
      const ac = new AbortController();
      running.push(ac);
      factory.start(ac.signal);
      return { registry, log, factory };
    };
    /** Records every object the informer's handlers are given. */
    const record = (informer: Informer<V1ConfigMap>) => {
      const got: Array<{ type: string; obj: KubeObject }> = [];
      informer.addEventHandler({
        onAdd: (obj) => got.push({ type: 'add', obj }),
        onUpdate: (_, obj) => got.push({ type: 'update', obj }),
        onDelete: (obj) => got.push({ type: 'delete', obj }),
      });
      return got;
    };

    test(`${name}: an informer over a shard holds exactly its objects through creates, updates and deletes (mode ${mode})`, async () => {
      const client = clientOf(env());
      const ns = await env().newNamespace('shard-informer');
      const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
      await inParallel(range(0, 200), 50, (i) => cms.create(configMap(ns, `cm-${i}`)));
      const shard: Shard = shardOfBuckets('uid', [0, 2], 4); // two ranges: the selector has an ||
      const expected = async () =>
        view((await cms.listAll({ namespace: ns })).items.filter((o) => contains(shard, o)));

      const { registry, log, factory } = harness(client);
      const informer = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns, shard });
      const events = record(informer);
      await factory.waitForSync(undefined, 30_000);
      assert.deepEqual(view(informer.list()), await expected());
      assert.equal(informer.health().shardMode, mode);
      assert.deepEqual(await shardModeMetric(registry), [`${informer.name} ${mode}`]);
      const said = log.lines.filter((l) => l.obj['shardMode'] !== undefined);
      assert.equal(said.length, 1, 'one line says where the shard is cut');
      assert.equal(said[0]!.obj['shardMode'], mode);

      // Changes while it watches: 100 creates, 60 updates and 60 deletes, in and out of the shard.
      await Promise.all([
        inParallel(range(200, 300), 25, (i) => cms.create(configMap(ns, `cm-${i}`))),
        inParallel(range(0, 60), 25, (i) =>
          cms.patch(`cm-${i}`, { data: { v: '1' } }, { type: 'merge', namespace: ns }),
        ),
        inParallel(range(100, 160), 25, (i) => cms.delete(`cm-${i}`, { namespace: ns })),
      ]);
      const want = await expected();
      await eventually(
        'the cache holds the shard as the server does',
        () => JSON.stringify(view(informer.list())) === JSON.stringify(want),
        30_000,
      );
      assert.deepEqual(view(informer.list()), want);
      assert.deepEqual(
        events.filter((e) => !contains(shard, e.obj)).map((e) => `${e.type}:${e.obj.metadata?.name}`),
        [],
        'no handler ever heard of another shard',
      );
      const deletedHere = range(100, 160)
        .map((i) => `cm-${i}`)
        .filter((n) => events.some((e) => e.type === 'add' && e.obj.metadata?.name === n));
      assert.deepEqual(
        events
          .filter((e) => e.type === 'delete')
          .map((e) => e.obj.metadata!.name!)
          .sort(),
        deletedHere.sort(),
        "a delete for each of the shard's deleted objects, none for the others'",
      );
      assert.ok(deletedHere.length > 0 && deletedHere.length < 60, 'the deletes fell on both sides');
      assert.equal(informer.health().shardMode, mode);
    });

    test(`${name}: a sharded informer stopped, another started over the other buckets, and one over a streaming list`, async () => {
      const client = clientOf(env());
      const ns = await env().newNamespace('shard-handover');
      const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
      await inParallel(range(0, 100), 50, (i) => cms.create(configMap(ns, `cm-${i}`)));
      const field: ShardField = 'uid';
      const mine = shardOfBuckets(field, [0, 2], 4);
      const theirs = shardOfBuckets(field, [1, 3], 4);
      const serverView = async (s: Shard) =>
        view((await cms.listAll({ namespace: ns })).items.filter((o) => contains(s, o)));

      const { registry, factory } = harness(client);
      const first = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns, shard: mine });
      const heardByFirst = record(first);
      await first.waitForSync(AbortSignal.timeout(30_000));
      assert.deepEqual(view(first.list()), await serverView(mine));

      await factory.stop(first);
      assert.deepEqual(factory.status(), [], 'forgotten by the factory');
      assert.deepEqual(await shardModeMetric(registry), [], 'and gone from the metric');
      const heard = heardByFirst.length;

      const second = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns, shard: theirs });
      await second.waitForSync(AbortSignal.timeout(30_000));
      await inParallel(range(100, 140), 20, (i) => cms.create(configMap(ns, `cm-${i}`)));
      const want = await serverView(theirs);
      await eventually(
        'the second informer holds the other buckets',
        () => JSON.stringify(view(second.list())) === JSON.stringify(want),
        30_000,
      );
      assert.equal(heardByFirst.length, heard, 'the stopped informer heard nothing more');
      assert.deepEqual(await shardModeMetric(registry), [`${second.name} ${mode}`]);
      assert.deepEqual(
        factory.status().map((s) => [s.name, s.health.shardMode]),
        [[second.name, mode]],
      );
      // The first shard asked for again is a new informer with a fresh list.
      const again = factory.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns, shard: mine });
      assert.notEqual(again, first);
      await again.waitForSync(AbortSignal.timeout(30_000));
      assert.deepEqual(view(again.list()), await serverView(mine));

      // A streaming list (sendInitialEvents) over the same shard: a watch echoes no shardInfo,
      // so a one-item list decides the mode first.
      const streaming = new SharedInformerFactory(client, { streamingList: true });
      const ac = new AbortController();
      running.push(ac);
      streaming.start(ac.signal);
      const streamed = streaming.informerFor<V1ConfigMap>(Kinds.ConfigMap, { namespace: ns, shard: mine });
      await streamed.waitForSync(AbortSignal.timeout(30_000));
      assert.deepEqual(view(streamed.list()), await serverView(mine));
      assert.deepEqual([streamed.health().streamingList, streamed.health().shardMode], [true, mode]);
      ac.abort();
    });
  }
});
