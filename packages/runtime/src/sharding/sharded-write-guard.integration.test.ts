// A sharded manager's write guard against the real API server: a reconcile that is still
// running when its key's bucket is lost (here the bucket's Lease is taken from under it, as
// another replica would after this one froze past the lease) has its writes refused, while a
// reconcile of a key in a bucket still owned writes; and the bucket, owned again, brings its
// cached keys back to the queue without any change to them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds, retyped } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import type { Lease } from '../election/leader-election.ts';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { createLogger } from '../observability/logging.ts';
import { predicate } from '../reconcile/predicates.ts';
import { bucketOfKey } from '../reconcile/owned-keys.ts';
import { microTime } from '../support.ts';
import { eventually } from '../testing/wait.ts';
import { BucketNotOwnedError } from './bucket-ownership.ts';

const BUCKETS = 16;
const GROUP = 'guard-shards';
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
