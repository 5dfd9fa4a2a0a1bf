// spec.monitoring.customQueriesConfigMap against the real control plane (no node: the Pods never
// run, their spec is what is checked): the instances mount the ConfigMap and their agents are
// given its file; a missing or broken ConfigMap is the MetricsQueriesValid condition and one
// Warning Event, healed by fixing the ConfigMap, and never a hot loop.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1ConfigMap, V1StatefulSet } from '@kubernetes/client-node';
import { InvalidError, KubeClient, Kinds, type KubeObject } from '@regulon/client';
import { parseAgentArgs } from '@regulon/instance-agent';
import { testManager, type Manager } from '@regulon/runtime';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { Database, type DatabaseObject } from './api.ts';
import { setupDatabaseController } from './index.ts';
import { METRICS_QUERIES_CONDITION, METRICS_QUERIES_INVALID_EVENT } from './metrics-queries.ts';

const QUERIES = `
orders_waiting:
  query: select region, count(*) as waiting from shop.orders group by region
  metrics:
    - region: {usage: LABEL}
    - waiting: {usage: GAUGE}
`;

describe('Database custom metrics queries', () => {
  let env: TestEnv;
  let client: KubeClient;
  let mgr: Manager;
  let running: Promise<void>;
  let ns: string;
  const dbs = () => client.resource<DatabaseObject>(Database.type);
  const configMaps = () => client.resource<V1ConfigMap>(Kinds.ConfigMap);

  before(async () => {
    env = await start();
    await env.installCRDs([Database.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
    ns = await env.newNamespace('dbq');
    mgr = testManager(env.kubeConfig, { namespace: ns });
    setupDatabaseController(mgr, { instanceAgentImage: 'regulon/manager:test' });
    running = mgr.start();
  });
  after(async () => {
    mgr.stop();
    await running;
    client.close();
    await env.stop();
  });

  const create = (name: string, engine: 'postgres' | 'mariadb' | 'mysql', key = 'queries.yaml') =>
    dbs().create(
      Database.object({
        metadata: { name, namespace: ns },
        spec: {
          engine,
          version: { postgres: '16.6', mariadb: '10.11.11', mysql: '8.4.4' }[engine],
          replicas: 1,
          storage: { size: '1Gi' },
          monitoring: { customQueriesConfigMap: [{ name: `${name}-queries`, key }] },
        },
      }),
    );
  const condition = (name: string, status: string, reason: string) =>
    eventually(`${name} ${METRICS_QUERIES_CONDITION} ${status} ${reason}`, async () => {
      const db = await dbs().get(name, { namespace: ns });
      const c = db.status?.conditions?.find((x) => x.type === METRICS_QUERIES_CONDITION);
      return c?.status === status && c.reason === reason && c.observedGeneration === db.metadata.generation
        ? { db, c }
        : undefined;
    });
  const warnings = async (name: string) =>
    (
      await client
        .resource<
          KubeObject & { reason?: string; type?: string; note?: string; regarding?: { name?: string } }
        >(Kinds.Event)
        .list({ namespace: ns })
    ).items.filter(
      (e) => e.type === 'Warning' && e.reason === METRICS_QUERIES_INVALID_EVENT && e.regarding?.name === name,
    );
  const reconciles = async () => {
    const m = await mgr.registry.getSingleMetric('controller_runtime_reconcile_total')!.get();
    return m.values.filter((v) => v.labels['controller'] === 'database').reduce((n, v) => n + v.value, 0);
  };

  test('a missing ConfigMap: the condition and one Warning Event, the Pods created all the same; it heals once the ConfigMap exists', async () => {
    await create('orders', 'postgres');
    const { c } = await condition('orders', 'False', 'ConfigMapNotFound');
    assert.match(
      c.message,
      /ConfigMap orders-queries named in spec\.monitoring\.customQueriesConfigMap does not exist/,
    );
    const events = await eventually('the Warning Event', async () => {
      const list = await warnings('orders');
      return list.length ? list : undefined;
    });
    assert.match(events[0]!.note ?? '', /orders-queries/);
    // The Pods run regardless: the volume is optional, the agent is told where the file would be.
    const sts = await eventually('the StatefulSet', () =>
      client
        .resource<V1StatefulSet>(Kinds.StatefulSet)
        .get('orders', { namespace: ns })
        .catch(() => undefined),
    );
    const pod = sts.spec!.template.spec!;
    const volume = pod.volumes!.find((v) => v.configMap?.name === 'orders-queries');
    assert.deepEqual(volume?.configMap?.items, [{ key: 'queries.yaml', path: 'queries.yaml' }]);
    assert.equal(volume?.configMap?.optional, true);
    const container = pod.containers[0]!;
    const mount = container.volumeMounts!.find((m) => m.name === volume.name);
    const argv = container.command!.slice(2).map((a) => a.replace(/\$\((POD_[A-Z]+)\)/g, 'x'));
    assert.deepEqual(parseAgentArgs(argv, {}).metrics?.queriesFiles, [`${mount!.mountPath}/queries.yaml`]);

    // No hot loop while it is missing: a few reconciles (the status writes), not hundreds.
    const before = await reconciles();
    await new Promise((r) => setTimeout(r, 3_000));
    assert.ok((await reconciles()) - before < 30, 'reconciles while the ConfigMap is missing');
    // Once: the status states it now, and the reconciles that follow see it said.
    assert.equal((await warnings('orders')).length, 1);

    await configMaps().create({
      metadata: { name: 'orders-queries', namespace: ns },
      data: { 'queries.yaml': QUERIES },
    });
    const healed = await condition('orders', 'True', 'Valid');
    assert.match(healed.c.message, /1 user-defined query \(orders_waiting\)/);
  });

  test('a ConfigMap whose queries have a mistake, then are fixed: the condition follows each edit', async () => {
    await configMaps().create({
      metadata: { name: 'shop-queries', namespace: ns },
      data: { 'queries.yaml': `${QUERIES}\nbroken:\n  query: select 1 as v\n` },
    });
    await create('shop', 'mariadb');
    const { c } = await condition('shop', 'False', 'InvalidQueries');
    assert.match(c.message, /query "broken": metrics is missing/);
    assert.match(c.message, /1 other query runs$/);
    await eventually('the Warning Event', async () => ((await warnings('shop')).length ? true : undefined));
    await configMaps().patch(
      'shop-queries',
      { data: { 'queries.yaml': QUERIES } },
      { type: 'merge', namespace: ns },
    );
    await condition('shop', 'True', 'Valid');
    await configMaps().patch(
      'shop-queries',
      { data: { 'queries.yaml': 'a: [' } },
      { type: 'merge', namespace: ns },
    );
    const notYaml = await condition('shop', 'False', 'InvalidQueries');
    assert.match(notYaml.c.message, /not YAML/);
  });

  test('refused on a mysql Database, whose instances run no agent, with the reason', async () => {
    await assert.rejects(create('legacy', 'mysql'), (err: unknown) => {
      assert.ok(err instanceof InvalidError);
      assert.match(err.message, /monitoring\.customQueriesConfigMap is supported for postgres and mariadb/);
      return true;
    });
  });
});
