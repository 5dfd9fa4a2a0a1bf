// Sharded managers that cache only their buckets (sharding.shardCaches), against the real API
// server with the ShardedListAndWatch gate on (the server cuts the shard) and off (the client
// does): one replica caches everything, a second joins, and each then caches exactly the
// objects of its own buckets; the handlers moved to the new informers (changes are reconciled
// by their owners), and the objects the first replica kept were not queued again by the swap.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { SHARD_MODE_METRIC, type ShardMode } from '@regulon/cache';
import { KubeClient, Kinds } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { createLogger } from '../observability/logging.ts';
import { bucketOfKey } from '../reconcile/owned-keys.ts';
import { predicate } from '../reconcile/predicates.ts';
import { eventually } from '../testing/wait.ts';
import { ShardedSource } from './sharded-source.ts';

const BUCKETS = 16;
const NAMESPACES = 8;
const PER_NAMESPACE = 25;
const LEASE = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };

for (const gate of [true, false]) {
  const mode: ShardMode = gate ? 'server' : 'client';
  describe(`sharded caches with ShardedListAndWatch ${gate ? 'on' : 'off'}`, () => {
    let env: TestEnv | undefined;
    let client: KubeClient | undefined;
    const managers: Manager[] = [];
    after(async () => {
      for (const m of managers) m.stop();
      client?.close();
      await env?.stop();
    });

    test(
      `each replica caches its own buckets' objects, cut on the ${mode}`,
      { timeout: 90_000 },
      async () => {
        env = await start({ featureGates: { ShardedListAndWatch: gate } });
        client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 1000, burst: 1000 });
        const namespaces: string[] = [];
        for (let i = 0; i < NAMESPACES; i++) namespaces.push(await env.newNamespace('rt-sharded-cache'));
        const leaseNs = await env.newNamespace('rt-sharded-cache-leases');
        const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
        const keys = namespaces.flatMap((ns) =>
          Array.from({ length: PER_NAMESPACE }, (_, i) => `${ns}/obj-${i}`),
        );
        const split = (key: string) => key.split('/') as [string, string];
        await Promise.all(
          keys.map((key) => {
            const [namespace, name] = split(key);
            return cms.create({ metadata: { namespace, name }, data: { v: '0' } });
          }),
        );
        const isOurs = (cm: V1ConfigMap) =>
          namespaces.includes(cm.metadata?.namespace ?? '') && !!cm.metadata?.name?.startsWith('obj-');

        const replica = (identity: string) => {
          const mgr = testManager(env!.kubeConfig, {
            logger: createLogger({ level: 'silent' }),
            clientOptions: { qps: 1000, burst: 1000 },
            gracefulShutdownTimeoutMs: 5000,
            leaderElection: { enabled: false, namespace: leaseNs, name: 'unused', identity },
            sharding: {
              namespace: leaseNs,
              name: 'cache-shards',
              buckets: BUCKETS,
              shardCaches: true,
              ...LEASE,
            },
          });
          managers.push(mgr);
          const reconciles: Array<{ key: string; v: string | undefined; at: number }> = [];
          mgr
            .controller('cached')
            .for(Kinds.ConfigMap, { predicates: [predicate(isOurs)] })
            .reconcile((cm, ctx) => {
              // The reconcile reads through the same source: the object is there.
              assert.ok(
                ctx.get(Kinds.ConfigMap, cm.metadata.name),
                'the reconciled object is not in the cache',
              );
              reconciles.push({
                key: `${cm.metadata.namespace}/${cm.metadata.name}`,
                v: cm.data?.['v'],
                at: Date.now(),
              });
              return Promise.resolve();
            });
          const read = mgr.controllerCache(Kinds.ConfigMap, { needLeaderElection: true });
          assert.ok(read instanceof ShardedSource, 'the controller reads a sharded source');
          const source = read as ShardedSource<V1ConfigMap>;
          const cached = () =>
            source
              .list()
              .filter(isOurs)
              .map((cm) => `${cm.metadata?.namespace}/${cm.metadata?.name}`);
          const owns = (key: string) => mgr.ownedBuckets?.has(bucketOfKey(key, BUCKETS)) ?? false;
          return { mgr, reconciles, source, cached, owns, running: mgr.start() };
        };
        /** Whether the replica's cache holds exactly the objects of the buckets it owns. */
        const cachesItsBuckets = (r: ReturnType<typeof replica>) => {
          const cached = new Set(r.cached());
          return (
            keys.every((key) => cached.has(key) === r.owns(key)) && cached.size === keys.filter(r.owns).length
          );
        };

        const a = replica('cache-a');
        await eventually('a owns every bucket', () => a.mgr.ownedBuckets?.size === BUCKETS, 20_000);
        await eventually(
          'a caches every object',
          () => cachesItsBuckets(a) && a.cached().length === keys.length,
          20_000,
        );
        await eventually(
          'a reconciled every object',
          () => new Set(a.reconciles.map((r) => r.key)).size === keys.length,
          20_000,
        );
        const aFirstPass = a.reconciles.length;
        assert.equal(a.source.informer?.health().shardMode, mode);
        const shardModes = (await a.mgr.registry.getSingleMetric(SHARD_MODE_METRIC)?.get())?.values ?? [];
        assert.ok(
          shardModes.some((v) => v.labels['mode'] === mode && v.value === 1),
          `${SHARD_MODE_METRIC} reports mode ${mode}: ${JSON.stringify(shardModes)}`,
        );

        const b = replica('cache-b');
        await eventually(
          'a and b own every bucket once',
          () => {
            const owned = [...(a.mgr.ownedBuckets ?? []), ...(b.mgr.ownedBuckets ?? [])];
            return (
              (b.mgr.ownedBuckets?.size ?? 0) > 0 &&
              owned.length === BUCKETS &&
              new Set(owned).size === BUCKETS
            );
          },
          20_000,
        );
        await eventually(
          'each caches exactly its buckets’ objects',
          () => cachesItsBuckets(a) && cachesItsBuckets(b),
          20_000,
        );
        assert.ok(a.cached().length > 0 && b.cached().length > 0, 'both hold a share');
        assert.equal(a.cached().length + b.cached().length, keys.length);
        assert.equal(b.source.informer?.health().shardMode, mode);
        assert.equal(a.source.informer?.health().shardMode, mode);
        // a only gave buckets up: the swap replayed nothing it already held.
        assert.deepEqual(a.reconciles.slice(aFirstPass), [], 'the swap queued the objects a kept again');

        const changedAt = Date.now();
        await Promise.all(
          keys.map((key) => {
            const [namespace, name] = split(key);
            return cms.patch(name, { data: { v: '1' } }, { type: 'merge', namespace });
          }),
        );
        const lastSeen = (r: ReturnType<typeof replica>) =>
          new Map(r.reconciles.filter((x) => x.at >= changedAt).map((x) => [x.key, x.v]));
        await eventually(
          'every change reconciled by its bucket’s owner',
          () => {
            const [seenByA, seenByB] = [lastSeen(a), lastSeen(b)];
            return keys.every((key) => (a.owns(key) ? seenByA : seenByB).get(key) === '1');
          },
          20_000,
        );
        for (const m of managers) m.stop();
        await Promise.all([a.running, b.running]);
      },
    );
  });
}
