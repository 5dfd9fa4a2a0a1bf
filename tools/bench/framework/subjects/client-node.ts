// The framework benchmark's @kubernetes/client-node subject: what a TypeScript
// user writes today with that library alone. makeInformer's cache, its
// add/update/delete callbacks feeding a plain de-duplicating queue, and a
// loop of `concurrency` workers running the trivial reconcile.
import { createServer } from 'node:http';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  makeInformer,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { WIDGET } from '../population.ts';
import { subjectArgs } from './args.ts';
import { Counters, heapAfterGc, serve } from './serve.ts';

type Obj = KubernetesObject & { status?: { phase?: string }; data?: Record<string, string> };

const args = subjectArgs();
const heapBefore = heapAfterGc();
const kc = new KubeConfig();
kc.loadFromFile(args.kubeconfig);
const ns = args.namespace;
const [path, list] =
  args.kind === 'configmaps'
    ? [
        `/api/v1/namespaces/${ns}/configmaps`,
        () => kc.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: ns }),
      ]
    : [
        `/apis/${WIDGET.group}/${WIDGET.version}/namespaces/${ns}/${WIDGET.plural}`,
        () =>
          kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
            group: WIDGET.group,
            version: WIDGET.version,
            namespace: ns,
            plural: WIDGET.plural,
          }),
      ];
const informer = makeInformer<Obj>(kc, path, list as () => Promise<KubernetesListObject<Obj>>);

// A plain queue: a key waiting once, however many events name it.
const waiting = new Set<string>();
const idle: Array<() => void> = [];
const enqueue = (key: string) => {
  waiting.add(key);
  idle.shift()?.();
};
const counters = new Counters();
const onEvent = (obj: Obj) => {
  counters.event();
  enqueue(`${obj.metadata!.namespace}/${obj.metadata!.name}`);
};
informer.on('add', onEvent);
informer.on('update', onEvent);
informer.on('delete', onEvent);
informer.on('error', (err) => {
  process.stderr.write(`informer error: ${String(err)}\n`);
  // client-node stops on an error: a user restarts it.
  setTimeout(() => void informer.start(), 1000);
});

async function worker(): Promise<never> {
  for (;;) {
    const next = waiting.values().next();
    if (next.done) {
      await new Promise<void>((resolve) => idle.push(resolve));
      continue;
    }
    const key = next.value;
    waiting.delete(key);
    const [namespace, name] = key.split('/') as [string, string];
    // One cached read, one status check, no write.
    const obj = informer.get(name, namespace);
    void ((obj?.status?.phase ?? obj?.data?.['phase']) === 'Ready');
    counters.reconciled();
    // Let I/O in between reconciles, as any loop that awaits its reconcile does.
    await new Promise((r) => setImmediate(r));
  }
}

let synced = false;
const [host, port] = args.healthAddress.split(':') as [string, string];
createServer((req, res) => {
  res.statusCode = req.url === '/readyz' && !synced ? 503 : 200;
  res.end(res.statusCode === 200 ? 'ok' : 'not synced');
}).listen(Number(port), host);

const startedAt = performance.now();
// Resolves once the list is in the cache and the watch is open.
await informer.start();
synced = true;
for (let i = 0; i < args.concurrency; i++) void worker();
serve(
  counters,
  {
    keys: () => informer.list(ns).map((o) => `${o.metadata!.namespace}/${o.metadata!.name}`),
    enqueue: (keys) => keys.forEach(enqueue),
  },
  { ms: performance.now() - startedAt, heapBefore, startedAt },
);
process.once('SIGTERM', () => process.exit(0));
