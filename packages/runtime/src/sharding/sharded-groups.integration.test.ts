// Which runnables a sharded manager shards, against the real API server: two managers in one
// process with leader election and sharding both on. The controller runs on both, each on the
// keys of its own buckets; a leader-only runnable that is not a controller runs on the leader
// only; a controller built with needLeaderElection: false works on every key on both.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { createLogger } from '../observability/logging.ts';
import { bucketOfKey } from '../reconcile/owned-keys.ts';
import { predicate } from '../reconcile/predicates.ts';
import { eventually } from '../testing/wait.ts';

const BUCKETS = 16;
const NAMESPACES = 8;
const PER_NAMESPACE = 10;
const LEASE = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };

let env: TestEnv;
let client: KubeClient;
const managers: Manager[] = [];

before(async () => {
  env = await start();
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 1000, burst: 1000 });
});
after(async () => {
  for (const m of managers) m.stop();
  client.close();
  await env.stop();
});

test(
  'with leader election and sharding on, controllers split the keys by bucket, a leader-only runnable runs on the leader only, an everywhere controller sees every key',
  { timeout: 60_000 },
  async () => {
    const namespaces: string[] = [];
    for (let i = 0; i < NAMESPACES; i++) namespaces.push(await env.newNamespace('rt-groups'));
    const leaseNs = await env.newNamespace('rt-groups-leases');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    const keys = namespaces.flatMap((ns) =>
      Array.from({ length: PER_NAMESPACE }, (_, i) => `${ns}/obj-${i}`),
    );
    await Promise.all(
      keys.map((key) => {
        const [namespace, name] = key.split('/') as [string, string];
        return cms.create({ metadata: { namespace, name }, data: { v: '0' } });
      }),
    );
    const ours = predicate<V1ConfigMap>(
      (cm) => namespaces.includes(cm.metadata?.namespace ?? '') && !!cm.metadata?.name?.startsWith('obj-'),
    );

    const replica = (identity: string) => {
      const mgr = testManager(env.kubeConfig, {
        logger: createLogger({ level: 'silent' }),
        clientOptions: { qps: 1000, burst: 1000 },
        gracefulShutdownTimeoutMs: 5000,
        leaderElection: { enabled: true, namespace: leaseNs, name: 'groups-leader', identity, ...LEASE },
        sharding: { namespace: leaseNs, name: 'groups-shards', buckets: BUCKETS, ...LEASE },
      });
      managers.push(mgr);
      const sharded = new Set<string>();
      const everywhere = new Set<string>();
      let leaderOnlyRuns = 0;
      mgr
        .controller('sharded')
        .for(Kinds.ConfigMap, { predicates: [ours] })
        .reconcile((cm) => {
          sharded.add(`${cm.metadata.namespace}/${cm.metadata.name}`);
          return Promise.resolve();
        });
      mgr
        .controller('everywhere')
        .for(Kinds.ConfigMap, { predicates: [ours] })
        .withOptions({ needLeaderElection: false })
        .reconcile((cm) => {
          everywhere.add(`${cm.metadata.namespace}/${cm.metadata.name}`);
          return Promise.resolve();
        });
      mgr.add({
        name: 'leader-only-task',
        needLeaderElection: true,
        start: async (signal) => {
          leaderOnlyRuns++;
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        },
      });
      return { mgr, sharded, everywhere, leaderOnlyRuns: () => leaderOnlyRuns, running: mgr.start() };
    };

    const a = replica('groups-a');
    const b = replica('groups-b');
    const ownedBy = (r: typeof a) => [...(r.mgr.ownedBuckets ?? [])];
    await eventually(
      'a and b own every bucket once',
      () => {
        const owned = [...ownedBy(a), ...ownedBy(b)];
        return (
          ownedBy(a).length > 0 &&
          ownedBy(b).length > 0 &&
          new Set(owned).size === BUCKETS &&
          owned.length === BUCKETS
        );
      },
      20_000,
    );
    const inBuckets = (r: typeof a) =>
      keys.filter((key) => r.mgr.ownedBuckets?.has(bucketOfKey(key, BUCKETS)));
    await eventually(
      'each sharded controller reconciled its buckets’ keys',
      () => [a, b].every((r) => inBuckets(r).every((key) => r.sharded.has(key))),
      20_000,
    );
    await eventually(
      'the everywhere controllers reconciled every key',
      () => [a, b].every((r) => keys.every((key) => r.everywhere.has(key))),
      20_000,
    );
    await eventually('one of them leads', () => a.mgr.leading || b.mgr.leading, 10_000);

    const leader = a.mgr.leading ? a : b;
    const follower = leader === a ? b : a;
    assert.equal(leader.leaderOnlyRuns(), 1, 'the leader-only runnable runs on the leader');
    assert.equal(follower.leaderOnlyRuns(), 0, 'the leader-only runnable ran on the follower');
    assert.ok(inBuckets(a).length > 0 && inBuckets(b).length > 0, 'the keys are split between the two');
    assert.equal(
      inBuckets(a).length + inBuckets(b).length,
      keys.length,
      'every key is in exactly one replica’s buckets',
    );
    for (const m of managers) m.stop();
    await Promise.all([a.running, b.running]);
  },
);

test('sharding with a cold standby is refused: its sharded controllers would have no caches', () => {
  assert.throws(
    () =>
      testManager(env.kubeConfig, {
        leaderElection: { enabled: true, namespace: 'x', name: 'x', warmStandby: false },
        sharding: { namespace: 'x' },
      }),
    /sharding needs warm caches/,
  );
});
