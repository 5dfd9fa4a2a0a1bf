// Against a real kube-apiserver (with controller-manager) from @regulon/testenv.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1ConfigMap, V1Deployment, V1ReplicaSet, V1Secret } from '@kubernetes/client-node';
import { start, type TestEnv } from '@regulon/testenv';
import {
  AlreadyExistsError,
  ConflictError,
  InvalidError,
  KubeClient,
  Kinds,
  NotFoundError,
  TimeoutError,
  isNotFound,
  type KubeObject,
  type ListResult,
  type ResourceType,
} from './index.ts';

interface Widget extends KubeObject {
  spec?: { size?: number; color?: string };
  status?: { ready?: boolean; observedSize?: number };
}

const widgetCRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.test.regulon.dev' },
  spec: {
    group: 'test.regulon.dev',
    scope: 'Namespaced',
    names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: { size: { type: 'integer', maximum: 10 }, color: { type: 'string' } },
              },
              status: {
                type: 'object',
                properties: { ready: { type: 'boolean' }, observedSize: { type: 'integer' } },
              },
            },
          },
        },
      },
    ],
  },
};

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The object, or undefined once it is gone. */
async function getOrGone<T>(get: Promise<T>): Promise<T | undefined> {
  try {
    return await get;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

const configMap = (
  name: string,
  namespace: string,
  data: Record<string, string> = {},
  labels?: Record<string, string>,
): V1ConfigMap => ({
  metadata: { name, namespace, ...(labels ? { labels } : {}) },
  data,
});

describe('KubeClient against a real API server', () => {
  let env: TestEnv;
  let client: KubeClient;

  before(async () => {
    env = await start();
    client = KubeClient.fromKubeConfig(env.kubeConfig);
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  it('loads from an explicit kubeconfig path and reports the server', async () => {
    const loaded = KubeClient.load({ kubeconfigPath: env.kubeconfigPath });
    try {
      assert.equal(loaded.server, client.server);
      assert.equal(new URL(loaded.server).origin, new URL(env.server).origin);
      const version = await loaded.request<{ gitVersion: string }>({ method: 'GET', path: '/version' });
      assert.match(version.gitVersion, /^v1\./);
      // Authenticated as the admin by the -data client certificate.
      assert.equal((await loaded.resource(Kinds.Namespace).get('default')).metadata?.name, 'default');
    } finally {
      loaded.close();
    }
  });

  it('authenticates with certificate files named relative to the kubeconfig', async () => {
    // The lean loader (not client-node) reads these: kubectl's path rules.
    const dir = mkdtempSync(join(tmpdir(), 'client-kubeconfig-'));
    const { server, ca, cert, key } = env.controlPlane.credentials;
    mkdirSync(join(dir, 'pki'));
    mkdirSync(join(dir, 'kube'));
    copyFileSync(ca, join(dir, 'pki', 'ca.crt'));
    copyFileSync(cert, join(dir, 'pki', 'admin.crt'));
    copyFileSync(key, join(dir, 'pki', 'admin.key'));
    writeFileSync(
      join(dir, 'kube', 'config'),
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: files',
        'clusters:',
        `  - name: local`,
        `    cluster: { server: "${server}", certificate-authority: ../pki/ca.crt }`,
        'users:',
        '  - name: admin',
        '    user: { client-certificate: ../pki/admin.crt, client-key: ../pki/admin.key }',
        'contexts:',
        '  - name: files',
        '    context: { cluster: local, user: admin }',
        '',
      ].join('\n'),
    );
    const loaded = KubeClient.load({ kubeconfigPath: join(dir, 'kube', 'config') });
    try {
      const ns = await loaded.resource(Kinds.Namespace).get('kube-system');
      assert.equal(ns.metadata?.name, 'kube-system');
    } finally {
      loaded.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('creates, gets and lists with pagination', async () => {
    const ns = await env.newNamespace('client');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    const labels = { set: 'paging' };
    for (let i = 0; i < 5; i++) {
      const created = await cms.create(configMap(`cm-${i}`, ns, { i: String(i) }, labels));
      assert.equal(created.metadata?.name, `cm-${i}`);
      assert.ok(created.metadata?.uid);
      assert.equal(created.kind, 'ConfigMap');
    }
    const got = await cms.get('cm-3', { namespace: ns });
    assert.deepEqual(got.data, { i: '3' });
    assert.equal(got.apiVersion, 'v1');

    const first = await cms.list({ namespace: ns, labelSelector: 'set=paging', limit: 2 });
    assert.equal(first.items.length, 2);
    assert.ok(first.continue, 'first page has a continue token');
    assert.ok(first.resourceVersion);
    const names = first.items.map((c) => c.metadata!.name!);
    let token: string | undefined = first.continue;
    while (token) {
      const page: ListResult<V1ConfigMap> = await cms.list({
        namespace: ns,
        labelSelector: 'set=paging',
        limit: 2,
        continue: token,
      });
      names.push(...page.items.map((c) => c.metadata!.name!));
      token = page.continue;
    }
    assert.deepEqual(names.sort(), ['cm-0', 'cm-1', 'cm-2', 'cm-3', 'cm-4']);

    const all = await cms.listAll({ namespace: ns, labelSelector: 'set=paging', pageSize: 2 });
    assert.equal(all.items.length, 5);
    assert.equal(all.continue, undefined);
    assert.ok(all.resourceVersion);
    assert.ok(all.items.every((c) => c.kind === 'ConfigMap' && c.apiVersion === 'v1'));

    // Across all namespaces, the label still selects exactly ours.
    const everywhere = await cms.listAll({ labelSelector: 'set=paging', pageSize: 3 });
    assert.ok(everywhere.items.filter((c) => c.metadata?.namespace === ns).length === 5);
  });

  it('maps create-twice, missing and stale writes to typed errors with the server message', async () => {
    const ns = await env.newNamespace('client');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    const created = await cms.create(configMap('dup', ns, { a: '1' }));

    const again: unknown = await cms.create(configMap('dup', ns)).catch((e: unknown) => e);
    assert.ok(again instanceof AlreadyExistsError, String(again));
    assert.equal(again.code, 409);
    assert.equal(again.reason, 'AlreadyExists');
    assert.match(again.message, /configmaps "dup" already exists/);

    const missing: unknown = await cms.get('nope', { namespace: ns }).catch((e: unknown) => e);
    assert.ok(missing instanceof NotFoundError && isNotFound(missing));
    assert.match(missing.message, /configmaps "nope" not found/);

    const fresh = await cms.replace({ ...created, data: { a: '2' } });
    assert.equal(fresh.data?.a, '2');
    assert.notEqual(fresh.metadata?.resourceVersion, created.metadata?.resourceVersion);
    const stale: unknown = await cms.replace({ ...created, data: { a: '3' } }).catch((e: unknown) => e);
    assert.ok(stale instanceof ConflictError, String(stale));
    assert.equal(stale.reason, 'Conflict');
    assert.match(
      stale.message,
      /the object has been modified; please apply your changes to the latest version/,
    );
    assert.equal(stale.status.message, stale.message);
    assert.equal((await cms.get('dup', { namespace: ns })).data?.a, '2');

    await assert.rejects(cms.delete('nope', { namespace: ns }), NotFoundError);
  });

  it('deletes a Deployment with a propagation policy', async () => {
    const ns = await env.newNamespace('client');
    const deployments = client.resource<V1Deployment>(Kinds.Deployment);
    const replicaSets = client.resource<V1ReplicaSet>(Kinds.ReplicaSet);
    const labels = { app: 'web' };
    const deploymentOf = (name: string): V1Deployment => ({
      metadata: { name, namespace: ns },
      spec: {
        replicas: 1,
        selector: { matchLabels: { ...labels, name } },
        template: {
          metadata: { labels: { ...labels, name } },
          spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] },
        },
      },
    });
    const ownedReplicaSets = async (name: string) =>
      (await replicaSets.list({ namespace: ns, labelSelector: `name=${name}` })).items;

    // Orphan: the ReplicaSet outlives its Deployment.
    const orphaned = await deployments.create(deploymentOf('orphaned'));
    await until('a ReplicaSet for orphaned', async () =>
      (await ownedReplicaSets('orphaned')).length ? true : undefined,
    );
    await deployments.delete('orphaned', {
      namespace: ns,
      propagationPolicy: 'Orphan',
      preconditions: { uid: orphaned.metadata!.uid! },
    });
    await until('orphaned to be gone', async () =>
      (await getOrGone(deployments.get('orphaned', { namespace: ns }))) ? undefined : true,
    );
    const left = await until('the ReplicaSet to lose its owner', async () => {
      const rs = await ownedReplicaSets('orphaned');
      return rs.length === 1 && !rs[0]!.metadata?.ownerReferences?.length ? rs : undefined;
    });
    assert.equal(left.length, 1);

    // Foreground: the Deployment waits for its dependents to be deleted first.
    await deployments.create(deploymentOf('foreground'));
    await until('a ReplicaSet for foreground', async () =>
      (await ownedReplicaSets('foreground')).length ? true : undefined,
    );
    await deployments.delete('foreground', { namespace: ns, propagationPolicy: 'Foreground' });
    const during = await getOrGone(deployments.get('foreground', { namespace: ns }));
    if (during) {
      assert.ok(during.metadata?.deletionTimestamp);
      assert.ok(during.metadata?.finalizers?.includes('foregroundDeletion'));
    }
    await until('foreground and its ReplicaSet to be gone', async () => {
      const gone = !(await getOrGone(deployments.get('foreground', { namespace: ns })));
      return gone && (await ownedReplicaSets('foreground')).length === 0 ? true : undefined;
    });
  });

  it('applies merge and JSON patches', async () => {
    const ns = await env.newNamespace('client');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    await cms.create(configMap('p', ns, { a: '1', b: '2' }));
    const merged = await cms.patch('p', { data: { b: null, c: '3' } }, { type: 'merge', namespace: ns });
    assert.deepEqual(merged.data, { a: '1', c: '3' });
    const jsonPatched = await cms.patch(
      'p',
      [
        { op: 'test', path: '/data/a', value: '1' },
        { op: 'replace', path: '/data/a', value: 'one' },
        { op: 'add', path: '/metadata/labels', value: { patched: 'yes' } },
      ],
      { type: 'json', namespace: ns },
    );
    assert.deepEqual(jsonPatched.data, { a: 'one', c: '3' });
    assert.equal(jsonPatched.metadata?.labels?.patched, 'yes');
    const failedTest: unknown = await cms
      .patch('p', [{ op: 'test', path: '/data/a', value: 'nope' }], { type: 'json', namespace: ns })
      .catch((e: unknown) => e);
    assert.ok(
      failedTest instanceof Error && 'code' in failedTest && failedTest.code === 422,
      String(failedTest),
    );
    const strategic = await client.resource<V1Deployment>(Kinds.Deployment).create({
      metadata: { name: 's', namespace: ns },
      spec: {
        selector: { matchLabels: { app: 's' } },
        template: {
          metadata: { labels: { app: 's' } },
          spec: { containers: [{ name: 'a', image: 'registry.invalid/a' }] },
        },
      },
    });
    assert.ok(strategic.metadata?.uid);
    const withSidecar = await client
      .resource<V1Deployment>(Kinds.Deployment)
      .patch(
        's',
        { spec: { template: { spec: { containers: [{ name: 'b', image: 'registry.invalid/b' }] } } } },
        { type: 'strategic', namespace: ns },
      );
    assert.deepEqual(withSidecar.spec?.template.spec?.containers.map((c) => c.name).sort(), ['a', 'b']);
  });

  it('round-trips server-side apply, with conflicts between managers and force', async () => {
    const ns = await env.newNamespace('client');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    const desired = (value: string): V1ConfigMap => ({
      metadata: { name: 'ssa', namespace: ns },
      data: { key: value },
    });

    const first = await cms.apply(desired('1'), { fieldManager: 'alpha' });
    assert.equal(first.data?.key, '1');
    assert.equal(first.kind, 'ConfigMap');
    const second = await cms.apply(
      { ...desired('2'), data: { key: '2', other: 'x' } },
      { fieldManager: 'alpha' },
    );
    assert.deepEqual(second.data, { key: '2', other: 'x' });
    const unchanged = await cms.apply(
      { ...desired('2'), data: { key: '2', other: 'x' } },
      { fieldManager: 'alpha' },
    );
    assert.equal(unchanged.metadata?.resourceVersion, second.metadata?.resourceVersion);

    const conflict: unknown = await cms
      .apply(desired('3'), { fieldManager: 'beta' })
      .catch((e: unknown) => e);
    assert.ok(conflict instanceof ConflictError, String(conflict));
    assert.equal(conflict.code, 409);
    assert.match(conflict.message, /conflict/i);
    assert.match(conflict.message, /alpha/);
    assert.ok((conflict.status.details?.causes ?? []).some((c) => c.field?.includes('data.key')));

    const forced = await cms.apply(desired('3'), { fieldManager: 'beta', force: true });
    assert.equal(forced.data?.key, '3');
    const managers = (forced.metadata?.managedFields ?? []).map((m) => m.manager);
    assert.ok(managers.includes('beta') && managers.includes('alpha'));
    // alpha lost data.key but still owns data.other.
    assert.equal(forced.data?.other, 'x');
  });

  describe('custom resources', () => {
    let widgetType: ResourceType;

    before(async () => {
      await env.installCRDs([widgetCRD]);
      widgetType = await client.discover('test.regulon.dev', 'v1', 'Widget');
    });

    it('discovers the resource', async () => {
      assert.deepEqual(widgetType, {
        group: 'test.regulon.dev',
        version: 'v1',
        kind: 'Widget',
        plural: 'widgets',
        namespaced: true,
      });
      assert.deepEqual(await client.discover('apps', 'v1', 'Deployment'), Kinds.Deployment);
      assert.deepEqual(await client.discover('', 'v1', 'Namespace'), Kinds.Namespace);
      await assert.rejects(client.discover('test.regulon.dev', 'v1', 'Gadget'), NotFoundError);
      await assert.rejects(client.discover('nonexistent.regulon.dev', 'v1', 'Thing'), NotFoundError);
    });

    it('writes status through patchStatus and updateStatus only', async () => {
      const ns = await env.newNamespace('client');
      const widgets = client.resource<Widget>(widgetType);
      const created = await widgets.create({
        metadata: { name: 'w', namespace: ns },
        spec: { size: 3 },
        status: { ready: true },
      });
      assert.equal(created.apiVersion, 'test.regulon.dev/v1');
      assert.equal(created.kind, 'Widget');
      assert.equal(created.status, undefined, 'status is dropped on the main resource');

      const patched = await widgets.patchStatus(
        'w',
        { status: { ready: true, observedSize: 3 } },
        { namespace: ns },
      );
      assert.deepEqual(patched.status, { ready: true, observedSize: 3 });
      assert.equal(patched.spec?.size, 3);

      const updated = await widgets.updateStatus({
        ...patched,
        spec: { size: 9 },
        status: { ready: false, observedSize: 3 },
      });
      assert.deepEqual(updated.status, { ready: false, observedSize: 3 });
      assert.equal(updated.spec?.size, 3, 'spec is ignored on the status subresource');

      const stale: unknown = await widgets
        .updateStatus({ ...patched, status: { ready: true } })
        .catch((e: unknown) => e);
      assert.ok(stale instanceof ConflictError, String(stale));

      const applied = await widgets.apply(
        {
          apiVersion: 'test.regulon.dev/v1',
          kind: 'Widget',
          metadata: { name: 'w', namespace: ns },
          status: { observedSize: 4 },
        },
        { fieldManager: 'status-writer', subresource: 'status', force: true },
      );
      assert.equal(applied.status?.observedSize, 4);

      const list = await widgets.list({ namespace: ns });
      assert.equal(list.items.length, 1);
      assert.equal(list.items[0]!.kind, 'Widget');
      await widgets.delete('w', { namespace: ns });
      await assert.rejects(widgets.get('w', { namespace: ns }), NotFoundError);
    });

    it('rejects a schema violation with InvalidError carrying the server text', async () => {
      const ns = await env.newNamespace('client');
      const widgets = client.resource<Widget>(widgetType);
      const err: unknown = await widgets
        .create({ metadata: { name: 'big', namespace: ns }, spec: { size: 11 } })
        .catch((e: unknown) => e);
      assert.ok(err instanceof InvalidError, String(err));
      assert.equal(err.code, 422);
      assert.equal(err.reason, 'Invalid');
      assert.match(err.message, /spec\.size/);
      assert.match(err.message, /less than or equal to 10/);
      assert.ok(
        err.causes.some((c) => c.field === 'spec.size'),
        JSON.stringify(err.causes),
      );

      await widgets.create({ metadata: { name: 'ok', namespace: ns }, spec: { size: 10 } });
      await assert.rejects(
        widgets.patch('ok', { spec: { size: 12 } }, { type: 'merge', namespace: ns }),
        InvalidError,
      );
    });
  });

  it('lists metadata only', async () => {
    const ns = await env.newNamespace('client');
    const secrets = client.resource<V1Secret>(Kinds.Secret);
    await secrets.create({
      metadata: { name: 's1', namespace: ns, labels: { m: 'y' } },
      stringData: { password: 'hunter2' },
    });
    await secrets.create({
      metadata: { name: 's2', namespace: ns, labels: { m: 'y' } },
      stringData: { password: 'hunter2' },
    });
    const list = await secrets.list({ namespace: ns, labelSelector: 'm=y', metadataOnly: true });
    assert.deepEqual(list.items.map((i) => i.metadata.name).sort(), ['s1', 's2']);
    for (const item of list.items) {
      assert.equal(item.kind, 'PartialObjectMetadata');
      assert.equal(item.apiVersion, 'meta.k8s.io/v1');
      assert.ok(!('data' in item), 'no secret data');
      assert.ok(item.metadata.uid && item.metadata.resourceVersion);
    }
    assert.ok(list.resourceVersion);
    const all = await secrets.listAll({
      namespace: ns,
      labelSelector: 'm=y',
      metadataOnly: true,
      pageSize: 1,
    });
    assert.equal(all.items.length, 2);
    assert.ok(all.items.every((i) => !('data' in i)));
    const one = await secrets.get('s1', { namespace: ns, metadataOnly: true });
    assert.equal(one.kind, 'PartialObjectMetadata');
    assert.ok(!('data' in one));
  });

  it('works on cluster-scoped resources', async () => {
    const name = `client-ns-${Date.now()}`;
    const namespaces = client.resource(Kinds.Namespace);
    const created = await namespaces.create({ metadata: { name } });
    assert.equal(created.metadata?.name, name);
    const got = await namespaces.get(name);
    assert.equal(got.metadata?.uid, created.metadata?.uid);
    await namespaces.delete(name);
  });

  it('gives up a request after requestTimeoutMs with TimeoutError', async () => {
    const impatient = KubeClient.fromKubeConfig(env.kubeConfig, { requestTimeoutMs: 300 });
    try {
      const started = Date.now();
      // A watch never finishes, so buffering it whole must hit the deadline.
      const err: unknown = await impatient
        .request({ method: 'GET', path: '/api/v1/namespaces', query: { watch: '1' } })
        .catch((e: unknown) => e);
      assert.ok(err instanceof TimeoutError, String(err));
      assert.equal(err.code, 0);
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 300 && elapsed < 5000, `elapsed ${elapsed}`);
    } finally {
      impatient.close();
    }
  });

  it('aborts an in-flight request', async () => {
    const ac = new AbortController();
    const pending = client.request({
      method: 'GET',
      path: '/api/v1/namespaces',
      query: { watch: '1' },
      signal: ac.signal,
      timeoutMs: 0,
    });
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(pending, { name: 'AbortError' });
  });
});
