// Cache benchmark: initial sync time and retained heap per object for 10,000
// custom resources of about 1 KiB, with the default transform (managedFields
// stripped) and without it. Needs a control plane (REGULON_TESTENV_DIR, or it
// starts one) and --expose-gc for the heap figures.
import { KubeClient, type KubeObject, type ResourceType } from '@regulon/client';
import { start } from '@regulon/testenv';
import { SharedInformerFactory } from './factory.ts';

export interface BenchmarkResult {
  benchmark: string;
  value: number;
  unit: string;
}

const COUNT = 10_000;
const NAMESPACE = 'cache-bench';
const Blob: ResourceType = {
  group: 'bench.regulon.dev',
  version: 'v1',
  kind: 'Blob',
  plural: 'blobs',
  namespaced: true,
};

function blob(i: number): KubeObject & { spec: unknown } {
  return {
    apiVersion: 'bench.regulon.dev/v1',
    kind: 'Blob',
    metadata: { name: `blob-${i}`, namespace: NAMESPACE, labels: { app: 'bench', shard: String(i % 16) } },
    spec: { index: i, payload: 'x'.repeat(760), tags: ['alpha', 'beta', 'gamma'] },
  };
}

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error('run with --expose-gc for heap figures');
  for (let i = 0; i < 3; i++) collect();
}

async function seed(client: KubeClient): Promise<void> {
  const blobs = client.resource<KubeObject>(Blob);
  const existing = await blobs.list({ namespace: NAMESPACE, limit: 1 }).catch(() => undefined);
  let have = 0;
  if (existing) have = (await blobs.listAll({ namespace: NAMESPACE, metadataOnly: true })).items.length;
  if (have >= COUNT) return;
  let next = have;
  const worker = async () => {
    while (next < COUNT) {
      const i = next++;
      // Server-side apply, so each object carries the managedFields a real controller's objects do.
      await blobs.apply(blob(i), { fieldManager: 'bench', force: true });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

async function measure(
  client: KubeClient,
  keepManagedFields: boolean,
): Promise<{ syncMs: number; heapPerObject: number; jsonPerObject: number }> {
  gc();
  const before = process.memoryUsage().heapUsed;
  const factory = new SharedInformerFactory(client);
  const informer = factory.informerFor<KubeObject>(Blob, {
    namespace: NAMESPACE,
    ...(keepManagedFields ? { transform: null } : {}),
  });
  const ac = new AbortController();
  const t0 = performance.now();
  const running = informer.start(ac.signal);
  await informer.waitForSync();
  const syncMs = performance.now() - t0;
  if (informer.store.size !== COUNT) throw new Error(`synced ${informer.store.size} objects, want ${COUNT}`);
  // Measured while the informer is live: what the cache keeps, not what the list cost.
  gc();
  const retained = process.memoryUsage().heapUsed - before;
  const json = informer.list().reduce((n, o) => n + Buffer.byteLength(JSON.stringify(o)), 0);
  ac.abort();
  await running;
  return { syncMs, heapPerObject: retained / COUNT, jsonPerObject: json / COUNT };
}

export async function runCacheBenchmarks(): Promise<BenchmarkResult[]> {
  const env = await start();
  const client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 2000, burst: 2000 });
  try {
    await env.installCRDs([
      {
        metadata: { name: 'blobs.bench.regulon.dev' },
        spec: {
          group: 'bench.regulon.dev',
          scope: 'Namespaced',
          names: { plural: 'blobs', singular: 'blob', kind: 'Blob' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          ],
        },
      },
    ]);
    await client
      .resource({ group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false })
      .create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } })
      .catch(() => undefined);
    await seed(client);
    // Warm-up sync so both variants run on optimised code and warm server caches.
    await measure(client, false);
    const results: BenchmarkResult[] = [];
    for (const keep of [false, true]) {
      const m = await measure(client, keep);
      const label = keep ? 'managedFields kept' : 'managedFields stripped (default)';
      results.push(
        {
          benchmark: `cache: initial sync of ${COUNT} CRs, ${label}`,
          value: Math.round(m.syncMs),
          unit: 'ms',
        },
        {
          benchmark: `cache: retained heap per object, ${label}`,
          value: Math.round(m.heapPerObject),
          unit: 'bytes',
        },
        {
          benchmark: `cache: stored JSON per object, ${label}`,
          value: Math.round(m.jsonPerObject),
          unit: 'bytes',
        },
        {
          benchmark: `cache: heap / JSON, ${label}`,
          value: Number((m.heapPerObject / m.jsonPerObject).toFixed(2)),
          unit: 'x',
        },
      );
    }
    return results;
  } finally {
    client.close();
    await env.stop();
  }
}

if (import.meta.main) console.table(await runCacheBenchmarks());
