// spec.monitoring.customQueriesConfigMap: the instances' volumes and agent flags, and the
// MetricsQueriesValid condition, from the agent's own parser.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { parseAgentArgs } from '@regulon/instance-agent';
import type { DatabaseObject } from './api.ts';
import { desiredStatefulSet, image } from './children.ts';
import { checkMetricsQueries, METRICS_QUERIES_CONDITION } from './metrics-queries.ts';
import { childNames } from './names.ts';
import { computeStatus } from './status.ts';
import { databaseWith } from './testing/parameters-corpus.ts';

const QUERIES = `
orders_waiting:
  query: select region, count(*) as waiting from shop.orders group by region
  metrics:
    - region: {usage: LABEL, description: Where the orders ship to}
    - waiting: {usage: GAUGE, description: Orders waiting}
`;

const withQueries = (
  engine: 'postgres' | 'mariadb',
  refs: { name: string; key: string }[],
): DatabaseObject => {
  const db = databaseWith(engine, {});
  return { ...db, spec: { ...db.spec, monitoring: { customQueriesConfigMap: refs } } };
};
const configMaps =
  (maps: Record<string, Record<string, string>>) =>
  (name: string): V1ConfigMap | undefined =>
    maps[name] ? { metadata: { name }, data: maps[name] } : undefined;

test('the instances mount each named key and the agent is given each file', () => {
  for (const engine of ['postgres', 'mariadb'] as const) {
    const db = withQueries(engine, [
      { name: 'shop-queries', key: 'queries.yaml' },
      { name: 'more', key: 'extra' },
    ]);
    const sts = desiredStatefulSet(db, childNames(db).credentials, image(db), 1, 'regulon/manager:1');
    const pod = sts.spec!.template.spec!;
    const container = pod.containers[0]!;
    const volumes = pod.volumes!.filter((v) => v.configMap && v.name.startsWith('metrics-queries'));
    assert.deepEqual(
      volumes.map((v) => v.configMap),
      [
        { name: 'shop-queries', items: [{ key: 'queries.yaml', path: 'queries.yaml' }], optional: true },
        { name: 'more', items: [{ key: 'extra', path: 'extra' }], optional: true },
      ],
    );
    const mounts = container.volumeMounts!.filter((m) => volumes.some((v) => v.name === m.name));
    assert.deepEqual(
      mounts.map((m) => [m.mountPath, m.readOnly, m.subPath]),
      [
        ['/regulon-metrics-queries/0', true, undefined],
        ['/regulon-metrics-queries/1', true, undefined],
      ],
    );
    // The agent's own parser reads the command line the container runs.
    const argv = container.command!.slice(2).map((a) => a.replace(/\$\((POD_[A-Z]+)\)/g, 'x'));
    assert.deepEqual(parseAgentArgs(argv, {}).metrics?.queriesFiles, [
      '/regulon-metrics-queries/0/queries.yaml',
      '/regulon-metrics-queries/1/extra',
    ]);
  }
});

test('without the agent, or without queries, nothing of them is in the Pod', () => {
  const db = withQueries('postgres', [{ name: 'shop-queries', key: 'queries.yaml' }]);
  const noAgent = desiredStatefulSet(db, childNames(db).credentials, image(db));
  assert.ok(!JSON.stringify(noAgent).includes('metrics-queries'));
  const plain = databaseWith('postgres', {});
  const sts = desiredStatefulSet(plain, childNames(plain).credentials, image(plain), 1, 'regulon/manager:1');
  assert.ok(!JSON.stringify(sts).includes('metrics-queries'));
});

test('MetricsQueriesValid: what is missing or wrong, named, and the queries that do run', () => {
  const one = withQueries('postgres', [{ name: 'shop-queries', key: 'queries.yaml' }]);
  assert.deepEqual(checkMetricsQueries(one, configMaps({ 'shop-queries': { 'queries.yaml': QUERIES } })), {
    status: 'True',
    reason: 'Valid',
    message: "1 user-defined query (orders_waiting) run at each scrape of the instances' metrics",
  });
  const missing = checkMetricsQueries(one, configMaps({}));
  assert.equal(missing?.reason, 'ConfigMapNotFound');
  assert.match(
    missing.message,
    /^ConfigMap shop-queries named in spec\.monitoring\.customQueriesConfigMap does not exist in ns/,
  );
  const noKey = checkMetricsQueries(one, configMaps({ 'shop-queries': { other: QUERIES } }));
  assert.equal(noKey?.reason, 'KeyNotFound');
  assert.match(noKey.message, /^ConfigMap shop-queries has no key queries\.yaml/);
  const broken = checkMetricsQueries(
    one,
    configMaps({
      'shop-queries': {
        'queries.yaml': `${QUERIES}\nbad:\n  query: select 1 as v\n  metrics: [{v: {usage: HISTOGRAM}}]\n`,
      },
    }),
  );
  assert.equal(broken?.status, 'False');
  assert.equal(broken?.reason, 'InvalidQueries');
  assert.match(
    broken.message,
    /^ConfigMap shop-queries key queries\.yaml: query "bad": metrics\[0\]: column v: usage must be one of LABEL, GAUGE, COUNTER, DISCARD, not string "HISTOGRAM": the instances run without the queries concerned, and are not affected otherwise; 1 other query runs$/,
  );
  const notYaml = checkMetricsQueries(one, configMaps({ 'shop-queries': { 'queries.yaml': 'a: [' } }));
  assert.match(notYaml!.message, /^ConfigMap shop-queries key queries\.yaml: not YAML/);
  assert.equal(checkMetricsQueries(databaseWith('postgres', {}), configMaps({})), undefined);
});

test('the condition is beside Ready, never in it, and goes when the spec names no queries', () => {
  const db = withQueries('postgres', [{ name: 'shop-queries', key: 'queries.yaml' }]);
  const observed = (metricsQueries: ReturnType<typeof checkMetricsQueries>) => ({
    statefulSet: undefined,
    backupJobs: [],
    problem: undefined,
    credentialsSecret: childNames(db).credentials,
    metricsQueries,
  });
  const missing = checkMetricsQueries(db, configMaps({}));
  const without = computeStatus(db, observed(undefined));
  const status = computeStatus(db, observed(missing));
  const c = status.conditions?.find((x) => x.type === METRICS_QUERIES_CONDITION);
  assert.equal(c?.status, 'False');
  assert.equal(c?.reason, 'ConfigMapNotFound');
  const ready = (s: typeof status) => s.conditions?.find((x) => x.type === 'Ready');
  assert.deepEqual(
    [ready(status)?.status, ready(status)?.reason],
    [ready(without)?.status, ready(without)?.reason],
  );
  assert.equal(status.phase, without.phase);
  const later = computeStatus({ ...db, status }, observed(undefined));
  assert.equal(
    later.conditions?.find((x) => x.type === METRICS_QUERIES_CONDITION),
    undefined,
  );
});
