// Integration tests of the control plane itself: that it is a real Kubernetes
// API server with the controllers, scheduler and simulated nodes that the rest
// of the project's tests rely on.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type V1Deployment,
} from '@kubernetes/client-node';
import { eventually, start, type TestEnv } from './index.ts';
import { STATE_DIR_ENV } from './env.ts';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ControlPlane,
  DEFAULT_START_TIMEOUT_MS,
  featureGateArgs,
  KWOK_NODE_ANNOTATION,
  parseFeatureGates,
} from './control-plane.ts';
import { ensureBinaries } from './binaries.ts';
import { shardDigits } from './kwok-stages.ts';
import { repoRoot } from './paths.ts';

const run = promisify(execFile);

describe('control plane', () => {
  let env: TestEnv;
  let core: CoreV1Api;
  let apps: AppsV1Api;

  before(async () => {
    env = await start();
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    apps = env.kubeConfig.makeApiClient(AppsV1Api);
  });
  after(async () => env.stop());

  test('reports the pinned Kubernetes version through kubectl', async () => {
    const versions = readFileSync(join(repoRoot(), 'tools', 'control-plane', 'versions.env'), 'utf8');
    const pinned = /^KUBERNETES_VERSION=(\S+)/m.exec(versions)?.[1];
    const { stdout } = await run(env.controlPlane.state.kubectl, [
      '--kubeconfig',
      env.kubeconfigPath,
      'version',
      '-o',
      'json',
    ]);
    const version = JSON.parse(stdout) as { serverVersion: { gitVersion: string; minor: string } };
    assert.equal(version.serverVersion.gitVersion, pinned);
  });

  test('has fake KWOK nodes that are Ready', async () => {
    const { stdout } = await run(env.controlPlane.state.kubectl, [
      '--kubeconfig',
      env.kubeconfigPath,
      'get',
      'nodes',
      '-o',
      'json',
    ]);
    const nodes = JSON.parse(stdout) as {
      items: Array<{
        metadata: { name: string; annotations?: Record<string, string> };
        status: { conditions: Array<{ type: string; status: string }> };
      }>;
    };
    // The KWOK ones: a real node joins the shared control plane too when another project's tests want one.
    const ready = nodes.items.filter(
      (n) =>
        n.metadata.annotations?.[KWOK_NODE_ANNOTATION] === 'fake' &&
        n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    assert.equal(ready.length, env.controlPlane.state.nodes);
    assert.ok(ready.length >= 1);
  });

  test('a Deployment gets Ready Pods, and deleting it garbage-collects its ReplicaSet and Pods', async () => {
    const namespace = await env.newNamespace('deploy');
    const labels = { app: 'web' };
    const deployment: V1Deployment = {
      metadata: { name: 'web', namespace },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } },
      },
    };
    await apps.createNamespacedDeployment({ namespace, body: deployment });
    const readyPods = await eventually('2 Ready pods', async () => {
      const pods = await core.listNamespacedPod({ namespace, labelSelector: 'app=web' });
      const ready = pods.items.filter((p) =>
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return ready.length === 2 ? ready : undefined;
    });
    assert.ok(
      readyPods.every((p) => p.spec?.nodeName?.startsWith('kwok-node-')),
      'pods are scheduled onto KWOK nodes',
    );
    await eventually('Deployment availableReplicas 2', async () => {
      const d = await apps.readNamespacedDeployment({ name: 'web', namespace });
      return d.status?.availableReplicas === 2 ? d : undefined;
    });
    const rs = await apps.listNamespacedReplicaSet({ namespace });
    assert.equal(rs.items.length, 1);
    assert.equal(rs.items[0]?.metadata?.ownerReferences?.[0]?.name, 'web');

    await apps.deleteNamespacedDeployment({ name: 'web', namespace, propagationPolicy: 'Background' });
    await eventually('ReplicaSets and Pods garbage-collected', async () => {
      const [sets, pods] = await Promise.all([
        apps.listNamespacedReplicaSet({ namespace }),
        core.listNamespacedPod({ namespace }),
      ]);
      return sets.items.length === 0 && pods.items.length === 0 ? true : undefined;
    });
  });

  test('a StatefulSet gets its PVCs bound and its Pods Ready; a Job completes', async () => {
    const namespace = await env.newNamespace('sts');
    const labels = { app: 'db' };
    await apps.createNamespacedStatefulSet({
      namespace,
      body: {
        metadata: { name: 'db', namespace },
        spec: {
          serviceName: 'db',
          replicas: 2,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'db', image: 'postgres:17' }] } },
          volumeClaimTemplates: [
            {
              metadata: { name: 'data' },
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          ],
        },
      },
    });
    await eventually('StatefulSet readyReplicas 2', async () => {
      const sts = await apps.readNamespacedStatefulSet({ name: 'db', namespace });
      return sts.status?.readyReplicas === 2 ? sts : undefined;
    });
    const pvcs = await core.listNamespacedPersistentVolumeClaim({ namespace });
    assert.deepEqual(pvcs.items.map((p) => `${p.metadata?.name}:${p.status?.phase}`).sort(), [
      'data-db-0:Bound',
      'data-db-1:Bound',
    ]);

    const { BatchV1Api } = await import('@kubernetes/client-node');
    const batch = env.kubeConfig.makeApiClient(BatchV1Api);
    await batch.createNamespacedJob({
      namespace,
      body: {
        metadata: { name: 'once', namespace },
        spec: {
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } },
        },
      },
    });
    await eventually('Job succeeded', async () => {
      const job = await batch.readNamespacedJob({ name: 'once', namespace });
      return job.status?.succeeded === 1 ? job : undefined;
    });
  });

  describe('custom resources', () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.testenv.regulon.dev' },
      spec: {
        group: 'testenv.regulon.dev',
        scope: 'Namespaced',
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    required: ['size'],
                    properties: { size: { type: 'integer', minimum: 1, maximum: 10 } },
                  },
                },
              },
            },
          },
        ],
      },
    };

    test('installCRDs waits until served; a custom resource reads back', async () => {
      await env.installCRDs([crd]);
      const namespace = await env.newNamespace('crd');
      const custom = env.kubeConfig.makeApiClient(CustomObjectsApi);
      const ref = { group: 'testenv.regulon.dev', version: 'v1', namespace, plural: 'gadgets' };
      await custom.createNamespacedCustomObject({
        ...ref,
        body: {
          apiVersion: 'testenv.regulon.dev/v1',
          kind: 'Gadget',
          metadata: { name: 'g1' },
          spec: { size: 3 },
        },
      });
      const got = (await custom.getNamespacedCustomObject({ ...ref, name: 'g1' })) as {
        spec: { size: number };
      };
      assert.equal(got.spec.size, 3);
    });

    test('a write that violates the schema is rejected with the API server message', async () => {
      await env.installCRDs([crd]);
      const namespace = await env.newNamespace('crd');
      const custom = env.kubeConfig.makeApiClient(CustomObjectsApi);
      await assert.rejects(
        custom.createNamespacedCustomObject({
          group: 'testenv.regulon.dev',
          version: 'v1',
          namespace,
          plural: 'gadgets',
          body: {
            apiVersion: 'testenv.regulon.dev/v1',
            kind: 'Gadget',
            metadata: { name: 'big' },
            spec: { size: 11 },
          },
        }),
        (err: { code?: number; body?: string }) => {
          assert.equal(err.code, 422);
          assert.match(
            String(err.body),
            /spec\.size: Invalid value: 11: spec\.size in body should be less than or equal to 10/,
          );
          return true;
        },
      );
    });
  });
});

describe('control plane with volume shards', () => {
  let cp: ControlPlane;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'regulon-testenv-shards-'));
    cp = await ControlPlane.start({ dir, nodes: 1, scale: { volumeShards: 4 } });
  });
  after(async () => {
    await cp?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('every claim is provisioned by the KWOK process its UID falls to, and bound', async () => {
    assert.deepEqual(
      Object.keys(cp.alive()).filter((n) => n.startsWith('kwok')),
      ['kwok', 'kwok-volumes-1', 'kwok-volumes-2', 'kwok-volumes-3'],
    );
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const apps = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const namespace = 'default';
    const labels = { app: 'sharded' };
    const replicas = 12;
    await apps.createNamespacedStatefulSet({
      namespace,
      body: {
        metadata: { name: 'sharded', namespace },
        spec: {
          serviceName: 'sharded',
          replicas,
          podManagementPolicy: 'Parallel',
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
          volumeClaimTemplates: [
            {
              metadata: { name: 'data' },
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          ],
        },
      },
    });
    const claims = await eventually('all claims Bound', async () => {
      const list = await core.listNamespacedPersistentVolumeClaim({ namespace });
      const bound = list.items.filter((p) => p.status?.phase === 'Bound');
      return bound.length === replicas ? bound : undefined;
    });
    // Which KWOK process applied each claim's volume, from its own log.
    const provisionedBy = new Map<string, string>();
    for (const name of Object.keys(cp.alive()).filter((n) => n.startsWith('kwok'))) {
      for (const line of readFileSync(join(dir, 'logs', `${name}.log`), 'utf8').split('\n')) {
        const m = /"msg":"Apply resource".*"resource":"default\/(data-sharded-\d+)"/.exec(line);
        if (m) provisionedBy.set(m[1]!, name);
      }
    }
    for (const claim of claims) {
      const digit = claim.metadata!.uid!.at(-1)!;
      const shard = [0, 1, 2, 3].find((i) => shardDigits(i, 4).includes(digit))!;
      const expected = shard === 0 ? 'kwok' : `kwok-volumes-${shard}`;
      assert.equal(
        provisionedBy.get(claim.metadata!.name!),
        expected,
        `${claim.metadata!.name} (UID …${digit})`,
      );
      assert.equal(claim.spec?.volumeName, `pvc-${claim.metadata!.uid}`);
    }
    await eventually('StatefulSet ready', async () => {
      const sts = await apps.readNamespacedStatefulSet({ name: 'sharded', namespace });
      return sts.status?.readyReplicas === replicas ? sts : undefined;
    });
  });
});

describe('control plane start timeout', () => {
  test('covers starting, not building: a binaries provider slower than the timeout still starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'regulon-testenv-slow-build-'));
    // A cold build is many minutes; rather than wait them out, the provider
    // moves the start clock on by more than the whole start timeout.
    let skewMs = 0;
    const now = () => Date.now() + skewMs;
    const startTimeoutMs = DEFAULT_START_TIMEOUT_MS;
    const binaries = async () => {
      const bins = await ensureBinaries();
      skewMs += 2 * startTimeoutMs;
      return bins;
    };
    let cp: ControlPlane | undefined;
    try {
      cp = await ControlPlane.start({ dir, nodes: 1, startTimeoutMs, binaries, now });
      assert.equal(await cp.readyNodes(), 1);
    } finally {
      await cp?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a start that fails', () => {
  test('before writing anything leaves no empty run directory behind; the error is the one thrown', async () => {
    const before = new Set(readdirSync(tmpdir()).filter((d) => d.startsWith('regulon-testenv-')));
    const binaries = () => Promise.reject(new Error('the build failed'));
    // Not the shared control plane of `regulon-testenv exec`: a start of its own.
    const shared = process.env[STATE_DIR_ENV];
    delete process.env[STATE_DIR_ENV];
    try {
      await assert.rejects(start({ binaries }), /the build failed/);
    } finally {
      if (shared !== undefined) process.env[STATE_DIR_ENV] = shared;
    }
    const left = readdirSync(tmpdir()).filter((d) => d.startsWith('regulon-testenv-') && !before.has(d));
    assert.deepEqual(left, []);
  });
});

describe('feature gates', () => {
  test('a plane with feature gates is always its own, and its API server has them', async () => {
    const gated = await start({ featureGates: { ShardedListAndWatch: true }, nodes: 0 });
    try {
      // Inside `regulon-testenv exec` too: the run's shared plane keeps its defaults.
      assert.notEqual(gated.controlPlane.state.dir, process.env[STATE_DIR_ENV]);
      const args = gated.controlPlane.state.components['kube-apiserver']!.args;
      assert.ok(args.includes('--feature-gates=ShardedListAndWatch=true'), 'kept for startAPIServer()');
      // The alpha gate alone turns it on (no --runtime-config): a sharded list echoes shardInfo.
      const selector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
      const res = await gated.kubectl([
        'get',
        '--raw',
        `/api/v1/namespaces?shardSelector=${encodeURIComponent(selector)}`,
      ]);
      assert.equal(res.code, 0, res.stderr);
      const list = JSON.parse(res.stdout) as { metadata: { shardInfo?: { selector: string } } };
      assert.deepEqual(list.metadata.shardInfo, { selector });
    } finally {
      await gated.stop();
    }
  });

  test("a gate the API server doesn't know fails start with its reason", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'regulon-testenv-gates-'));
    try {
      await assert.rejects(
        start({ dir, featureGates: { NoSuchGate: true }, nodes: 0 }),
        /kube-apiserver exited with 1 while starting:[\s\S]*unrecognized feature gate: NoSuchGate/,
      );
      assert.throws(() => featureGateArgs({ 'A=true,B': true }), /invalid feature gate name/);
      assert.deepEqual(parseFeatureGates('ShardedListAndWatch=true,Other=false'), {
        ShardedListAndWatch: true,
        Other: false,
      });
      assert.deepEqual(featureGateArgs(parseFeatureGates('A=true,B=false')), [
        '--feature-gates=A=true,B=false',
      ]);
      assert.throws(() => parseFeatureGates('A=yes'), /not NAME=true or NAME=false/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
