// A sharded manager in this process, against the real API server:
//  - which runnables it shards: two managers with leader election and sharding both on; the
//    controller runs on both, each on the keys of its own buckets, a leader-only runnable that
//    is not a controller runs on the leader only, and a controller built with
//    needLeaderElection: false works on every key on both;
//  - its write guard: a reconcile that is still running when its key's bucket is lost (the
//    bucket's Lease taken from under it, as another replica would after this one froze past
//    the lease) has its writes refused, while a reconcile of a key in a bucket still owned
//    writes; and the bucket, owned again, brings its cached keys back to the queue;
//  - sharding with a cold standby is refused.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds, retyped } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import type { Lease } from '../election/leader-election.ts';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { createLogger } from '../observability/logging.ts';
import { bucketOfKey } from '../reconcile/owned-keys.ts';
import { predicate } from '../reconcile/predicates.ts';
import { microTime } from '../support.ts';
import { eventually } from '../testing/wait.ts';
import { BucketNotOwnedError } from './bucket-ownership.ts';

const BUCKETS = 16;
const LEASE = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };
/** The groups test's objects. */
const NAMESPACES = 8;
const PER_NAMESPACE = 10;
/** The write-guard test's sharding group. */
const GROUP = 'guard-shards';

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

/** Two test namespaces whose keys fall in different buckets. */
async function twoNamespacesInTwoBuckets(): Promise<[string, string]> {
  const first = await env.newNamespace('rt-guard');
  for (;;) {
    const second = await env.newNamespace('rt-guard');
    if (bucketOfKey(`${second}/x`, BUCKETS) !== bucketOfKey(`${first}/x`, BUCKETS)) return [first, second];
  }
}

test(
  'a reconcile whose bucket was lost while it ran writes nothing; one in an owned bucket writes; the bucket owned again re-queues its cached keys',
  { timeout: 60_000 },
  async () => {
    const [lostNs, keptNs] = await twoNamespacesInTwoBuckets();
    const leaseNs = await env.newNamespace('rt-guard-leases');
    const lostBucket = bucketOfKey(`${lostNs}/x`, BUCKETS);
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    await cms.create({ metadata: { namespace: lostNs, name: 'held' }, data: { v: '0' } });
    await cms.create({ metadata: { namespace: keptNs, name: 'free' }, data: { v: '0' } });

    const mgr = testManager(env.kubeConfig, {
      logger: createLogger({ level: 'silent' }),
      gracefulShutdownTimeoutMs: 5000,
      sharding: { namespace: leaseNs, name: GROUP, buckets: BUCKETS, ...LEASE },
    });
    managers.push(mgr);
    const ours = new Set([lostNs, keptNs]);
    const gate = Promise.withResolvers<void>();
    const outcomes: Array<{ key: string; v: string | undefined; wrote: boolean; error?: unknown }> = [];
    let heldRunning = false;
    mgr
      .controller('guarded')
      .for(Kinds.ConfigMap, { predicates: [predicate((cm) => ours.has(cm.metadata?.namespace ?? ''))] })
      .withOptions({ maxConcurrentReconciles: 2 })
      .reconcile(async (cm, ctx) => {
        const key = `${cm.metadata.namespace}/${cm.metadata.name}`;
        const v = cm.data?.['v'];
        if (cm.metadata.name === 'held' && v === 'block') {
          heldRunning = true;
          await gate.promise;
        }
        try {
          await ctx.client
            .resource<V1ConfigMap>(Kinds.ConfigMap)
            .patch(
              cm.metadata.name,
              { metadata: { annotations: { 'seen-v': v ?? '' } } },
              { type: 'merge', namespace: cm.metadata.namespace },
            );
          outcomes.push({ key, v, wrote: true });
        } catch (error) {
          outcomes.push({ key, v, wrote: false, error });
        }
      });
    const running = mgr.start();
    await eventually('one replica owns every bucket', () => mgr.ownedBuckets?.size === BUCKETS, 20_000);
    await eventually('both keys reconciled from the initial queueing', () => outcomes.length >= 2, 10_000);

    await cms.patch('held', { data: { v: 'block' } }, { type: 'merge', namespace: lostNs });
    await eventually('the reconcile of held is running', () => heldRunning, 10_000, 5);

    // Another identity takes the bucket's Lease: this replica's next renewal finds it held.
    const leases = client.resource(retyped<Lease>(Kinds.Lease));
    const leaseName = `${GROUP}-bucket-${lostBucket}`;
    const lease = await leases.get(leaseName, { namespace: leaseNs });
    await leases.replace({
      ...lease,
      spec: {
        ...lease.spec,
        holderIdentity: 'thief',
        renewTime: microTime(new Date()),
        leaseDurationSeconds: LEASE.leaseDurationMs / 1000,
      },
    });
    await eventually('the bucket is lost', () => !mgr.ownedBuckets?.has(lostBucket), 10_000, 10);

    const before = outcomes.length;
    gate.resolve();
    await eventually('the blocked reconcile tried its write', () => outcomes.length > before, 5_000, 5);
    const refused = outcomes.at(-1)!;
    assert.equal(refused.key, `${lostNs}/held`);
    assert.equal(refused.wrote, false, 'the write of a lost bucket went through');
    assert.ok(refused.error instanceof BucketNotOwnedError, `refused with ${String(refused.error)}`);
    assert.equal((await cms.get('held', { namespace: lostNs })).metadata?.annotations?.['seen-v'], '0');

    await cms.patch('free', { data: { v: '1' } }, { type: 'merge', namespace: keptNs });
    await eventually(
      'the owned bucket’s key wrote',
      () => outcomes.some((o) => o.key === `${keptNs}/free` && o.v === '1' && o.wrote),
      10_000,
    );

    // The thief does not renew: after its lease this replica owns the bucket again and queues
    // the cached `held`, unchanged since, from its cache.
    await eventually('the bucket owned again', () => mgr.ownedBuckets?.has(lostBucket) === true, 15_000);
    await eventually(
      'held reconciled again and written',
      () => outcomes.some((o) => o.key === `${lostNs}/held` && o.v === 'block' && o.wrote),
      10_000,
    );
    mgr.stop();
    await running;
  },
);
