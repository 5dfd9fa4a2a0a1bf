// Database v1alpha1 → v1beta1 through the real API server: the release before
// this one (its CRD serving and storing v1alpha1) with Databases stored, then
// this release's CRD (both versions served, v1beta1 stored, converted by the
// manager's webhook at a URL on the host), every field round-tripped through
// the API server both ways, and the stored Databases migrated.
//
// On a control plane of its own: it stores v1alpha1 Databases, and a CRD that
// has stored a version must keep serving it until a migration, while the run's
// other test files install the Database CRD as v1beta1 only.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { InvalidError, KubeClient, Kinds, type KubeObject } from '@regulon/client';
import {
  crdConversion,
  createLogger,
  ManagedCertificates,
  StorageVersionMigrator,
  testManager,
  WebhookServer,
  type Manager,
} from '@regulon/runtime';
import { eventually, freePorts, start, type TestEnv } from '@regulon/testenv';
import {
  Database,
  DatabaseV1alpha1,
  NO_BACKUP_DESTINATION_MESSAGE,
  type DatabaseObject,
  type DatabaseV1alpha1Object,
} from './api.ts';
import { databaseCRD } from './conversion.ts';
import { setupDatabaseWebhooks } from './webhook.ts';

/** Databases stored as v1alpha1 before the upgrade, besides the one with every field. */
const COUNT = 1000;
const CRD = Database.crdName;

let env: TestEnv;
let client: KubeClient;
let ns: string;
let mgr: Manager;
let running: Promise<void>;

const alpha = () => client.resource(DatabaseV1alpha1);
const beta = () => client.resource(Database);

const store = (path: string) => ({
  endpoint: 'https://10.245.0.1:9000',
  bucket: 'backups',
  path,
  region: 'eu-west-1',
  credentials: { secretName: 'store-keys', accessKeyIdKey: 'id', secretAccessKeyKey: 'secret' },
  caSecret: { name: 'store-ca', key: 'ca.pem' },
});

/** Every field of the v1alpha1 spec set, none at its default. */
const FULL_SPEC: DatabaseV1alpha1Object['spec'] = {
  engine: 'postgres',
  version: '16.8',
  allowMajorVersionUpgrade: true,
  replicas: 3,
  replication: {
    synchronous: true,
    failoverDelaySeconds: 30,
    switchoverCatchUpSeconds: 120,
    divergedData: 'Keep',
    maxLagBytes: 1_048_576,
    maxLagTransactions: 77,
  },
  storage: { size: '5Gi', storageClassName: 'fast' },
  backup: {
    enabled: false,
    schedule: '15 2 * * *',
    historyLimit: 5,
    objectStore: store('shop/orders'),
    retention: { count: 14, maxAge: '30d' },
  },
  bootstrap: { recovery: { source: store('shop/old-orders'), targetTime: '2026-11-24T12:00:00Z' } },
  resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
  parameters: { work_mem: '64MB', max_connections: '300' },
  credentials: { secretName: 'orders-credentials' },
  pvcRetentionPolicy: 'Delete',
};

const FULL_STATUS: DatabaseObject['status'] = {
  observedGeneration: 1,
  phase: 'Ready',
  conditions: [
    {
      type: 'Ready',
      status: 'True',
      reason: 'AllReplicasReady',
      message: '3/3 replicas ready, running 16.8',
      lastTransitionTime: '2026-11-25T08:00:00Z',
      observedGeneration: 1,
    },
  ],
  replicas: 3,
  readyReplicas: 3,
  currentPrimary: 'full-0',
  instances: [{ name: 'full-1', role: 'replica', state: 'Streaming', lsn: '0/3000060', lagBytes: 12 }],
};

/** The v1beta1 spec FULL_SPEC is: the lag bounds under replication.maxLag. */
function fullSpecV1beta1(): DatabaseObject['spec'] {
  const { maxLagBytes, maxLagTransactions, ...replication } = FULL_SPEC.replication!;
  return {
    ...FULL_SPEC,
    replication: { ...replication, maxLag: { bytes: maxLagBytes!, transactions: maxLagTransactions! } },
  };
}

/** The apiVersion each Database of the namespace is stored in, counted. */
async function storedVersions(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { value } of await env.controlPlane.etcdRead(`/registry/regulon.dev/databases/${ns}/`)) {
    const v = (JSON.parse(value) as KubeObject).apiVersion!;
    counts[v] = (counts[v] ?? 0) + 1;
  }
  return counts;
}

/** What a storage rewrite must not change: everything but the resourceVersion. */
const meaning = (o: KubeObject) => {
  const { resourceVersion: _rv, ...metadata } = o.metadata!;
  return { ...o, metadata };
};

before(async () => {
  env = await start({ own: true });
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 1000, burst: 1000 });
  ns = await env.newNamespace('db-conversion');
});
after(async () => {
  mgr?.stop();
  await running;
  client?.close();
  await env?.stop();
});

test(`the release before: ${COUNT + 1} Databases stored as v1alpha1`, async () => {
  await env.installCRDs([DatabaseV1alpha1.crd()]);
  const full = await alpha().create(
    DatabaseV1alpha1.object({
      metadata: {
        name: 'full',
        namespace: ns,
        labels: { team: 'shop' },
        annotations: { note: 'every field' },
      },
      spec: FULL_SPEC,
    }),
  );
  await alpha().patchStatus('full', { status: FULL_STATUS }, { namespace: ns });
  assert.equal(full.spec.replication?.maxLagBytes, 1_048_576);
  for (let i = 0; i < COUNT; i += 50)
    await Promise.all(
      Array.from({ length: Math.min(50, COUNT - i) }, (_, j) => {
        const n = i + j;
        return alpha().create(
          DatabaseV1alpha1.object({
            metadata: { name: `db-${String(n).padStart(4, '0')}`, namespace: ns },
            spec: {
              engine: n % 2 ? 'mariadb' : 'postgres',
              version: n % 2 ? '11.4.4' : '16.8',
              replicas: 1 + (n % 3),
              storage: { size: '1Gi' },
              // A third with their own bounds, a third with replication left to its defaults, a third without.
              ...(n % 3 === 0 ? { replication: { maxLagBytes: n * 1024, maxLagTransactions: n } } : {}),
              ...(n % 3 === 1 ? { replication: {} } : {}),
            },
          }),
        );
      }),
    );
  assert.deepEqual(await storedVersions(), { 'regulon.dev/v1alpha1': COUNT + 1 });
});

test("this release's CRD: both versions served, v1beta1 stored, converted by the manager's webhook", async () => {
  const port = (await freePorts(1))[0]!;
  mgr = testManager(env.kubeConfig, {
    logger: createLogger({ level: 'silent' }),
    namespace: ns,
  });
  const certificates = new ManagedCertificates({
    client: mgr.client,
    namespace: ns,
    secretName: 'webhook-certs',
    names: { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] },
    checkIntervalMs: 500,
  });
  const webhooks = new WebhookServer(mgr, { bindAddress: `127.0.0.1:${port}`, certificates });
  // What the manager registers: the conversion, and the admission no configuration here turns on.
  setupDatabaseWebhooks(webhooks);
  running = mgr.start();
  await env.installCRDs([databaseCRD(crdConversion({ url: `https://127.0.0.1:${port}` }))]);
  const crd = await client.resource(Kinds.CustomResourceDefinition).get(CRD);
  assert.deepEqual(crd.status?.storedVersions, ['v1alpha1', 'v1beta1']);
  // Until the manager injects its CA into the CRD, no Database reads as v1beta1.
  const full = await eventually(
    'the Database with every field read as v1beta1',
    () => beta().get('full', { namespace: ns }),
    60_000,
  );
  assert.equal(full.apiVersion, 'regulon.dev/v1beta1');
  assert.deepEqual(full.spec, fullSpecV1beta1(), 'the lag bounds under maxLag, every other field as stored');
  assert.deepEqual(full.status, FULL_STATUS);
  assert.deepEqual(full.metadata.labels, { team: 'shop' });
  assert.deepEqual(full.metadata.annotations, { note: 'every field' });
});

test('every field round-trips byte for byte: v1alpha1 → v1beta1 → v1alpha1, and v1beta1 → v1alpha1 → v1beta1', async () => {
  // Stored as v1alpha1, read at both versions: the v1alpha1 read is what was stored.
  const stored = await alpha().get('full', { namespace: ns });
  assert.deepEqual(stored.spec, FULL_SPEC);
  const viaHub = await beta().get('full', { namespace: ns });
  const back = await alpha().get('full', { namespace: ns });
  assert.equal(JSON.stringify(back), JSON.stringify(stored));
  assert.equal(viaHub.metadata.resourceVersion, stored.metadata.resourceVersion, 'reads wrote nothing');

  // Created as v1beta1 (stored so), written through v1alpha1 and read back at v1beta1.
  const created = await beta().create(
    Database.object({ metadata: { name: 'full-beta', namespace: ns }, spec: fullSpecV1beta1() }),
  );
  const asAlpha = await alpha().get('full-beta', { namespace: ns });
  assert.deepEqual(
    asAlpha.spec,
    FULL_SPEC,
    'v1beta1 maxLag read as v1alpha1 maxLagBytes, maxLagTransactions',
  );
  assert.equal(JSON.stringify(await beta().get('full-beta', { namespace: ns })), JSON.stringify(created));
  // A write through v1alpha1: the API server converts it to v1beta1 to store it.
  const updated = await alpha().replace({
    ...asAlpha,
    spec: { ...asAlpha.spec, replication: { ...asAlpha.spec.replication, maxLagBytes: 2048 } },
  });
  const hub = await beta().get('full-beta', { namespace: ns });
  assert.deepEqual(hub.spec.replication?.maxLag, { bytes: 2048, transactions: 77 });
  assert.equal(JSON.stringify(await alpha().get('full-beta', { namespace: ns })), JSON.stringify(updated));

  // Defaults: replication: {} written as v1alpha1 reads with v1beta1's defaults, which are the same bounds.
  const defaulted = await beta().get('db-0001', { namespace: ns });
  assert.deepEqual(defaulted.spec.replication, {
    synchronous: false,
    failoverDelaySeconds: 10,
    switchoverCatchUpSeconds: 60,
    maxLag: { bytes: 16_777_216, transactions: 1000 },
  });
});

test('v1alpha1 refuses backups that go nowhere as v1beta1 does, with the same message', async () => {
  for (const backup of [{}, { enabled: true, schedule: '0 3 * * *' }]) {
    const err = await alpha()
      .create(
        DatabaseV1alpha1.object({
          metadata: { name: 'nowhere', namespace: ns },
          // As sent: the API server fills in what the type requires (enabled, schedule, historyLimit).
          spec: {
            engine: 'postgres',
            version: '16.8',
            replicas: 1,
            storage: { size: '1Gi' },
            backup,
          } as DatabaseV1alpha1Object['spec'],
        }),
      )
      .then(
        () => assert.fail(`backup ${JSON.stringify(backup)} was accepted at v1alpha1`),
        (e: unknown) => e,
      );
    assert.ok(err instanceof InvalidError, String(err));
    assert.deepEqual(
      err.causes.map((c) => `${c.field}: ${c.message}`),
      [`spec.backup: Invalid value: ${NO_BACKUP_DESTINATION_MESSAGE}`],
    );
  }
});

test(`storage migration: the ${COUNT + 1} v1alpha1 Databases rewritten as v1beta1, none lost or changed in meaning; v1alpha1 still reads`, async (t) => {
  const listAt = async (version: 'v1alpha1' | 'v1beta1') =>
    new Map(
      (version === 'v1alpha1'
        ? await alpha().listAll({ namespace: ns })
        : await beta().listAll({ namespace: ns })
      ).items.map((d: KubeObject) => [d.metadata!.name!, d]),
    );
  const beforeBeta = await listAt('v1beta1');
  const beforeAlpha = await listAt('v1alpha1');
  assert.equal(beforeBeta.size, COUNT + 2);
  assert.deepEqual(await storedVersions(), { 'regulon.dev/v1alpha1': COUNT + 1, 'regulon.dev/v1beta1': 1 });

  // What the manager does once it leads (apps/manager/src/run.ts): a StorageVersionMigrator for
  // the CRDs it converts. Its own Manager here, started now that there is something to migrate.
  const migrating = testManager(env.kubeConfig, {
    logger: createLogger({ level: 'silent' }),
    clientOptions: { qps: 1000, burst: 1000 },
  });
  migrating.add(
    new StorageVersionMigrator({ client: migrating.client, crdNames: [CRD], logger: migrating.logger }),
  );
  const started = performance.now();
  const migrated = migrating.start();
  try {
    await eventually(
      'storedVersions trimmed to v1beta1',
      async () =>
        (await client.resource(Kinds.CustomResourceDefinition).get(CRD)).status?.storedVersions?.join() ===
        'v1beta1',
      120_000,
      200,
    );
  } finally {
    migrating.stop();
    await migrated;
  }
  t.diagnostic(
    `the manager's StorageVersionMigrator moved ${COUNT + 2} Databases to v1beta1 in ${((performance.now() - started) / 1000).toFixed(2)} s, each converted by the webhook`,
  );
  assert.deepEqual(await storedVersions(), { 'regulon.dev/v1beta1': COUNT + 2 }, 'etcd holds v1beta1 only');

  for (const [version, was] of [
    ['v1beta1', beforeBeta],
    ['v1alpha1', beforeAlpha],
  ] as const) {
    const now = await listAt(version);
    assert.equal(now.size, was.size, `${version}: every Database still there`);
    for (const [name, d] of now)
      assert.deepEqual(meaning(d), meaning(was.get(name)!), `${name} at ${version}`);
  }
  const spot = await beta().get('db-0300', { namespace: ns });
  assert.deepEqual(spot.spec.replication?.maxLag, { bytes: 300 * 1024, transactions: 300 });
  assert.notEqual(
    spot.metadata.resourceVersion,
    beforeBeta.get('db-0300')!.metadata!.resourceVersion,
    'rewritten',
  );
});
