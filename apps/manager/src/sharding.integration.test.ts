// The manager binary with --sharding against the real API server: two regulon-manager
// processes divide the namespaces' buckets through Leases beside the leader election's, each
// Cache is reconciled by the replica that owns its namespace's bucket and by no other, and
// once the owner of a bucket is killed (-9) the other replica takes the bucket over and
// reconciles what is created there.
//
// Which replica reconciled a Cache is read from the API server, not from the replicas: each
// Cache names a version the catalog lacks, so every reconcile of it records a Warning Event
// (VersionNotInCatalog) whose reportingInstance is the replica's identity.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { Cache, type CacheObject } from '@regulon/cache-controller';
import { KubeClient, Kinds, retyped, type KubeObject } from '@regulon/client';
import { Database, DatabaseBackup } from '@regulon/database-controller';
import { MyApp } from '@regulon/myapp-controller';
import { bucketOfKey, type Lease } from '@regulon/runtime';
import { eventually, start, type TestEnv } from '@regulon/testenv';

const BUCKETS = 8;
const NAMESPACES = 6;
/** Short Leases, so that a killed replica's buckets pass on within seconds. */
const LEASE_FLAGS = ['--lease-duration=3s', '--renew-deadline=2s', '--retry-period=500ms'];
const main = join(import.meta.dirname, 'main.ts');

let env: TestEnv;
let client: KubeClient;
const children: ChildProcess[] = [];

before(async () => {
  env = await start();
  await env.installCRDs([Database.crd(), DatabaseBackup.crd(), Cache.crd(), MyApp.crd()]);
  client = KubeClient.fromKubeConfig(env.kubeConfig);
});
after(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  client.close();
  await env.stop();
});

interface Replica {
  name: string;
  child: ChildProcess;
  /** Its leader-election identity, from its first log line that names one. */
  identity: () => string | undefined;
  exited: Promise<unknown>;
}

/** A regulon-manager process with --sharding; its JSON log lines are read for its identity. */
function replica(name: string, leaseNamespace: string, id: string): Replica {
  const child = spawn(
    process.execPath,
    [
      main,
      '--kubeconfig',
      env.kubeconfigPath,
      '--sharding',
      `--sharding-buckets=${BUCKETS}`,
      '--leader-elect=true',
      `--leader-election-namespace=${leaseNamespace}`,
      `--leader-election-id=${id}`,
      ...LEASE_FLAGS,
      '--metrics-bind-address=0',
      '--health-probe-bind-address=0',
      '--no-database-enabled',
      '--no-myapp-enabled',
    ],
    { env: { ...process.env, POD_NAME: name }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  let identity: string | undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      const entry = JSON.parse(line) as { identity?: string };
      if (entry.identity?.startsWith(`${name}_`)) identity ??= entry.identity;
    } catch {
      // Not a log line.
    }
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { name, child, identity: () => identity, exited };
}

const leases = () => client.resource(retyped<Lease>(Kinds.Lease));
const bucketOf = (namespace: string) => bucketOfKey(`${namespace}/x`, BUCKETS);

/** The identities that reported reconciling `name` in `namespace`, from its Events. */
async function reconciledBy(namespace: string, name: string): Promise<Set<string>> {
  const { items } = await client
    .resource<KubeObject & { regarding?: { name?: string }; reason?: string; reportingInstance?: string }>(
      Kinds.Event,
    )
    .list({ namespace });
  return new Set(
    items
      .filter((e) => e.regarding?.name === name && e.reason === 'VersionNotInCatalog')
      .map((e) => e.reportingInstance ?? ''),
  );
}

const cache = (namespace: string, name: string) =>
  client.resource<CacheObject>(Cache.type).create(
    Cache.object({
      metadata: { name, namespace },
      // Not in the catalog: each reconcile records who it was (see the header).
      spec: { engine: 'redis', version: '7.0.999', replicas: 1, memory: '64Mi', maxMemoryPercent: 75 },
    }),
  );

test('two managers with --sharding: each Cache reconciled by its bucket’s owner only; a killed owner’s bucket taken over', async (t) => {
  const leaseNamespace = await env.newNamespace('mgr-sharding-leases');
  const id = `sharding-${randomUUID().slice(0, 8)}`;
  const namespaces: string[] = [];
  for (let i = 0; i < NAMESPACES; i++) namespaces.push(await env.newNamespace('mgr-sharding'));

  const a = replica('replica-a', leaseNamespace, id);
  const b = replica('replica-b', leaseNamespace, id);
  /** Bucket → holder, from the bucket Leases. */
  const holders = async () => {
    const held = new Map<number, string>();
    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      const lease = await leases()
        .get(`${id}-shards-bucket-${bucket}`, { namespace: leaseNamespace })
        .catch(() => undefined);
      if (lease?.spec?.holderIdentity) held.set(bucket, lease.spec.holderIdentity);
    }
    return held;
  };
  const both = () => [a.identity(), b.identity()];
  await eventually(
    'both replicas joined and every bucket is held by one of them',
    async () => {
      const [ia, ib] = both();
      if (!ia || !ib) return false;
      const held = await holders();
      // Each joined: a bucket may be assigned to either, so membership is what both must show.
      const members = await leases().list({ namespace: leaseNamespace });
      const memberHolders = members.items
        .filter((l) => l.metadata?.name?.startsWith(`${id}-shards-member-`))
        .map((l) => l.spec?.holderIdentity);
      return (
        held.size === BUCKETS &&
        [...held.values()].every((h) => h === ia || h === ib) &&
        memberHolders.includes(ia) &&
        memberHolders.includes(ib)
      );
    },
    30_000,
  );
  // Settled: the assignment no longer moves (each replica holds what rendezvous gives it).
  const settled = await eventually(
    'the bucket assignment settled',
    async () => {
      const first = await holders();
      await new Promise((r) => setTimeout(r, 1000));
      const second = await holders();
      return [...first].every(([bucket, h]) => second.get(bucket) === h) ? second : undefined;
    },
    30_000,
  );

  // Created once the assignment settled: while replicas join, a bucket legitimately changes
  // hands (the first replica up holds them all at first), and a Cache created then would be
  // reconciled by each owner in turn.
  for (const namespace of namespaces) await cache(namespace, 'c1');
  // Every Cache reconciled, and only by the owner of its namespace's bucket.
  await eventually(
    'every Cache reconciled',
    async () => {
      for (const namespace of namespaces) if ((await reconciledBy(namespace, 'c1')).size === 0) return false;
      return true;
    },
    30_000,
  );
  const owners: string[] = [];
  for (const namespace of namespaces) {
    const by = await reconciledBy(namespace, 'c1');
    const owner = settled.get(bucketOf(namespace));
    owners.push(`${namespace}: bucket ${bucketOf(namespace)} ${owner} reconciled by ${[...by].join(', ')}`);
    assert.deepEqual([...by], [owner], `${namespace}'s Cache reconciled by its bucket's owner only`);
  }
  t.diagnostic(owners.join('; '));

  // Kill the owner of the first namespace's bucket: the other takes the bucket over.
  const namespace = namespaces[0]!;
  const bucket = bucketOf(namespace);
  const victim = settled.get(bucket) === a.identity() ? a : b;
  const survivor = victim === a ? b : a;
  victim.child.kill('SIGKILL');
  await victim.exited;
  const killedAt = Date.now();
  await cache(namespace, 'c2');
  await eventually(
    `${survivor.name} holds bucket ${bucket} and reconciled the Cache created there`,
    async () =>
      (await holders()).get(bucket) === survivor.identity() &&
      (await reconciledBy(namespace, 'c2')).has(survivor.identity()!),
    30_000,
  );
  t.diagnostic(
    `${survivor.name} took bucket ${bucket} over and reconciled c2 ${Date.now() - killedAt} ms after the kill`,
  );
  assert.deepEqual([...(await reconciledBy(namespace, 'c2'))], [survivor.identity()]);

  survivor.child.kill('SIGTERM');
  assert.equal(await survivor.exited, 0, 'the survivor stops gracefully');
});
