// A restarted manager, or a new leader, costs converged objects no request:
// every kind, in every ordinary spec form, including those the API server
// stores in another form than the controllers apply (a Pod template's empty
// env, quantities such as 1024Mi or 1000m) and objects whose problem the
// status already reports (no Warning Event again).
//
// REGULON_CONVERGED_OBJECTS=400 scales it up (the forms below, round robin)
// to measure a hand-over with many objects; the default is one of each. Run
// so, without `regulon-testenv exec`, it starts its own control plane sized
// for them (three nodes of 110 Pods hold about 300 of these objects).
//   REGULON_CONVERGED_OBJECTS=400 npx node --test apps/manager/src/converged.integration.test.ts
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cache, type CacheObject } from '@regulon/cache-controller';
import { KubeClient, Kinds, apiVersionOf, type KubeObject, type ResourceType } from '@regulon/client';
import { Database, DatabaseBackup, type DatabaseObject } from '@regulon/database-controller';
import { MyApp, type MyAppObject } from '@regulon/myapp-controller';
import { Manager, createLogger, type EventRecorder } from '@regulon/runtime';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { Registry } from 'prom-client';
import { CONTROLLERS } from './controllers.ts';

const OBJECTS = Number(process.env['REGULON_CONVERGED_OBJECTS'] ?? '0');
/**
 * Every Database's backups set, and off: on, they need an object store (the CRD refuses a
 * Database whose backups go nowhere), which the simulated Pods here could not reach.
 */
const BACKUP = { enabled: false, schedule: '0 0 1 1 *', historyLimit: 3 };

type Spec<T extends { spec: unknown }> = T['spec'];
type Form =
  | { kind: 'Database'; spec: Spec<DatabaseObject> }
  | { kind: 'Cache'; spec: Spec<CacheObject> }
  | { kind: 'MyApp'; spec: Spec<MyAppObject> };

const pg = (extra: Partial<Spec<DatabaseObject>> = {}): Spec<DatabaseObject> => ({
  engine: 'postgres',
  version: '16.6',
  replicas: 1,
  storage: { size: '1Gi' },
  backup: BACKUP,
  ...extra,
});
const redis = (extra: Partial<Spec<CacheObject>> = {}): Spec<CacheObject> =>
  ({ engine: 'redis', version: '7.4.11', replicas: 1, memory: '256Mi', ...extra }) as Spec<CacheObject>;

/** The spec forms, each named after what it exercises. */
const FORMS: Record<string, Form> = {
  'db-plain': { kind: 'Database', spec: pg() },
  // Non-canonical quantities: the StatefulSet comes back with 1Gi and 1.
  'db-quantities': {
    kind: 'Database',
    spec: pg({
      resources: { requests: { cpu: '1000m', memory: '1024Mi' }, limits: { cpu: '2000m', memory: '1024Mi' } },
    }),
  },
  'db-mysql': {
    kind: 'Database',
    spec: pg({
      engine: 'mysql',
      version: '8.4.3',
      storage: { size: '1024Mi' },
      resources: { requests: { cpu: '0.5', memory: '0.5Gi' } },
      parameters: { max_connections: '200' },
    }),
  },
  'db-replicas': { kind: 'Database', spec: pg({ replicas: 2 }) },
  // No auth: the Pod template carries env: [], which the API server drops.
  'cache-noauth': { kind: 'Cache', spec: redis() },
  // Memory as an integer (the CRD's int-or-string).
  'cache-intmem': {
    kind: 'Cache',
    spec: redis({ engine: 'memcached', version: '1.6.45', memory: 1073741824 }),
  },
  'cache-auth': { kind: 'Cache', spec: redis({ auth: { enabled: true }, memory: '0.5Gi' }) },
  'cache-persistent': {
    kind: 'Cache',
    // 1000000000 comes back as 1G.
    spec: redis({ persistence: { enabled: true, size: '1024Mi' }, memory: 1000000000 }),
  },
  'cache-replicas': { kind: 'Cache', spec: redis({ engine: 'memcached', version: '1.6.45', replicas: 2 }) },
  app: {
    kind: 'MyApp',
    spec: {
      image: 'ghcr.io/example/shop:1.0',
      replicas: 1,
      port: 8080,
      database: pg({ resources: { requests: { memory: '1024Mi' } } }),
      cache: redis({ memory: 536870912 }),
    },
  },
  // No children at all: the Deployment's env is empty.
  'app-alone': {
    kind: 'MyApp',
    spec: { image: 'ghcr.io/example/shop:1.0', replicas: 1, port: 8080 },
  },
  // Problems the status reports (Degraded), each with a Warning Event when first found.
  'cache-nosecret': { kind: 'Cache', spec: redis({ auth: { secretName: 'no-such-secret' } }) },
  'db-nosecret': { kind: 'Database', spec: pg({ credentials: { secretName: 'no-such-secret' } }) },
  // Its Database's name is taken by one it doesn't own (created first, see CONFLICTING).
  'app-conflict': {
    kind: 'MyApp',
    spec: { image: 'ghcr.io/example/shop:1.0', replicas: 1, port: 8080, database: pg() },
  },
};

const TYPES = { Database: Database.type, Cache: Cache.type, MyApp: MyApp.type } as const;
const DEGRADED = new Set(['cache-nosecret', 'db-nosecret', 'app-conflict']);
// KWOK's Pods run no server: a replicated Database asks its instances over SQL, gets no
// answer, and stays not Ready (NoPrimary) rather than claim a primary. Its Pods do run
// the version (currentVersion is set), so the phase derived from that is Updating.
const NO_PRIMARY = new Set(['db-replicas']);
const CONFLICTING = 'app-conflict';

/** One object per form, or OBJECTS of them round robin. */
function objects(): Array<{ name: string; form: string }> {
  const names = Object.keys(FORMS);
  const n = Math.max(OBJECTS, names.length);
  return Array.from({ length: n }, (_, i) => {
    const form = names[i % names.length]!;
    return { form, name: n === names.length ? form : `${form}-${Math.floor(i / names.length)}` };
  });
}

interface Started {
  mgr: Manager;
  registry: Registry;
  recorders: EventRecorder[];
  done: Promise<void>;
}

let env: TestEnv;
let client: KubeClient;
let ns: string;
before(async () => {
  // Scaled as the end-to-end benchmark scales it (tools/bench/harness/cell.ts).
  env = await start(
    OBJECTS > 0
      ? { scale: { podsPerNode: Math.max(110, OBJECTS), componentQps: 2000, statefulSetWorkers: 50 } }
      : {},
  );
  await env.installCRDs([Database.crd(), DatabaseBackup.crd(), Cache.crd(), MyApp.crd()]);
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 500, burst: 500 });
  ns = await env.newNamespace('converged');
});
after(async () => {
  client.close();
  await env.stop();
});

/** A manager with every controller, as the binary runs them; its event recorders kept to flush them. */
function startManager(): Started {
  const registry = new Registry();
  const mgr = new Manager({
    client: KubeClient.fromKubeConfig(env.kubeConfig, { registry, qps: 500, burst: 500 }),
    registry,
    logger: createLogger({ level: process.env['LOG_LEVEL'] ?? 'warn' }),
    metricsBindAddress: '0',
    healthBindAddress: '0',
    namespace: ns,
  });
  const recorders: EventRecorder[] = [];
  const recorderFor = mgr.eventRecorder.bind(mgr);
  mgr.eventRecorder = (controller: string) => {
    const r = recorderFor(controller);
    recorders.push(r);
    return r;
  };
  for (const c of CONTROLLERS) c.setup(mgr, { maxConcurrentReconciles: 8 });
  return { mgr, registry, recorders, done: mgr.start() };
}

async function sum(registry: Registry, metric: string, keep: (l: Record<string, unknown>) => boolean) {
  const m = registry.getSingleMetric(metric);
  if (!m) return 0;
  return (await m.get()).values.filter((v) => keep(v.labels)).reduce((n, v) => n + v.value, 0);
}

/** Every object of every kind reconciled at least once since start, nothing queued or running, every Event written. */
async function settled(s: Started, counts: Record<string, number>) {
  await eventually(
    'every object reconciled, nothing queued or running',
    async () => {
      for (const c of CONTROLLERS) {
        const done = await sum(
          s.registry,
          'controller_runtime_reconcile_total',
          (l) => l['controller'] === c.name,
        );
        if (done < (counts[c.name] ?? 0)) return false;
      }
      const depth = await sum(s.registry, 'workqueue_depth', () => true);
      const busy = await sum(s.registry, 'controller_runtime_active_workers', () => true);
      return depth === 0 && busy === 0;
    },
    10 * 60_000,
  );
  await Promise.all(s.recorders.map((r) => r.flush()));
}

type Event = KubeObject & { series?: { count: number }; regarding?: { kind?: string; name?: string } };
/** Each Event about this test's objects, by name, with its occurrence count: a new Event or a series update shows. */
async function events(): Promise<Map<string, number>> {
  const list = await client.resource<Event>(Kinds.Event).list({ namespace: ns });
  return new Map(
    list.items
      .filter((e) => ['Database', 'Cache', 'MyApp'].includes(e.regarding?.kind ?? ''))
      .map((e) => [e.metadata!.name!, e.series?.count ?? 1]),
  );
}

async function listed<T extends KubeObject>(type: ResourceType<T>): Promise<T[]> {
  return (await client.resource<T>(type).list({ namespace: ns })).items;
}

test('a fresh manager writes nothing and records no Event for converged objects of every kind and spec form', async (t) => {
  const all = objects();
  const first = startManager();
  try {
    for (const { name, form } of all) {
      const f = FORMS[form]!;
      if (form === CONFLICTING)
        await client.resource<KubeObject>(Database).create({
          apiVersion: apiVersionOf(Database.type),
          kind: 'Database',
          metadata: { name: `${name}-db`, namespace: ns },
          spec: pg(),
        } as KubeObject);
      const type = TYPES[f.kind];
      await client.resource<KubeObject>(type).create({
        apiVersion: apiVersionOf(type),
        kind: f.kind,
        metadata: { name, namespace: ns },
        spec: f.spec,
      } as KubeObject);
    }
    // Converged: every object's status describes its current spec and is final (Ready, or as expected).
    await eventually(
      `all ${all.length} objects Ready, or Degraded or Updating as expected`,
      async () => {
        const items = [
          ...(await listed<DatabaseObject>(Database.type)),
          ...(await listed<CacheObject>(Cache.type)),
          ...(await listed<MyAppObject>(MyApp.type)),
        ];
        const form = new Map(all.map((o) => [o.name, o.form]));
        return items.every((o) => {
          const s = o.status as { observedGeneration?: number; phase?: string } | undefined;
          const f = form.get(o.metadata.name!) ?? '';
          const want = DEGRADED.has(f) ? 'Degraded' : NO_PRIMARY.has(f) ? 'Updating' : 'Ready';
          return s?.observedGeneration === o.metadata.generation && s?.phase === want;
        });
      },
      15 * 60_000,
      500,
    );
    // Every Warning the problems cause has been written once.
    await settled(first, {});
    assert.ok((await events()).size >= DEGRADED.size, 'the first manager reported each problem');
  } finally {
    first.mgr.stop();
    await first.done;
  }

  // What a restart, or a hand-over to another replica, starts from: empty caches, an empty memory.
  const counts = {
    database: (await listed(Database.type)).length,
    cache: (await listed(Cache.type)).length,
    myapp: (await listed(MyApp.type)).length,
  };
  const eventsBefore = await events();
  const second = startManager();
  try {
    await settled(second, counts);
    const writes = await sum(second.registry, 'rest_client_requests_total', (l) => l['method'] !== 'GET');
    const reads = await sum(second.registry, 'rest_client_requests_total', (l) => l['method'] === 'GET');
    const reconciles = await sum(second.registry, 'controller_runtime_reconcile_total', () => true);
    t.diagnostic(
      `converged: ${JSON.stringify({ objects: all.length, ...counts, reconciles, writes, reads })}`,
    );
    assert.ok(reads > 0, 'the counter counts: the manager listed and watched');
    assert.equal(writes, 0, 'no apply, status, label or Event write for a converged object');
    assert.deepEqual(
      await events(),
      eventsBefore,
      'no Event, and no repeat of one, for a state already reported',
    );
  } finally {
    second.mgr.stop();
    await second.done;
  }
});
