// The real node: real Pods from the Debian-built images, run by a real
// kubelet, on a bridge with Services and cluster DNS. What the operators'
// engine tests rely on, checked here once at the level of Pods.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ensureImages } from './images.ts';
import { eventually, start, type TestEnv } from './index.ts';
import { nodeDir, startRealNode } from './real-node.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

const run = promisify(execFile);

interface Pod {
  metadata: { name: string; uid: string };
  spec: { nodeName?: string };
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{
      ready: boolean;
      restartCount: number;
      containerID?: string;
      started?: boolean;
    }>;
  };
}

describe('real node', () => {
  let env: TestEnv;
  let ns: string;
  const image: Record<string, string> = {};

  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const child = run(
      env.controlPlane.state.kubectl,
      ['--kubeconfig', env.kubeconfigPath, '-n', ns, ...args],
      {
        maxBuffer: 16 << 20,
      },
    );
    if (input !== undefined) {
      child.child.stdin?.end(input);
    }
    return (await child).stdout;
  };
  const apply = (obj: object) => kubectl(['apply', '-f', '-'], JSON.stringify(obj));
  const pod = async (name: string) => JSON.parse(await kubectl(['get', 'pod', name, '-o', 'json'])) as Pod;
  const ready = (p: Pod) =>
    p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  /** Waits until a Pod that runs to completion has Succeeded or Failed, and returns it. */
  const finished = (name: string) =>
    eventually(
      `${name} finished`,
      async () => {
        const p = await pod(name);
        return (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') && p;
      },
      120_000,
      500,
    );

  before(async () => {
    env = await start({ realNodes: 1 });
    ns = await env.newNamespace('real-node', { realNode: true });
    for (const img of await ensureImages()) image[img.name] = img.ref;
  });
  after(async () => env.stop());

  test('runs a real postgres: exec runs psql, logs show its log', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'postgres' },
      spec: {
        containers: [
          {
            name: 'postgres',
            image: image['postgres'],
            command: [
              'sh',
              '-c',
              'initdb -D /tmp/pgdata --auth=trust >/dev/null && exec postgres -D /tmp/pgdata -c listen_addresses=127.0.0.1',
            ],
            readinessProbe: { exec: { command: ['pg_isready', '-h', '127.0.0.1'] }, periodSeconds: 1 },
          },
        ],
      },
    });
    const p = await eventually(
      'postgres Ready',
      async () => ready(await pod('postgres')) && pod('postgres'),
      120_000,
      500,
    );
    assert.equal(p.spec.nodeName, 'real-node-0');
    const out = await kubectl([
      'exec',
      'postgres',
      '--',
      'psql',
      '-h',
      '127.0.0.1',
      '-U',
      'postgres',
      '-tAc',
      'select 40 + 2',
    ]);
    assert.equal(out.trim(), '42');
    const logs = await kubectl(['logs', 'postgres']);
    assert.match(logs, /database system is ready to accept connections/);
  });

  test('a Service with two redis Pods answers PING by DNS name from the client image', async () => {
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'redis' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'redis' } },
        template: {
          metadata: { labels: { app: 'redis' } },
          spec: {
            containers: [
              {
                name: 'redis',
                image: image['redis'],
                command: ['redis-server', '--bind', '0.0.0.0', '--protected-mode', 'no', '--save', ''],
                readinessProbe: { exec: { command: ['redis-cli', 'ping'] }, periodSeconds: 1 },
              },
            ],
          },
        },
      },
    });
    await apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'redis' },
      spec: { selector: { app: 'redis' }, ports: [{ port: 6379 }] },
    });
    await eventually(
      'two ready redis endpoints',
      async () => {
        const slices = JSON.parse(
          await kubectl(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=redis', '-o', 'json']),
        ) as { items: Array<{ endpoints?: Array<{ conditions?: { ready?: boolean } }> }> };
        return slices.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready).length === 2;
      },
      120_000,
      500,
    );
    // Every connection through the Service lands on one of the two Pods; ask who answered.
    const pods = JSON.parse(await kubectl(['get', 'pods', '-l', 'app=redis', '-o', 'json'])) as {
      items: Pod[];
    };
    const ips = new Set(pods.items.map((p) => p.status?.podIP));
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'redis-client' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'client',
            image: image['client'],
            command: [
              'sh',
              '-c',
              `getent hosts redis.${ns}.svc.cluster.local && redis-cli -h redis.${ns}.svc.cluster.local ping && redis-cli -h redis ping`,
            ],
          },
        ],
      },
    });
    const done = await finished('redis-client');
    const logs = await kubectl(['logs', 'redis-client']);
    assert.equal(done.status?.phase, 'Succeeded', logs);
    const [resolved, ...pongs] = logs.trim().split('\n');
    const serviceIP = (await kubectl(['get', 'service', 'redis', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    assert.equal(resolved?.split(/\s+/)[0], serviceIP, 'the Service name resolves to its ClusterIP');
    assert.deepEqual(pongs, ['PONG', 'PONG']);
    assert.equal(ips.size, 2);
  });

  test('names outside the cluster domain fail at once, and the API is reachable in-cluster', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'outside' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'client',
            image: image['client'],
            command: [
              'sh',
              '-c',
              'if getent hosts deb.debian.org; then echo RESOLVED; else echo NXDOMAIN; fi; ' +
                'curl -sS --cacert /var/run/secrets/kubernetes.io/serviceaccount/ca.crt ' +
                '-H "Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)" ' +
                'https://kubernetes.default.svc/version',
            ],
          },
        ],
      },
    });
    await finished('outside');
    const logs = await kubectl(['logs', 'outside']);
    assert.match(logs, /^NXDOMAIN$/m);
    assert.match(logs, /"gitVersion": "v1\.\d+\.\d+"/, logs);
  });

  test('a failing readiness probe keeps the Pod unready until it passes', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'gated' },
      spec: {
        containers: [
          {
            name: 'main',
            image: image['client'],
            command: ['sleep', 'infinity'],
            readinessProbe: { exec: { command: ['test', '-f', '/tmp/ready'] }, periodSeconds: 1 },
          },
        ],
      },
    });
    // The probe has run and failed (its Unhealthy events) while the container runs: still unready.
    await eventually(
      'failed readiness probes',
      async () => {
        const events = JSON.parse(
          await kubectl([
            'get',
            'events',
            '--field-selector',
            'involvedObject.name=gated,reason=Unhealthy',
            '-o',
            'json',
          ]),
        ) as { items: Array<{ count?: number; series?: { count: number } }> };
        return events.items.reduce((n, e) => n + (e.series?.count ?? e.count ?? 1), 0) >= 3;
      },
      120_000,
      500,
    );
    const before = await pod('gated');
    assert.equal(before.status?.containerStatuses?.[0]?.started, true);
    assert.equal(ready(before), false);
    await kubectl(['exec', 'gated', '--', 'touch', '/tmp/ready']);
    await eventually('gated Ready', async () => ready(await pod('gated')), 60_000, 500);
  });

  test('a container killed inside its Pod is restarted by the kubelet', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'restarts' },
      spec: { containers: [{ name: 'main', image: image['client'], command: ['sleep', 'infinity'] }] },
    });
    const first = await eventually(
      'running',
      async () => {
        const p = await pod('restarts');
        return p.status?.containerStatuses?.[0]?.containerID ? p : undefined;
      },
      120_000,
      500,
    );
    assert.equal(first.status?.containerStatuses?.[0]?.restartCount, 0);
    const id = first.status.containerStatuses[0].containerID!.replace(/^containerd:\/\//, '');
    const socket = join(nodeDir(env.controlPlane.state.dir), 'containerd', 'containerd.sock');
    await run('ctr', ['--address', socket, '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]);
    await eventually(
      'restart counted',
      async () => {
        const s = (await pod('restarts')).status?.containerStatuses?.[0];
        return s?.restartCount === 1 && s.containerID !== first.status!.containerStatuses![0]!.containerID;
      },
      120_000,
      500,
    );
  });

  test('a PVC of the default StorageClass is a real directory that outlives its Pod', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    const podWith = (name: string, script: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        restartPolicy: 'Never',
        securityContext: { runAsUser: 0 },
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
        containers: [
          {
            name: 'main',
            image: image['client'],
            command: ['sh', '-c', script],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
      },
    });
    const token = `written-${Date.now()}`;
    await apply(podWith('writer', `echo ${token} > /data/token`));
    assert.equal((await finished('writer')).status?.phase, 'Succeeded');
    await kubectl(['delete', 'pod', 'writer', '--wait=true']);
    await apply(podWith('reader', 'cat /data/token'));
    assert.equal((await finished('reader')).status?.phase, 'Succeeded');
    assert.equal((await kubectl(['logs', 'reader'])).trim(), token);
    // And it is a directory on this machine, not a simulation.
    const pv = (await kubectl(['get', 'pvc', 'data', '-o', 'jsonpath={.spec.volumeName}'])).trim();
    const path = (await kubectl(['get', 'pv', pv, '-o', 'jsonpath={.spec.hostPath.path}'])).trim();
    assert.ok(existsSync(path), path);
    assert.ok(readdirSync(path).includes('token'));
    assert.equal(readFileSync(join(path, 'token'), 'utf8').trim(), token);
  });

  test('an image that was never loaded fails at once, without trying the network', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'missing-image' },
      spec: { containers: [{ name: 'main', image: 'docker.io/library/postgres:17' }] },
    });
    const reason = await eventually(
      'an image pull failure',
      async () => {
        const p = JSON.parse(await kubectl(['get', 'pod', 'missing-image', '-o', 'json'])) as {
          status?: {
            containerStatuses?: Array<{ state?: { waiting?: { reason?: string; message?: string } } }>;
          };
        };
        const w = p.status?.containerStatuses?.[0]?.state?.waiting;
        return w && ['ErrImagePull', 'ImagePullBackOff'].includes(w.reason ?? '') && w;
      },
      60_000,
      500,
    );
    assert.match(reason.message ?? '', /127\.0\.0\.1:9|connection refused/);
  });

  test('a real node for a second control plane is refused with a clear message, changing nothing', async () => {
    const other = mkdtempSync(join(tmpdir(), 'regulon-second-node-'));
    try {
      await assert.rejects(
        startRealNode({
          controlPlaneDir: other,
          credentials: env.controlPlane.credentials,
          kubeconfigPath: env.kubeconfigPath,
          caCert: env.controlPlane.state.pki.caCert,
          deadline: Date.now() + 60_000,
        }),
        /already runs a real node \(for .*\); one control plane per machine can have real nodes/,
      );
      assert.equal(existsSync(join(nodeDir(other), 'state.json')), false);
      // The first node is untouched.
      assert.ok(ready(await pod('postgres')));
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
