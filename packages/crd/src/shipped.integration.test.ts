// The shipped CRDs (deploy/crds) on a real API server, as a person meets them
// with kubectl: every kind answers to a short name no other resource has, and
// `kubectl get` (server-side printing: the API server renders the columns as a
// Table) shows the same column shape for every kind, filled from the status
// the controllers write.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { KubeClient } from '@regulon/client';
import { repoRoot, start, type TestEnv } from '@regulon/testenv';

const deploy = join(repoRoot(), 'deploy');
const condition = (type: string, status: string, reason: string, message: string) => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: '2026-01-02T03:04:05Z',
});

/** Per kind: its sample, a status as its controller writes it mid-rollout, and what kubectl prints for it. */
const KINDS = [
  {
    shortName: 'db',
    sample: 'database.yaml',
    name: 'orders',
    status: {
      phase: 'Updating',
      replicas: 2,
      readyReplicas: 1,
      currentPrimary: 'orders-0',
      endpoint: 'orders.example.svc:5432',
      conditions: [condition('Ready', 'False', 'RollingOut', '1/2 Pods ready')],
    },
    columns: ['NAME', 'ENGINE', 'VERSION', 'REPLICAS', 'READY', 'STATUS', 'PRIMARY', 'LAST BACKUP', 'AGE'],
    cells: ['orders', 'postgres', '16.8', '1', '1', 'Updating', 'orders-0', ''],
    wide: ['ENDPOINT', 'MESSAGE'],
    wideCells: ['orders.example.svc:5432', '1/2 Pods ready'],
  },
  {
    shortName: 'kc',
    sample: 'cache.yaml',
    name: 'sessions',
    status: {
      phase: 'Updating',
      replicas: 2,
      readyReplicas: 1,
      currentPrimary: 'sessions-0',
      endpoint: 'sessions.example.svc:6379',
      conditions: [condition('Ready', 'False', 'RollingOut', '1/2 Pods ready')],
    },
    columns: ['NAME', 'ENGINE', 'VERSION', 'REPLICAS', 'READY', 'STATUS', 'AGE'],
    cells: ['sessions', 'redis', '8.0.6', '2', '1', 'Updating'],
    wide: ['ENDPOINT', 'PRIMARY', 'MESSAGE'],
    wideCells: ['sessions.example.svc:6379', 'sessions-0', '1/2 Pods ready'],
  },
  {
    shortName: 'ma',
    sample: 'myapp.yaml',
    name: 'shop',
    status: {
      phase: 'Updating',
      available: '1/2',
      url: 'http://shop.example.svc:80',
      conditions: [
        condition('Ready', 'False', 'WaitingForDependencies', 'waiting for: Cache shop-cache (Provisioning)'),
        condition('DatabaseReady', 'True', 'Ready', 'ready'),
        condition('CacheReady', 'False', 'Provisioning', 'creating'),
      ],
    },
    columns: ['NAME', 'REPLICAS', 'READY', 'STATUS', 'DATABASE', 'CACHE', 'AGE'],
    cells: ['shop', '2', '1/2', 'Updating', 'Ready', 'Provisioning'],
    wide: ['IMAGE', 'URL', 'MESSAGE'],
    wideCells: [
      'ghcr.io/example/shop:1.0',
      'http://shop.example.svc:80',
      'waiting for: Cache shop-cache (Provisioning)',
    ],
  },
];

/** kubectl's table as header names and cells, cut at the header's column starts (cells may hold spaces). */
function table(out: string): { header: string[]; rows: string[][] } {
  const [head = '', ...lines] = out.trimEnd().split('\n');
  const starts = [...head.matchAll(/\S+(?: \S+)*/g)].map((m) => m.index);
  const cut = (line: string) => starts.map((s, i) => line.slice(s, starts[i + 1]).trim());
  return { header: cut(head), rows: lines.map(cut) };
}

interface DiscoveryList {
  items: Array<{
    metadata: { name?: string };
    versions: Array<{ resources: Array<{ resource: string; shortNames?: string[] }> }>;
  }>;
}

describe('the shipped kinds with kubectl', () => {
  let env: TestEnv;
  let client: KubeClient;
  let ns: string;
  const kubectl = async (...args: string[]) =>
    (await promisify(execFile)(env.controlPlane.state.kubectl, ['--kubeconfig', env.kubeconfigPath, ...args]))
      .stdout;

  before(async () => {
    env = await start();
    await env.installCRDs(join(deploy, 'crds'));
    client = KubeClient.fromKubeConfig(env.kubeConfig);
    ns = await env.newNamespace('shipped');
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  test('every kind has a short name that no other resource the API server serves has', async () => {
    // Aggregated discovery, what kubectl reads to expand a short name.
    const accept = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
    const owners = new Map<string, string[]>();
    for (const path of ['/api', '/apis']) {
      const list = await client.request<DiscoveryList>({ method: 'GET', path, accept });
      for (const group of list.items)
        for (const version of group.versions)
          for (const r of version.resources)
            for (const s of r.shortNames ?? []) {
              const owner = `${r.resource}.${group.metadata.name ?? ''}`;
              const seen = owners.get(s) ?? [];
              if (!seen.includes(owner)) owners.set(s, [...seen, owner]);
            }
    }
    assert.ok(owners.get('deploy')?.includes('deployments.apps'), 'built-in short names are listed');
    for (const { shortName, sample } of KINDS)
      assert.equal(
        owners.get(shortName)?.length,
        1,
        `${sample}: ${shortName} names ${owners.get(shortName)?.join(', ') ?? 'nothing'}`,
      );
  });

  for (const kind of KINDS)
    test(`kubectl get ${kind.shortName} shows Replicas, Ready and Status from the status (${kind.sample})`, async () => {
      await kubectl('apply', '-n', ns, '-f', join(deploy, 'samples', kind.sample));
      await kubectl(
        'patch',
        kind.shortName,
        kind.name,
        '-n',
        ns,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: kind.status }),
      );
      const plain = table(await kubectl('get', kind.shortName, '-n', ns));
      assert.deepEqual(plain.header, kind.columns);
      assert.equal(plain.rows.length, 1);
      assert.deepEqual(plain.rows[0]?.slice(0, -1), kind.cells);
      assert.match(plain.rows[0]?.at(-1) ?? '', /^\d+s$/, 'AGE');
      const wide = table(await kubectl('get', kind.shortName, '-n', ns, '-o', 'wide'));
      assert.deepEqual(wide.header, [...kind.columns.slice(0, -1), ...kind.wide, 'AGE']);
      assert.deepEqual(wide.rows[0]?.slice(kind.columns.length - 1, -1), kind.wideCells);
    });
});
