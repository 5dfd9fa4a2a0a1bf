// One replica of the sharded benchmark: a Manager (packages/runtime) in sharded mode with one
// controller over Widgets in every namespace and the framework benchmark's trivial reconcile
// (one cached read, one status check, no write), speaking the harness's line protocol
// (../framework/protocol.ts): it streams the indexes of the objects it reconciles
// ("reconciled"), and answers "shard" (its cache and buckets), "requeue" (every cached key
// added at once; "drained" once all are reconciled) and "stats" (with its heap after a full
// collection, so run it with --expose-gc).
//
//   node --expose-gc tools/bench/sharded/replica.ts --kubeconfig K --identity ID
//     [--lease-namespace bench-sharding] [--group NAME] [--buckets 16] [--caches owned|whole]
//     [--concurrency 1] [--lease-ms 15000 --renew-ms 10000 --retry-ms 2000]
//
// --caches owned is `sharding.shardCaches: true` (each replica lists and watches its buckets'
// objects only, the API server cutting the shard when it has the ShardedListAndWatch gate);
// whole caches every object on every replica and filters the keys.
import { parseArgs } from 'node:util';
import { KubeClient, type KubeObject } from '@regulon/client';
import { SHARD_MODE_METRIC } from '@regulon/cache';
import { Manager, bucketOfKey, createLogger, requestKey } from '@regulon/runtime';
import type { SubjectMessage } from '../framework/protocol.ts';
import { WIDGET } from '../framework/population.ts';
import { heapAfterGc } from '../framework/subjects/serve.ts';
import { indexOfName } from './population.ts';
import { createInterface } from 'node:readline';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    identity: { type: 'string' },
    'lease-namespace': { type: 'string', default: 'bench-sharding' },
    group: { type: 'string', default: 'bench-shards' },
    buckets: { type: 'string', default: '16' },
    caches: { type: 'string', default: 'owned' },
    concurrency: { type: 'string', default: '1' },
    'lease-ms': { type: 'string', default: '15000' },
    'renew-ms': { type: 'string', default: '10000' },
    'retry-ms': { type: 'string', default: '2000' },
  },
});
const whole = (name: string, v: string | undefined) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a positive integer, not "${v}"`);
  return n;
};
if (!values.kubeconfig) throw new Error('--kubeconfig is required');
if (!values.identity) throw new Error('--identity is required');
if (values.caches !== 'owned' && values.caches !== 'whole')
  throw new Error(`--caches: owned or whole, not "${values.caches}"`);

const buckets = whole('buckets', values.buckets);
const emit = (msg: SubjectMessage) => process.stdout.write(`${JSON.stringify(msg)}\n`);
const mgr = new Manager({
  client: KubeClient.load({ kubeconfigPath: values.kubeconfig, qps: Infinity }),
  // stdout carries the protocol.
  logger: createLogger({ level: process.env['LOG_LEVEL'] ?? 'warn', destination: process.stderr }),
  metricsBindAddress: '0',
  healthBindAddress: '0',
  gracefulShutdownTimeoutMs: 5000,
  leaderElection: { enabled: false, namespace: '', name: '', identity: values.identity },
  sharding: {
    namespace: values['lease-namespace'],
    name: values.group,
    buckets,
    leaseDurationMs: whole('lease-ms', values['lease-ms']),
    renewDeadlineMs: whole('renew-ms', values['renew-ms']),
    retryPeriodMs: whole('retry-ms', values['retry-ms']),
    shardCaches: values.caches === 'owned',
  },
});
type Widget = KubeObject & { status?: { phase?: string } };
// What the controller reads through: the source of the owned buckets (--caches owned) or the
// shared informer of every Widget (--caches whole). The builder asks for the same one.
const cache = mgr.controllerCache<Widget>(WIDGET, { needLeaderElection: true });

let reconciles = 0;
/** A "requeue" being drained: done once reconciles reaches target. */
let drain: { target: number; count: number; started: number } | undefined;
let pending: number[] = [];
let lastAt = 0;
const controller = mgr
  .controller('sharded-bench')
  .for(WIDGET)
  .withOptions({ maxConcurrentReconciles: whole('concurrency', values.concurrency) })
  .complete({
    // One cached read, one status check, no write.
    reconcile(req) {
      const obj = cache.get(req.name, req.namespace);
      void (obj?.status?.phase === 'Ready');
      reconciles++;
      if (drain && reconciles >= drain.target) {
        emit({ ev: 'drained', count: drain.count, ms: performance.now() - drain.started });
        drain = undefined;
      }
      const i = indexOfName(req.name);
      if (i !== undefined) pending.push(i);
      lastAt = Date.now();
      return Promise.resolve();
    },
  });

// The reconciled indexes, in batches: one line per 50 ms at most.
const flush = setInterval(() => {
  if (!pending.length) return;
  emit({ ev: 'reconciled', ids: pending, at: lastAt });
  pending = [];
}, 50);

// How often the owned set changed, and how many informers have served the cache (each
// change of the owned set with --caches owned starts a new one, which lists its shard).
let owned = '';
let changes = 0;
const informers = new Set<unknown>();
const watch = setInterval(() => {
  const now = [...(mgr.ownedBuckets ?? [])].sort((a, b) => a - b).join();
  if (now !== owned) {
    owned = now;
    changes++;
  }
  const informer = (cache as { informer?: unknown }).informer ?? cache;
  if (owned) informers.add(informer);
}, 20);

async function shardMode(): Promise<string> {
  const metric = mgr.registry.getSingleMetric(SHARD_MODE_METRIC);
  if (!metric) return '';
  const { values: series } = await metric.get();
  return series.find((v) => v.value === 1)?.labels['mode']?.toString() ?? '';
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const command = line.trim();
  if (command === 'shard') {
    void shardMode().then((mode) =>
      emit({
        ev: 'shard',
        objects: cache.list().length,
        buckets: [...(mgr.ownedBuckets ?? [])].sort((a, b) => a - b),
        changes,
        informers: informers.size,
        mode,
      }),
    );
  } else if (command === 'requeue') {
    // Every key of the owned buckets added at once: with owned caches every cached key, with
    // whole caches those of the owned buckets (the controller drops the others).
    const owned = mgr.ownedBuckets ?? new Set<number>();
    const keys = cache
      .list()
      .map((o) => requestKey({ name: o.metadata!.name!, namespace: o.metadata!.namespace! }))
      .filter((key) => owned.has(bucketOfKey(key, buckets)));
    drain = { target: reconciles + keys.length, count: keys.length, started: performance.now() };
    if (!keys.length) {
      emit({ ev: 'drained', count: 0, ms: 0 });
      drain = undefined;
    }
    for (const key of keys) controller.queue.add(key);
  } else if (command === 'stats') {
    emit({ ev: 'stats', events: 0, reconciles, heap: heapAfterGc(), objects: cache.list().length });
  } else if (command) {
    emit({ ev: 'error', message: `unknown command ${command}` });
  }
});

process.once('SIGTERM', () => mgr.stop());
await mgr.start();
clearInterval(flush);
clearInterval(watch);
// stdin's reader would keep the process alive.
process.exit(0);
