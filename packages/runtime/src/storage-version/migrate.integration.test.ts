// Storage-version migration against the real API server, checked in etcd
// itself: the API server serves every version converted, so only etcd shows
// which version an object is stored in.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KubeClient, Kinds, type KubeObject } from '@regulon/client';
import { defineKind, versionedCRD, type KindObject } from '@regulon/crd';
import { start, type TestEnv } from '@regulon/testenv';
import { Type } from 'typebox';
import { migrateStorageVersion } from './migrate.ts';

const GROUP = 'storage.test.regulon.dev';
const COUNT = 1000;
const PAGE = 100;
const names = { kind: 'Gauge', plural: 'gauges', singular: 'gauge', scope: 'Namespaced' } as const;
const schema = {
  spec: Type.Object({ reading: Type.Integer(), unit: Type.String() }),
  status: Type.Object({ checked: Type.Optional(Type.Boolean()) }),
};
// One schema in both versions (strategy None): what is measured is the migration, not a conversion.
const GaugeV1 = defineKind({ group: GROUP, version: 'v1', ...names, ...schema });
const GaugeV2 = defineKind({ group: GROUP, version: 'v2', ...names, ...schema });
type Gauge = KindObject<typeof GaugeV2>;

let env: TestEnv;
let client: KubeClient;
let ns: string;

const gauges = () => client.resource(GaugeV2);
const none = { strategy: 'None' } as const;
/** The apiVersion each Gauge of the namespace is stored in, by name. */
async function storedVersions(): Promise<Map<string, string>> {
  const kvs = await env.controlPlane.etcdRead(`/registry/${GROUP}/gauges/${ns}/`);
  return new Map(
    kvs.map(({ key, value }) => [key.split('/').pop()!, (JSON.parse(value) as KubeObject).apiVersion!]),
  );
}
const histogram = (m: Map<string, string>) => {
  const h: Record<string, number> = {};
  for (const v of m.values()) h[v] = (h[v] ?? 0) + 1;
  return h;
};
/** What a rewrite must not change: everything but the resourceVersion. */
const meaning = (g: Gauge) => {
  const { resourceVersion: _rv, ...metadata } = g.metadata;
  return { ...g, metadata };
};

before(async () => {
  env = await start();
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 1000, burst: 1000 });
  ns = await env.newNamespace('storage-version');
  await env.installCRDs([versionedCRD({ storage: GaugeV1, served: [GaugeV2], conversion: none })]);
});
after(async () => {
  await client
    ?.resource(Kinds.CustomResourceDefinition)
    .delete(GaugeV2.crdName)
    .catch(() => undefined);
  client?.close();
  await env?.stop();
});

test(`${COUNT} objects stored as v1 are rewritten as v2 while others write and delete; storedVersions trimmed; v1 can then be dropped`, async (t) => {
  const v1 = client.resource(GaugeV1);
  for (let i = 0; i < COUNT; i += 50)
    await Promise.all(
      Array.from({ length: Math.min(50, COUNT - i) }, async (_, j) => {
        const name = `g-${String(i + j).padStart(4, '0')}`;
        await v1.create(
          GaugeV1.object({
            metadata: { name, namespace: ns, labels: { n: String(i + j) } },
            spec: { reading: i + j, unit: 'kPa' },
          }),
        );
        if ((i + j) % 3 === 0) await v1.patchStatus(name, { status: { checked: true } }, { namespace: ns });
      }),
    );
  assert.deepEqual(histogram(await storedVersions()), { [`${GROUP}/v1`]: COUNT });

  // v2 becomes the storage version: what is in etcd stays v1 until written again.
  await env.installCRDs([versionedCRD({ storage: GaugeV2, served: [GaugeV1], conversion: none })]);
  const crd = await client.resource(Kinds.CustomResourceDefinition).get(GaugeV2.crdName);
  assert.deepEqual(crd.status?.storedVersions, ['v1', 'v2']);
  assert.deepEqual(histogram(await storedVersions()), { [`${GROUP}/v1`]: COUNT });
  // v1 cannot be dropped while objects may be stored in it.
  await assert.rejects(
    env.installCRDs([GaugeV2.crd()]),
    /status\.storedVersions\[0\].*v1 was previously a storage version, and must remain in spec\.versions/,
  );

  const before = new Map((await gauges().listAll({ namespace: ns })).items.map((g) => [g.metadata.name!, g]));
  // Others at work meanwhile: once the first page is done, ten Gauges of the last page are deleted
  // and ten others updated, after the migration's list snapshot and before their rewrite.
  const lastPage = [...before.keys()].slice(-PAGE);
  const deleted = lastPage.slice(0, 10);
  const updated = lastPage.slice(10, 20);
  let meddled: Promise<unknown> | undefined;
  const result = await migrateStorageVersion(client, GaugeV2.crdName, {
    pageSize: PAGE,
    onProgress: (p) => {
      if (meddled || p.rewritten === 0) return;
      meddled = Promise.all([
        ...deleted.map((n) => gauges().delete(n, { namespace: ns })),
        ...updated.map((n) =>
          gauges().patch(n, { metadata: { labels: { touched: 'yes' } } }, { type: 'merge', namespace: ns }),
        ),
      ]);
    },
  });
  await meddled;
  t.diagnostic(
    `migrated ${result.rewritten} of ${COUNT} (${result.gone} deleted meanwhile) in ${(result.durationMs / 1000).toFixed(2)} s`,
  );
  assert.equal(result.gone, deleted.length, 'the deleted ones were found gone');
  assert.equal(
    result.rewritten,
    COUNT - deleted.length,
    'every other one written, or found written by someone else',
  );
  assert.deepEqual(result.storedVersionsBefore, ['v1', 'v2']);
  assert.deepEqual(result.storedVersions, ['v2']);

  const stored = await storedVersions();
  assert.deepEqual(histogram(stored), { [`${GROUP}/v2`]: COUNT - deleted.length }, 'etcd holds v2 only');
  const afterwards = (await gauges().listAll({ namespace: ns })).items;
  assert.equal(afterwards.length, COUNT - deleted.length);
  for (const g of afterwards) {
    const was = before.get(g.metadata.name!)!;
    if (updated.includes(g.metadata.name!)) {
      assert.equal(
        g.metadata.labels?.['touched'],
        'yes',
        `${g.metadata.name}: the concurrent update is kept`,
      );
      continue;
    }
    assert.notEqual(g.metadata.resourceVersion, was.metadata.resourceVersion, `${g.metadata.name} written`);
    assert.deepEqual(meaning(g), meaning(was), `${g.metadata.name} unchanged in meaning`);
  }
  assert.deepEqual(
    (await client.resource(Kinds.CustomResourceDefinition).get(GaugeV2.crdName)).status?.storedVersions,
    ['v2'],
  );

  // Now v1 can go; every Gauge still reads.
  await env.installCRDs([GaugeV2.crd()]);
  assert.equal((await gauges().listAll({ namespace: ns })).items.length, COUNT - deleted.length);
  // Run again: nothing is stored in another version, so nothing is written.
  const again = await migrateStorageVersion(client, GaugeV2.crdName);
  assert.equal(again.rewritten, 0);
  assert.deepEqual(again.storedVersions, ['v2']);
});
