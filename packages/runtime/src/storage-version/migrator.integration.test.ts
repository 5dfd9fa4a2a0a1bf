// The StorageVersionMigrator's retries, on the real API server: a manager
// that starts before its RBAC is in place (the usual order of a rollout that
// applies the Deployment and its roles together) is refused, keeps trying
// with backoff, and migrates once it may.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient, Kinds, type KubeObject } from '@regulon/client';
import { defineKind, versionedCRD } from '@regulon/crd';
import { eventually, start, type TestEnv } from '@regulon/testenv';
import { Type } from 'typebox';
import { createLogger } from '../observability/logging.ts';
import { StorageVersionMigrator } from './migrator.ts';

const GROUP = 'migrator.test.regulon.dev';
const COUNT = 20;
const names = { kind: 'Dial', plural: 'dials', singular: 'dial', scope: 'Namespaced' } as const;
const schema = { spec: Type.Object({ position: Type.Integer() }), status: Type.Object({}) };
const DialV1 = defineKind({ group: GROUP, version: 'v1', ...names, ...schema });
const DialV2 = defineKind({ group: GROUP, version: 'v2', ...names, ...schema });
const none = { strategy: 'None' } as const;

let env: TestEnv;
let admin: KubeClient;
let ns: string;
let rbacName: string;

/** A client that acts as the ServiceAccount `sa` of `namespace`, by impersonation. */
function clientAs(namespace: string, sa: string): KubeClient {
  const cluster = env.kubeConfig.getCurrentCluster()!;
  const user = env.kubeConfig.getCurrentUser()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ ...user, name: 'impersonating', impersonateUser: `system:serviceaccount:${namespace}:${sa}` }],
    contexts: [{ name: 'as-sa', cluster: cluster.name, user: 'impersonating' }],
    currentContext: 'as-sa',
  });
  return KubeClient.fromKubeConfig(kc);
}

async function storedVersions(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { value } of await env.controlPlane.etcdRead(`/registry/${GROUP}/dials/${ns}/`)) {
    const v = (JSON.parse(value) as KubeObject).apiVersion!;
    counts[v] = (counts[v] ?? 0) + 1;
  }
  return counts;
}

before(async () => {
  env = await start();
  admin = KubeClient.fromKubeConfig(env.kubeConfig);
  ns = await env.newNamespace('svm-retry');
  rbacName = `storage-migrator-${ns}`;
});
after(async () => {
  await admin
    ?.resource(Kinds.CustomResourceDefinition)
    .delete(DialV2.crdName)
    .catch(() => undefined);
  await admin
    ?.resource(Kinds.ClusterRoleBinding)
    .delete(rbacName)
    .catch(() => undefined);
  await admin
    ?.resource(Kinds.ClusterRole)
    .delete(rbacName)
    .catch(() => undefined);
  admin?.close();
  await env?.stop();
});

test('refused until its RBAC exists, the migrator retries with backoff, then migrates every object and trims storedVersions', async () => {
  await env.installCRDs([versionedCRD({ storage: DialV1, served: [DialV2], conversion: none })]);
  for (let i = 0; i < COUNT; i++)
    await admin
      .resource(DialV1)
      .create(DialV1.object({ metadata: { name: `dial-${i}`, namespace: ns }, spec: { position: i } }));
  await env.installCRDs([versionedCRD({ storage: DialV2, served: [DialV1], conversion: none })]);
  assert.deepEqual(
    (await admin.resource(Kinds.CustomResourceDefinition).get(DialV2.crdName)).status?.storedVersions,
    ['v1', 'v2'],
  );
  await admin
    .resource(Kinds.ServiceAccount)
    .create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'migrator', namespace: ns } });

  const logs: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: 'info',
    destination: { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) },
  });
  const asManager = clientAs(ns, 'migrator');
  const migrator = new StorageVersionMigrator({
    client: asManager,
    crdNames: [DialV2.crdName],
    logger,
    retryDelayMs: 50,
    maxRetryDelayMs: 400,
  });
  const stop = new AbortController();
  let finished = false;
  const running = migrator.start(stop.signal).then(() => {
    finished = true;
  });
  try {
    const refusals = () => logs.filter((l) => l['msg'] === 'storage version migration failed; retrying');
    await eventually('three refused attempts, each logged', () => refusals().length >= 3, 30_000);
    assert.deepEqual(
      refusals()
        .slice(0, 3)
        .map((l) => l['attempt']),
      [1, 2, 3],
    );
    assert.match(JSON.stringify(refusals()[0]!['err']), /forbidden/i);
    assert.equal(finished, false, 'a refused migration is not done');
    assert.deepEqual(await storedVersions(), { [`${GROUP}/v1`]: COUNT }, 'nothing rewritten while refused');

    // What deploy/rbac/webhook.yaml and the controller's own rules grant the manager for this.
    await admin.resource(Kinds.ClusterRole).create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: rbacName },
      rules: [
        {
          apiGroups: ['apiextensions.k8s.io'],
          resources: ['customresourcedefinitions'],
          resourceNames: [DialV2.crdName],
          verbs: ['get'],
        },
        {
          apiGroups: ['apiextensions.k8s.io'],
          resources: ['customresourcedefinitions/status'],
          resourceNames: [DialV2.crdName],
          verbs: ['patch'],
        },
        { apiGroups: [GROUP], resources: ['dials'], verbs: ['list', 'patch'] },
      ],
    });
    await admin.resource(Kinds.ClusterRoleBinding).create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: rbacName },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: rbacName },
      subjects: [{ kind: 'ServiceAccount', name: 'migrator', namespace: ns }],
    });
    await eventually('the migrator done once it may', () => finished, 60_000);
  } finally {
    stop.abort();
    await running;
    asManager.close();
  }

  assert.deepEqual(await storedVersions(), { [`${GROUP}/v2`]: COUNT }, 'every object rewritten as v2');
  assert.deepEqual(
    (await admin.resource(Kinds.CustomResourceDefinition).get(DialV2.crdName)).status?.storedVersions,
    ['v2'],
  );
  const done = logs.filter((l) => l['msg'] === 'stored objects migrated to the storage version');
  assert.equal(done.length, 1);
  assert.equal(done[0]!['rewritten'], COUNT);
  assert.deepEqual(done[0]!['storedVersionsBefore'], ['v1', 'v2']);
  // Backoff: the waits doubled up to the cap, so no attempt came sooner than 50 ms after the one before.
  const times = logs
    .filter((l) => l['msg'] === 'storage version migration failed; retrying')
    .map((l) => Date.parse(l['time'] as string));
  for (let i = 1; i < times.length; i++)
    assert.ok(times[i]! - times[i - 1]! >= 50, `attempt ${i + 1} waited`);
});
