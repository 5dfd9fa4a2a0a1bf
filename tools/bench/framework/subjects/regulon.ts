// The framework benchmark's Regulon subject: a Manager (packages/runtime) with
// one controller over the shared informer cache (packages/cache) and the
// trivial reconcile, speaking the harness's protocol (../protocol.ts).
import { KubeClient, type KubeObject } from '@regulon/client';
import { Manager, createLogger, requestKey } from '@regulon/runtime';
import { KIND_TYPES } from '../population.ts';
import { subjectArgs } from './args.ts';
import { Counters, heapAfterGc, serve } from './serve.ts';

const args = subjectArgs();
const heapBefore = heapAfterGc();
const type = KIND_TYPES[args.kind];
const mgr = new Manager({
  client: KubeClient.load({ kubeconfigPath: args.kubeconfig, qps: Infinity }),
  // stdout carries the protocol.
  logger: createLogger({ level: 'warn', destination: process.stderr }),
  metricsBindAddress: '0',
  healthBindAddress: args.healthAddress,
  namespace: args.namespace,
});
const informer = mgr.informerFor<KubeObject & { status?: { phase?: string }; data?: Record<string, string> }>(
  type,
);
const counters = new Counters();
const count = () => {
  counters.event();
  return true;
};
const controller = mgr
  .controller('framework')
  .for(type)
  .withEventFilter({ create: count, update: count, delete: count })
  .withOptions({ maxConcurrentReconciles: args.concurrency })
  .complete({
    // One cached read, one status check, no write.
    reconcile(req) {
      const obj = informer.get(req.name, req.namespace);
      void ((obj?.status?.phase ?? obj?.data?.['phase']) === 'Ready');
      counters.reconciled();
      return Promise.resolve();
    },
  });

const startedAt = performance.now();
const running = mgr.start();
await mgr.informers.waitForSync();
serve(
  counters,
  {
    keys: () =>
      informer.list().map((o) => requestKey({ name: o.metadata!.name!, namespace: o.metadata!.namespace! })),
    enqueue: (keys) => {
      for (const key of keys) controller.queue.add(key);
    },
  },
  { ms: performance.now() - startedAt, heapBefore, startedAt },
);
process.once('SIGTERM', () => mgr.stop());
await running;
// stdin's reader would keep the process alive; exiting also writes a --cpu-prof profile.
process.exit(0);
