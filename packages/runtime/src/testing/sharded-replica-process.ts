// A sharded manager replica for the sharded-manager tests: one controller over the ConfigMaps
// named obj-* in $NAMESPACES (comma-separated), sharded by namespace over $BUCKETS buckets
// whose Leases live in $LEASE_NAMESPACE; $SHARD_CACHES=true caches the owned buckets only.
// Each reconcile records the object's data.v in the annotation reconciled-v unless it is
// there already; it takes $RECONCILE_MS, or for an object whose data.slow is "true" until the
// file $RELEASE_SLOW_FILE exists (so that a test can freeze the process in the middle of one,
// however loaded the machine, and let it go on after resuming it). Prints one JSON
// line per event on stdout: owned (the buckets, whenever they change), reconcile-start
// (slow; pending: it will write), reconcile (start, end, v, attemptAt: when the write was
// attempted, wrote, refused: the write guard refused it), exit. Logs go to stderr at
// $LOG_LEVEL, default fatal: the freezes and kills the tests make log errors that are expected.
import { existsSync } from 'node:fs';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import type { DestinationStream } from 'pino';
import { Manager } from '../manager/manager.ts';
import { stopOnSignals } from '../manager/signals.ts';
import { createLogger } from '../observability/logging.ts';
import { predicate } from '../reconcile/predicates.ts';
import { BucketNotOwnedError } from '../sharding/bucket-ownership.ts';

const env = (k: string) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is required`);
  return v;
};
const identity = env('IDENTITY');
const say = (event: string, extra: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ event, identity, at: Date.now(), ...extra })}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const namespaces = new Set(env('NAMESPACES').split(','));
const reconcileMs = Number(process.env['RECONCILE_MS'] ?? '0');
const releaseSlowFile = env('RELEASE_SLOW_FILE');
/** A slow reconcile's wait: until the test creates the file. */
const released = async () => {
  while (!existsSync(releaseSlowFile)) await sleep(20);
};
const mgr = new Manager({
  client: KubeClient.load({ kubeconfigPath: env('KUBECONFIG'), qps: 500, burst: 500 }),
  logger: createLogger({
    level: process.env['LOG_LEVEL'] ?? 'fatal',
    destination: process.stderr as unknown as DestinationStream,
  }),
  metricsBindAddress: '0',
  healthBindAddress: '0',
  gracefulShutdownTimeoutMs: 5000,
  leaderElection: { enabled: false, namespace: '', name: '', identity },
  sharding: {
    namespace: env('LEASE_NAMESPACE'),
    name: 'sharded-test',
    buckets: Number(env('BUCKETS')),
    leaseDurationMs: Number(env('LEASE_MS')),
    renewDeadlineMs: Number(env('RENEW_MS')),
    retryPeriodMs: Number(env('RETRY_MS')),
    shardCaches: process.env['SHARD_CACHES'] === 'true',
  },
});
const ours = (cm: V1ConfigMap) =>
  namespaces.has(cm.metadata?.namespace ?? '') && (cm.metadata?.name ?? '').startsWith('obj-');
mgr
  .controller('sharded-test')
  .for(Kinds.ConfigMap, { predicates: [predicate(ours)] })
  .withOptions({ maxConcurrentReconciles: 8 })
  .reconcile(async (cm, ctx) => {
    const key = `${cm.metadata.namespace}/${cm.metadata.name}`;
    const v = cm.data?.['v'];
    const start = Date.now();
    const slow = cm.data?.['slow'] === 'true';
    const pending = cm.metadata.annotations?.['reconciled-v'] !== v;
    say('reconcile-start', { key, v, slow, pending });
    await (slow ? released() : sleep(reconcileMs));
    let wrote = false;
    let refused = false;
    let attemptAt: number | undefined;
    if (pending) {
      attemptAt = Date.now();
      try {
        await ctx.client
          .resource<V1ConfigMap>(Kinds.ConfigMap)
          .patch(
            cm.metadata.name,
            { metadata: { annotations: { 'reconciled-v': v ?? '', 'reconciled-by': identity } } },
            { type: 'merge', namespace: cm.metadata.namespace },
          );
        wrote = true;
      } catch (err) {
        if (!(err instanceof BucketNotOwnedError)) throw err;
        refused = true;
      }
    }
    say('reconcile', { key, v, start, end: Date.now(), attemptAt, wrote, refused });
  });

let owned = '';
const watchOwned = setInterval(() => {
  const now = [...(mgr.ownedBuckets ?? [])].sort((a, b) => a - b);
  if (now.join() !== owned) {
    owned = now.join();
    say('owned', { buckets: now });
  }
}, 20);
stopOnSignals(mgr);
mgr.start().then(
  () => {
    clearInterval(watchOwned);
    say('exit', { code: 0 });
    process.exit(0);
  },
  (err: unknown) => {
    say('exit', { code: 1, err: String(err) });
    process.exit(1);
  },
);
