// All three controllers in one manager, against the real control plane:
// MyApp creates a Database and a Cache, which their own controllers run.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1ConfigMap, V1Deployment, V1Secret } from '@kubernetes/client-node';
import { Cache, setupCacheController, type CacheObject } from '@regulon/cache-controller';
import {
  InvalidError,
  KubeClient,
  Kinds,
  isNotFound,
  type KubeObject,
  type ResourceType,
} from '@regulon/client';
import { Database, setupDatabaseController, type DatabaseObject } from '@regulon/database-controller';
import { type Manager, testManager } from '@regulon/runtime';
import { eventually, kstatus, start, type TestEnv } from '@regulon/testenv';
import { MyApp, type MyAppObject } from './api.ts';
import { setupMyAppController } from './index.ts';

describe('MyApp composite controller', () => {
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  const apps = () => client.resource<MyAppObject>(MyApp.type);
  const gone = (type: ResourceType, name: string) =>
    client
      .resource(type)
      .get(name, { namespace: ns })
      .then(() => false, isNotFound);

  before(async () => {
    env = await start();
    await env.installCRDs([Database.crd(), Cache.crd(), MyApp.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
    ns = await env.newNamespace('myapp');
    mgr = testManager(env.kubeConfig, { namespace: ns });
    setupDatabaseController(mgr);
    setupCacheController(mgr);
    setupMyAppController(mgr);
    running = mgr.start();
  });
  after(async () => {
    mgr.stop();
    await running;
    client.close();
    await env.stop();
  });

  const spec = (over: Partial<MyAppObject['spec']> = {}): MyAppObject['spec'] =>
    ({
      image: 'ghcr.io/example/shop:1.0',
      replicas: 2,
      port: 8080,
      database: { engine: 'postgres', version: '16.6', replicas: 1, storage: { size: '1Gi' } },
      cache: { engine: 'redis', version: '7.4.11', replicas: 1, memory: '256Mi', auth: { enabled: true } },
      ...over,
    }) as MyAppObject['spec'];
  const ready = (name: string) =>
    eventually(`${name} Ready`, async () => {
      const a = await apps().get(name, { namespace: ns });
      return a.status?.observedGeneration === a.metadata.generation &&
        a.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'
        ? a
        : undefined;
    });

  test('create: children appear, the Deployment only after the binding Secrets, Ready only when all are ready', async () => {
    await apps().create(MyApp.object({ metadata: { name: 'shop', namespace: ns }, spec: spec() }));
    // Invariants checked on every observation until Ready: no Deployment before both
    // binding Secrets exist; no Ready MyApp before every child is ready.
    const exists = (type: ResourceType, name: string) =>
      client
        .resource(type)
        .get(name, { namespace: ns })
        .then(
          () => true,
          () => false,
        );
    let sawDeployment = false;
    const app = await eventually('shop Ready', async () => {
      const a = await apps().get('shop', { namespace: ns });
      const [dep, dbSecret, cacheSecret] = await Promise.all([
        exists(Kinds.Deployment, 'shop'),
        exists(Kinds.Secret, 'shop-db-credentials'),
        exists(Kinds.Secret, 'shop-cache-credentials'),
      ]);
      if (dep) {
        sawDeployment = true;
        assert.ok(dbSecret && cacheSecret, 'a Deployment exists only once both binding Secrets do');
      }
      if (a.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True') return undefined;
      const [db, cache] = await Promise.all([
        client.resource<DatabaseObject>(Database.type).get('shop-db', { namespace: ns }),
        client.resource<CacheObject>(Cache.type).get('shop-cache', { namespace: ns }),
      ]);
      assert.equal(db.status?.phase, 'Ready', 'Ready MyApp implies a Ready Database');
      assert.equal(cache.status?.phase, 'Ready', 'Ready MyApp implies a Ready Cache');
      return a.status.observedGeneration === a.metadata.generation ? a : undefined;
    });
    assert.ok(sawDeployment);
    const db = await client.resource<DatabaseObject>(Database.type).get('shop-db', { namespace: ns });
    const cache = await client.resource<CacheObject>(Cache.type).get('shop-cache', { namespace: ns });
    for (const child of [db, cache]) {
      assert.equal(child.metadata.ownerReferences?.[0]?.uid, app.metadata.uid);
      assert.equal(child.status?.phase, 'Ready');
    }
    const dep = await client.resource<V1Deployment>(Kinds.Deployment).get('shop', { namespace: ns });
    const dbSecret = await client
      .resource<V1Secret>(Kinds.Secret)
      .get(db.status!.binding!.name, { namespace: ns });
    const cacheSecret = await client
      .resource<V1Secret>(Kinds.Secret)
      .get(cache.status!.binding!.name, { namespace: ns });
    const env = dep.spec!.template.spec!.containers[0]!.env!;
    const byName = Object.fromEntries(env.map((e) => [e.name, e]));
    assert.equal(byName['DATABASE_URL']?.valueFrom?.secretKeyRef?.name, dbSecret.metadata!.name);
    assert.equal(byName['DATABASE_PASSWORD']?.valueFrom?.secretKeyRef?.key, 'password');
    assert.equal(byName['CACHE_URL']?.valueFrom?.secretKeyRef?.name, cacheSecret.metadata!.name);
    assert.ok(
      env.every((e) => e.value === undefined || !e.name.startsWith('DATABASE_')),
      'no value copied',
    );
    // Secret values appear nowhere in the MyApp or the Deployment.
    const password = Buffer.from(dbSecret.data!['password']!, 'base64').toString();
    assert.equal(JSON.stringify(app).includes(password), false);
    assert.equal(JSON.stringify(dep).includes(password), false);
    assert.deepEqual(app.status?.components?.map((c) => `${c.kind}:${c.ready}`).sort(), [
      'Cache:true',
      'Database:true',
      'Deployment:true',
    ]);
    assert.equal(app.status?.url, `http://shop.${ns}.svc:80`);
    assert.equal(app.status?.available, '2/2');
    for (const t of ['DatabaseReady', 'CacheReady', 'DeploymentAvailable'])
      assert.equal(app.status?.conditions?.find((c) => c.type === t)?.status, 'True', t);
  });

  test('a changed binding Secret rolls the app', async () => {
    const before = await client.resource<V1Deployment>(Kinds.Deployment).get('shop', { namespace: ns });
    const hash = before.spec!.template.metadata!.annotations!['regulon.dev/bindings-hash'];
    await client
      .resource(Kinds.Secret)
      .patch(
        'shop-db-credentials',
        { metadata: { labels: { rotated: 'yes' } } },
        { type: 'merge', namespace: ns },
      );
    await eventually('template hash changed', async () => {
      const d = await client.resource<V1Deployment>(Kinds.Deployment).get('shop', { namespace: ns });
      return d.spec!.template.metadata!.annotations!['regulon.dev/bindings-hash'] !== hash;
    });
  });

  test('a version change in the MyApp flows into the Database, whose controller rolls it', async () => {
    const current = await apps().get('shop', { namespace: ns });
    await apps().patch(
      'shop',
      { spec: { database: { ...current.spec.database, version: '16.8' } } },
      { type: 'merge', namespace: ns },
    );
    await eventually('Database at 16.8', async () => {
      const db = await client.resource<DatabaseObject>(Database.type).get('shop-db', { namespace: ns });
      return (
        db.spec.version === '16.8' && db.status?.currentVersion === '16.8' && db.status.phase === 'Ready'
      );
    });
    await ready('shop');
  });

  test('removing the cache deletes the Cache and its env from the app', async () => {
    await apps().patch('shop', [{ op: 'remove', path: '/spec/cache' }], { type: 'json', namespace: ns });
    await eventually('Cache gone', () => gone(Cache.type, 'shop-cache'));
    await eventually('env without CACHE_*', async () => {
      const d = await client.resource<V1Deployment>(Kinds.Deployment).get('shop', { namespace: ns });
      return !d.spec!.template.spec!.containers[0]!.env!.some((e) => e.name.startsWith('CACHE_'));
    });
    const app = await ready('shop');
    assert.equal(app.status?.conditions?.find((c) => c.type === 'CacheReady')?.reason, 'NotRequested');
  });

  test('a Database named like the child but owned by someone else is reported and left untouched', async () => {
    const owner = await client
      .resource<V1ConfigMap>(Kinds.ConfigMap)
      .create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other-owner', namespace: ns } });
    const foreign = await client.resource<DatabaseObject>(Database.type).create(
      Database.object({
        metadata: {
          name: 'taken-db',
          namespace: ns,
          ownerReferences: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              name: 'other-owner',
              uid: owner.metadata!.uid!,
              controller: true,
            },
          ],
        },
        spec: {
          engine: 'mysql',
          version: '8.4.4',
          replicas: 1,
          storage: { size: '1Gi' },
        },
      }),
    );
    await apps().create(
      MyApp.object({ metadata: { name: 'taken', namespace: ns }, spec: spec({ cache: undefined }) }),
    );
    const app = await eventually('conflict reported', async () => {
      const a = await apps().get('taken', { namespace: ns });
      const c = a.status?.conditions?.find((x) => x.type === 'Degraded');
      return c?.status === 'True' && c.reason === 'ChildConflict' ? a : undefined;
    });
    assert.match(
      app.status!.conditions!.find((x) => x.type === 'Degraded')!.message,
      /Database .*\/taken-db already exists and is controlled by ConfigMap other-owner, not by MyApp taken; leaving it untouched/,
    );
    assert.equal(app.status?.conditions?.find((x) => x.type === 'Ready')?.status, 'False');
    const after = await client.resource<DatabaseObject>(Database.type).get('taken-db', { namespace: ns });
    assert.equal(after.spec.engine, 'mysql', 'not adopted or rewritten');
    assert.equal(after.metadata.ownerReferences?.[0]?.uid, owner.metadata!.uid);
    assert.equal(after.metadata.generation, foreign.metadata.generation);
    assert.equal(await gone(Kinds.Deployment, 'taken'), true, 'no Deployment without its Database');
    assert.equal(app.status?.conditions?.find((x) => x.type === 'Stalled')?.status, 'True');
    assert.equal((await kstatus(app)).status, 'Failed');

    // Freeing the name is all it takes: the deletion wakes the MyApp, whose Database it now creates.
    await client.resource(Database.type).delete('taken-db', { namespace: ns });
    const owned = await eventually('taken-db created by the MyApp', async () => {
      const db = await client.resource<DatabaseObject>(Database.type).get('taken-db', { namespace: ns });
      return db.metadata.ownerReferences?.[0]?.uid === app.metadata.uid ? db : undefined;
    });
    assert.equal(owned.spec.engine, 'postgres');
    await apps().delete('taken', { namespace: ns });
  });

  test('transient errors are retried, not reported as a conflict: a rejected child is ChildRejected, retried until the quota allows it', async () => {
    const quotas: ResourceType = {
      group: '',
      version: 'v1',
      kind: 'ResourceQuota',
      plural: 'resourcequotas',
      namespaced: true,
    };
    const qns = await env.newNamespace('myapp-quota');
    const m = testManager(env.kubeConfig, { namespace: qns });
    setupDatabaseController(m);
    setupCacheController(m);
    setupMyAppController(m);
    const done = m.start();
    try {
      await client.resource(quotas).create({
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'no-services', namespace: qns },
        spec: { hard: { services: '0' } },
      } as KubeObject);
      await eventually('quota in effect', async () => {
        const q = await client
          .resource<KubeObject & { status?: { hard?: object } }>(quotas)
          .get('no-services', { namespace: qns });
        return q.status?.hard !== undefined;
      });
      await client.resource<MyAppObject>(MyApp.type).create(
        MyApp.object({
          metadata: { name: 'web', namespace: qns },
          spec: spec({ database: undefined, cache: undefined }),
        }),
      );
      const rejected = await eventually('web Degraded ChildRejected', async () => {
        const a = await client.resource<MyAppObject>(MyApp.type).get('web', { namespace: qns });
        return a.status?.conditions?.find((c) => c.type === 'Degraded')?.reason === 'ChildRejected'
          ? a
          : undefined;
      });
      assert.match(
        rejected.status!.conditions!.find((c) => c.type === 'Degraded')!.message,
        /Service web was rejected by the API server: services "web" is forbidden: exceeded quota: no-services/,
      );
      // The controller retries a rejection with backoff (requeue), it is not a success that waits forever.
      const requeues = async () =>
        (await m.registry.getSingleMetric('controller_runtime_reconcile_total')!.get()).values
          .filter((v) => v.labels['controller'] === 'myapp' && v.labels['result'] === 'requeue')
          .reduce((n, v) => n + v.value, 0);
      await eventually('retried', async () => (await requeues()) >= 2);
      // Nothing the controller watches changes when the quota goes: only the retry finds out.
      await client.resource(quotas).delete('no-services', { namespace: qns });
      await eventually(
        'web Ready once the quota allows the Service',
        async () => {
          const a = await client.resource<MyAppObject>(MyApp.type).get('web', { namespace: qns });
          return a.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
        },
        120_000,
      );
    } finally {
      m.stop();
      await done;
    }
  });

  test('kstatus (what Flux and kpt read): Current when Ready, InProgress while its Database upgrades, Failed while stalled, Current once fixed', async () => {
    await apps().create(
      MyApp.object({
        metadata: { name: 'kst', namespace: ns },
        spec: spec({ cache: undefined, replicas: 1 }),
      }),
    );
    assert.equal((await kstatus(await ready('kst'))).status, 'Current');

    const current = await apps().get('kst', { namespace: ns });
    const changed = await apps().patch(
      'kst',
      { spec: { database: { ...current.spec.database, version: '16.8' } } },
      { type: 'merge', namespace: ns },
    );
    const seen: string[] = [];
    await eventually(
      'kst Ready with its Database upgraded',
      async () => {
        const a = await apps().get('kst', { namespace: ns });
        const { status } = await kstatus(a);
        if (a.status?.observedGeneration === changed.metadata.generation)
          seen.push(`${status}/${a.status?.conditions?.find((c) => c.type === 'DatabaseReady')?.reason}`);
        const db = await client.resource<DatabaseObject>(Database.type).get('kst-db', { namespace: ns });
        return status === 'Current' && db.status?.currentVersion === '16.8';
      },
      120_000,
    );
    assert.ok(
      seen.some((x) => x.startsWith('InProgress/')),
      `InProgress while the Database upgrades: ${seen.join(' ')}`,
    );
    assert.ok(!seen.some((x) => x.startsWith('Failed/')), `never Failed: ${seen.join(' ')}`);

    // Stalled: its env names a Secret that doesn't exist.
    await apps().patch(
      'kst',
      {
        spec: {
          env: [{ name: 'API_KEY', valueFrom: { secretKeyRef: { name: 'kst-api-key', key: 'key' } } }],
        },
      },
      { type: 'merge', namespace: ns },
    );
    const stalled = await eventually('kst Failed', async () => {
      const r = await kstatus(await apps().get('kst', { namespace: ns }));
      return r.status === 'Failed' ? r : undefined;
    });
    assert.match(stalled.message, /Secret kst-api-key named in spec.env \(API_KEY\) does not exist/);
    await client.resource<V1Secret>(Kinds.Secret).create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'kst-api-key', namespace: ns },
      stringData: { key: 'k' },
    });
    assert.equal((await kstatus(await ready('kst'))).status, 'Current');
    const dep = await client.resource<V1Deployment>(Kinds.Deployment).get('kst', { namespace: ns });
    assert.ok(dep.spec!.template.spec!.containers[0]!.env!.some((e) => e.name === 'API_KEY'));
    await apps().delete('kst', { namespace: ns });
  });

  test('bad input is rejected with a clear message, embedded templates included', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['missing image', { ...spec(), image: undefined }, /spec.image: Required value/],
      ['replicas out of range', { ...spec(), replicas: 11 }, /spec.replicas: Invalid value: 11/],
      [
        'bad database template',
        {
          ...spec(),
          database: { engine: 'postgres', version: 'latest', replicas: 1, storage: { size: '1Gi' } },
        },
        /spec\.database\.version: Invalid value: version must be a dotted number/,
      ],
      [
        'database replicas 6',
        {
          ...spec(),
          database: { engine: 'postgres', version: '16.6', replicas: 6, storage: { size: '1Gi' } },
        },
        /spec.database.replicas/,
      ],
      [
        'bad cache template',
        {
          ...spec(),
          cache: {
            engine: 'memcached',
            version: '1.6.45',
            replicas: 1,
            memory: '64Mi',
            evictionPolicy: 'allkeys-lru',
          },
        },
        /evictionPolicy/,
      ],
    ];
    for (const [what, body, message] of cases) {
      await assert.rejects(
        apps().create({
          apiVersion: MyApp.apiVersion,
          kind: 'MyApp',
          metadata: { name: `bad-${what.replace(/\W+/g, '-')}`, namespace: ns },
          spec: body,
        } as unknown as MyAppObject),
        (err: Error) => {
          assert.ok(err instanceof InvalidError, `${what}: ${err.message}`);
          assert.match(err.message, message, what);
          return true;
        },
      );
    }
  });

  test('delete: everything is garbage-collected; the Database PVCs stay (its default policy)', async () => {
    await apps().delete('shop', { namespace: ns });
    await eventually(
      'children gone',
      async () =>
        (await gone(Database.type, 'shop-db')) &&
        (await gone(Kinds.Deployment, 'shop')) &&
        (await gone(Kinds.Service, 'shop')),
    );
    await eventually('database children gone', () => gone(Kinds.StatefulSet, 'shop-db'));
    const pvc = await client.resource(Kinds.PersistentVolumeClaim).get('data-shop-db-0', { namespace: ns });
    assert.equal(pvc.metadata?.deletionTimestamp, undefined);
  });
});
