// A controller giving up the keys of some buckets during a burst of changes, against the real
// API server: the primitive a sharded manager hands a bucket over with. Once setOwnedKeys()
// has resolved, no key of those buckets is reconciled again, and the other keys converge.
import assert from 'node:assert/strict';
import { setTimeout as work } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { createLogger } from '../observability/logging.ts';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { forEachConcurrently } from '../testing/concurrently.ts';
import { eventually } from '../testing/wait.ts';
import { predicate } from './predicates.ts';
import { UNOWNED_KEYS_DROPPED_METRIC_NAME, bucketOfKey } from './owned-keys.ts';

const NAMESPACES = 4;
const PER_NAMESPACE = 75;
/** As many as a sharded manager would use by default: four namespaces rarely share one. */
const BUCKETS = 16;
const RECONCILE_MS = 5;
/**
 * A released key's reconcile of the burst's first change takes this long, so that some are
 * running when the buckets are released and the release has to wait for them.
 */
const SLOW_RECONCILE_MS = 50;
const WRITE_CONCURRENCY = 50;

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

/** Runs `fn` over `items`, `WRITE_CONCURRENCY` at a time. */
const forEach = <T>(items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<void> =>
  forEachConcurrently(items, WRITE_CONCURRENCY, fn);

/** `count` test namespaces whose keys fall in `count` different buckets. */
async function namespacesInDistinctBuckets(count: number): Promise<string[]> {
  const byBucket = new Map<number, string>();
  while (byBucket.size < count) {
    const ns = await env.newNamespace('rt-owned');
    const bucket = bucketOfKey(`${ns}/x`, BUCKETS);
    if (!byBucket.has(bucket)) byBucket.set(bucket, ns);
  }
  return [...byBucket.values()];
}

test(
  `after setOwnedKeys() resolves no key of the released buckets is reconciled, during a burst of changes to ${NAMESPACES * PER_NAMESPACE} ConfigMaps, and the others converge`,
  { timeout: 60_000 },
  async (t) => {
    const namespaces = await namespacesInDistinctBuckets(NAMESPACES);
    const released = new Set(namespaces.slice(0, 2).map((ns) => bucketOfKey(`${ns}/x`, BUCKETS)));
    const kept = namespaces.slice(2);
    const keys = namespaces.flatMap((ns) =>
      Array.from({ length: PER_NAMESPACE }, (_, i) => ({ namespace: ns, name: `cm-${i}` })),
    );
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    await forEach(keys, (k) => cms.create({ metadata: k, data: { v: '0' } }));

    const mgr = testManager(env.kubeConfig, {
      logger: createLogger({ level: 'silent' }),
      clientOptions: { qps: 1000, burst: 1000 },
      gracefulShutdownTimeoutMs: 5000,
    });
    managers.push(mgr);
    const isReleased = (key: string) => released.has(bucketOfKey(key, BUCKETS));
    // Each reconcile: when it started and ended, and which version of the object it saw.
    const starts: Array<{ key: string; at: number; end: number; v: string | undefined }> = [];
    const ours = new Set(namespaces);
    // Only the test's objects: each namespace also holds its kube-root-ca.crt.
    const isOurs = (cm: V1ConfigMap) =>
      ours.has(cm.metadata?.namespace ?? '') && (cm.metadata?.name ?? '').startsWith('cm-');
    const controller = mgr
      .controller('owned-keys')
      .for(Kinds.ConfigMap, { predicates: [predicate(isOurs)] })
      .withOptions({ maxConcurrentReconciles: 4 })
      .reconcile(async (cm) => {
        const key = `${cm.metadata.namespace}/${cm.metadata.name}`;
        const v = cm.data?.['v'];
        const run = { key, at: performance.now(), end: Infinity, v };
        starts.push(run);
        await work(isReleased(key) && v === '1' ? SLOW_RECONCILE_MS : RECONCILE_MS);
        run.end = performance.now();
      });
    const running = mgr.start();
    const lastSeen = () => new Map(starts.map((s) => [s.key, s.v]));
    await eventually('every ConfigMap reconciled once', () => lastSeen().size === keys.length, 30_000);

    // The burst: every object changes twice; the buckets are released in the middle of it.
    let releasedAt = Infinity;
    let calledAt = Infinity;
    let releaseTook = 0;
    const bump = (v: string) => (k: { namespace: string; name: string }) =>
      cms.patch(k.name, { data: { v } }, { type: 'merge', namespace: k.namespace });
    const burst = forEach(keys, bump('1'));
    await eventually('the burst under way', () => starts.some((s) => s.v === '1'), 10_000, 1);
    calledAt = performance.now();
    await controller.setOwnedKeys((key) => !released.has(bucketOfKey(key, BUCKETS)));
    releasedAt = performance.now();
    releaseTook = releasedAt - calledAt;
    await burst;
    await forEach(keys, bump('2'));

    const keptKeys = keys.filter((k) => kept.includes(k.namespace)).map((k) => `${k.namespace}/${k.name}`);
    await eventually(
      'the kept namespaces converged',
      () => {
        const seen = lastSeen();
        return keptKeys.every((key) => seen.get(key) === '2');
      },
      30_000,
    );
    const dropped =
      (await mgr.registry.getSingleMetric(UNOWNED_KEYS_DROPPED_METRIC_NAME)?.get())?.values ?? [];
    mgr.stop();
    await running;

    const late = starts.filter((s) => isReleased(s.key) && s.at >= releasedAt);
    const droppedEvents = dropped.find(
      (v) => v.labels['controller'] === 'owned-keys' && v.labels['at'] === 'event',
    );
    t.diagnostic(
      `release took ${releaseTook.toFixed(1)} ms; reconciles of released keys before it: ` +
        `${starts.filter((s) => isReleased(s.key)).length}, after: ${late.length}; ` +
        `events dropped: ${droppedEvents?.value}; reconciles in all: ${starts.length}`,
    );
    const runningAtCall = starts.filter((s) => isReleased(s.key) && s.at < calledAt && s.end > calledAt);
    t.diagnostic(
      `reconciles of released keys running when setOwnedKeys() was called: ${runningAtCall.length}`,
    );
    assert.ok(runningAtCall.length > 0, 'no reconcile of a released key was running: nothing to wait for');
    assert.deepEqual(
      starts.filter((s) => isReleased(s.key) && s.end > releasedAt),
      [],
      'setOwnedKeys() resolved before reconciles of released keys had finished',
    );
    assert.deepEqual(late, [], 'keys of released buckets reconciled after setOwnedKeys() resolved');
    assert.ok(
      starts.some((s) => isReleased(s.key) && s.v === '0'),
      'the released keys were reconciled before the release',
    );
    // Every released object changed at least once after the release (the second round).
    assert.ok(
      (droppedEvents?.value ?? 0) >= keys.length / 2,
      `only ${droppedEvents?.value} events of released keys were dropped`,
    );
  },
);
